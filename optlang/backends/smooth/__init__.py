"""Smooth (unconstrained or box/simplex-constrained) minimization: projected gradient descent `gd`."""
