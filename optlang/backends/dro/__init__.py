"""Distributionally robust learning: the research method `tcdro` beside its baselines `erm` and `dro-cvxpy`,
with the exact duals and regions in `common` and the torch training loop in `train`."""
