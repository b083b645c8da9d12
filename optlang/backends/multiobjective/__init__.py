"""Multi-objective min (f₁, …, f_m): the research method `paretom3` beside the `weighted-sum` baseline, with the
front metrics (hypervolume, IGD, dominance) in `metrics`."""
