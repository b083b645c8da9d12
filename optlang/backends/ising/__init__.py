"""Ising / Max-Cut on the spin form E(s) = sᵀJs + hᵀs: the research method `specann` beside its baselines
(`bruteforce`, `localsearch`, `neal`) and the shared kernels in `ops` (energies, flips, Gset reader)."""
