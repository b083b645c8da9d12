"""When an anytime loop ends before its time limit, one rule for every backend.

A time limit is a cap, not a budget to fill: a loop ends as soon as
  - its bound meets its incumbent (`proved`: nothing better exists), or
  - it has stagnated (`stagnated`): its best value has not improved (by more than
    rtol·max(floor, |best|)) for `patience` consecutive rounds *and* for as many rounds and as many
    seconds again as it took to reach that best. Early fast progress is never cut short, a run that
    keeps improving goes on to its limit, and a solved tiny instance stops in milliseconds.
Backends record why they stopped in `info["stop"]`: proved | stagnated | converged | time_limit |
iteration_limit | interrupted | diverged | finished (the backend's own stopping rule, e.g. its
round count without a limit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

STOP_REASONS = (
    "proved", "stagnated", "converged", "time_limit", "iteration_limit", "interrupted", "diverged", "finished"
)


@dataclass
class Stagnation:
    """Feed the best value after each round (`update`); True once the loop has stagnated."""

    patience: int = 10  # at least this many rounds without improvement (0: never stagnates)
    rtol: float = 1e-9  # an improvement must exceed rtol·max(floor, |best|)
    floor: float = 1.0  # 0 for values that tend to 0 (residuals): the test is then purely relative
    best: float = math.inf
    rounds: int = 0
    best_round: int = 0
    best_time: float = 0.0
    start: float | None = None  # `elapsed` at the first update: seconds count from the loop's start

    def update(self, value: float, elapsed: float) -> bool:
        """Record one round's best value (minimization) at `elapsed` seconds; True when stagnated.

        Times are taken relative to the first update, so time spent before the loop (loading,
        compiling, imports: the time limit's clock starts at the model's load) does not stretch
        the "as many seconds again" part of the rule."""
        if self.start is None:
            self.start = elapsed
        elapsed -= self.start
        self.rounds += 1
        if not math.isfinite(self.best) or value < self.best - self.rtol * max(self.floor, abs(self.best)):
            if value < self.best:
                self.best, self.best_round, self.best_time = value, self.rounds, elapsed
                return False
        if self.patience <= 0:
            return False
        stale = self.rounds - self.best_round
        return stale >= max(self.patience, self.best_round) and elapsed - self.best_time >= self.best_time


def stop_reason(status: str) -> str:
    """The stop reason a status implies, for backends whose loops do not record their own."""
    return {
        "optimal": "proved",
        "converged": "converged",
        "time_limit": "time_limit",
        "iteration_limit": "iteration_limit",
        "interrupted": "interrupted",
        "diverged": "diverged",
    }.get(str(status), "finished")
