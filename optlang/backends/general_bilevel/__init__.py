"""General bilevel backends: min over x of F(x, y*(x)) with y*(x) ∈ argmin_y g(x, y), optimistic.

`hgms` (select-then-differentiate, pseudoinverse hypergradients) is the research method; `aid`,
`itd` and `kkt` are the classical baselines. Shared pieces: `levels` (the two functions on flat
tensors, counted derivatives), `krylov` (MINRES, CG, spectrally clipped Lanczos), `lower` (the
lower-level solver), `outer` (the projected upper-level loop), `checks` (float64 re-derivations).
"""
