# optlang — `make demo` sets up and solves a shipped model end to end; `make test` sets up and runs the tests.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench-quick clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# the CPU wheel of torch first (a plain `pip install torch` pulls a multi-GB CUDA build)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test,anchors,dask]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/optlang check models/maxcut_torus.opt
	$(VENV)/bin/optlang plan models/maxcut_torus.opt
	$(VENV)/bin/optlang solve models/maxcut_torus.opt -o demo_result.json
	$(VENV)/bin/optlang solve models/maxcut_g1.opt

test: setup
	$(PY) -m pytest -p no:cacheprovider

lint: setup
	$(VENV)/bin/ruff check optlang tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache demo_result.json
