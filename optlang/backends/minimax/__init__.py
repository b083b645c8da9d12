"""Minimax min_x max_y f(x, y): the research method `adasgda` beside the fixed-step `gda` baseline, with the
shared projections and stationarity report in `stationarity`."""
