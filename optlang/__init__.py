"""optlang: a declarative language for bilevel, minimax, Ising/Max-Cut, DRO and multi-objective problems."""
