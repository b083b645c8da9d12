"""SpecAnn (spectral annealing) for Ising/Max-Cut: eigen.py (path sweep, LOBPCG), anneal.py
(colouring, batched annealed flips), backend.py (the Backend). Registry: specann:SpecAnn."""

from optlang.backends.ising.specann.backend import SpecAnn, SpecAnnOptions

__all__ = ["SpecAnn", "SpecAnnOptions"]
