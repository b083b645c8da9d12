# optlang — `make demo` sets up and solves a shipped model end to end; `make test` sets up, runs the tests,
# then tests a user's install (`make smoke`: the wheel, in a fresh venv without extras, on every model).
VENV ?= .venv
SMOKE_VENV ?= .smoke-venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test smoke lint typecheck clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# the CPU wheel of torch first (a plain `pip install torch` pulls a multi-GB CUDA build)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test,cvxpy,anchors,dask,train]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/optlang check models/maxcut_torus.opt
	$(VENV)/bin/optlang plan models/maxcut_torus.opt
	$(VENV)/bin/optlang solve models/maxcut_torus.opt -o demo_result.json
	$(VENV)/bin/optlang solve models/maxcut_g1.opt

test: setup lint typecheck
	$(PY) -m pytest -p no:cacheprovider
	$(MAKE) smoke

# a user's install: build the wheel, check what it holds, install it with no extras (torch's CPU wheel
# first) into a fresh venv, and run check/plan/solve on every model there (scripts/smoke_install.py)
smoke: setup
	rm -rf dist $(SMOKE_VENV)
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w dist .
	$(PY) scripts/smoke_install.py --wheel dist/optlang_dsl-*.whl
	python3 -m venv $(SMOKE_VENV)
	$(SMOKE_VENV)/bin/python -m pip install -q torch==2.13.0
	$(SMOKE_VENV)/bin/python -m pip install -q dist/optlang_dsl-*.whl
	$(SMOKE_VENV)/bin/python scripts/smoke_install.py --models models

lint: setup
	$(VENV)/bin/ruff check optlang tests benchmarks scripts

typecheck: setup
	$(VENV)/bin/mypy optlang

clean:
	rm -rf $(VENV) $(SMOKE_VENV) dist .pytest_cache demo_result.json
