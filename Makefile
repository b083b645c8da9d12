# optlang — `make demo` sets up and solves a shipped model end to end; `make test` sets up and runs the tests.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint typecheck clean

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
	@if [ -e models/G1.txt ]; then $(VENV)/bin/optlang solve models/maxcut_g1.opt; \
	 else echo "(models/G1.txt links to ../shared/data/gset/G1.txt, absent here: skipping the Gset demo)"; fi

test: setup lint typecheck
	$(PY) -m pytest -p no:cacheprovider

lint: setup
	$(VENV)/bin/ruff check optlang tests benchmarks scripts

typecheck: setup
	$(VENV)/bin/mypy optlang

clean:
	rm -rf $(VENV) .pytest_cache demo_result.json
