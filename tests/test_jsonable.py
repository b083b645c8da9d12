"""One JSON converter (`result.jsonable`) with one policy for every JSON output: numpy values become
Python ones and non-finite numbers the strings "nan", "inf", "-inf" (Result, sweep records,
comparison params and the JSON report alike)."""

from __future__ import annotations

import json
import math

import numpy as np

from optlang.backends.base import Status
from optlang.compare.comparison import Comparison
from optlang.report import json_report
from optlang.result import Result, jsonable
from optlang.sweep import SweepResult


def test_the_policy() -> None:
    obj = {1: np.float32(1.5), "a": np.arange(3), "n": [math.nan, -math.inf, np.float64(math.inf)], "o": object}
    out = jsonable(obj)
    assert out["1"] == 1.5 and out["a"] == [0, 1, 2] and out["n"] == ["nan", "-inf", "inf"]
    assert isinstance(out["o"], str)
    json.dumps(out, allow_nan=False)  # strict JSON


def test_sweep_records_and_comparison_params_follow_it() -> None:
    nan_run = Result(Status.DIVERGED, math.nan, {"x": np.array(2.0)}, "gd", "smooth", info={"f": np.float32(math.inf)})
    sweep = SweepResult([{"lam": 0.1}], [nan_run], "point by point: test", False)
    (record,) = json.loads(sweep.to_json())["records"]
    assert record["objective"] == "nan" and record["x"] == 2.0 and record["lam"] == 0.1  # once null, now "nan"
    c = Comparison("m", "m.opt", "smooth", "minimize", ["gd"], [nan_run], params={"w": np.array([1.0, math.nan])})
    assert c.to_dict()["params"] == {"w": [1.0, "nan"]}
    doc = json.loads(json_report.render(c))
    assert doc["params"] == {"w": [1.0, "nan"]} and doc["results"][0]["objective"] == "nan"
    assert doc["results"][0]["info"] == {"f": "inf"}
