"""Simple bilevel min f(x) s.t. x ∈ argmin g: the research method `sdbpg` beside the `penalty` baseline."""
