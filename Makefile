PYTHON ?= python3
PIP ?= $(PYTHON) -m pip

.PHONY: install install-test demo test test-all lint bench

install:
	$(PIP) install -q -e .

install-test:
	$(PIP) install -q -e ".[test,bench]"

demo: install
	$(PYTHON) -m latentzoo demo --out report

test: install-test
	$(PYTHON) -m pytest -q -m "not slow" --durations=15

test-all: install-test
	$(PYTHON) -m pytest -q

lint:
	$(PYTHON) -m ruff check . && $(PYTHON) -m ruff format --check .

bench: install-test
	$(PYTHON) benchmarks/bench_aspect.py
