# tsdyn: build the book, run the tests and benchmarks.  `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements.stamp
SCALE ?= quick
# One chapter at a time: each chapter's sweeps already use every core (process pools), so a
# second chapter beside it only shares the same cores, and its reported wall time is its own.
JOBS ?= 1
# CACHE=0 runs every chapter again instead of reusing the execution cache (_build/exec-cache).
CACHE ?= 1
RUN_FLAGS = --scale $(SCALE) --jobs $(JOBS) $(if $(filter 0 no false,$(CACHE)),--no-cache)
NB ?=
ARGS ?=
HTML := _build/html

# Tests and benchmarks draw off-screen (chapters get the inline backend from
# scripts/chapters.py); numba's cache stays under _build/, out of the source tree.
export MPLBACKEND := Agg
export NUMBA_CACHE_DIR := $(CURDIR)/_build/numba-cache
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help venv book chapter stage html check-html params-doc test test-library test-chapters bench bench-smoke clean distclean

help:
	@echo "make book        create .venv if needed, run the chapters (SCALE=$(SCALE), JOBS=$(JOBS) at a time;"
	@echo "                 unchanged ones are reused from _build/exec-cache, CACHE=0 re-runs all) and build $(HTML)"
	@echo "make test        run the test suite (pytest -n auto); test-library and test-chapters split it in two"
	@echo "make chapter NB=book/01_committee.ipynb ARGS=\"-p K 6\"   run one chapter into _build/stage"
	@echo "make check-html  render every chapter page of $(HTML) in headless Chromium and check it"
	@echo "make params-doc  write '(quick: ..., paper: ...)' from params/*.yaml into every chapter parameter comment"
	@echo "make bench       run benchmarks/bench_*.py"
	@echo "make bench-smoke run every benchmark in its smoke mode (TSDYN_BENCH_SMOKE=1: tiny sizes, seconds)"
	@echo "make clean       remove _build/ (make distclean also removes .venv)"

# The stamp is newer than requirements.txt once they are installed: editing the
# requirements (or the library's metadata) reinstalls. uv installs the same pinned set as pip
# in seconds instead of minutes (parallel downloads, no bytecode compiled at install); where uv
# cannot be installed or fails, pip installs the set.
UV_VERSION := 0.13.9
venv: $(STAMP)
$(STAMP): requirements.txt lib/pyproject.toml
	@test -x $(PY) || { echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	{ $(PY) -m pip install -q uv==$(UV_VERSION) && $(VENV)/bin/uv pip install --python $(PY) -r requirements.txt; } \
	  || { echo "uv unavailable or failed: installing with pip"; $(PY) -m pip install -r requirements.txt; }
	@touch $@

# Chapters run one at a time (JOBS), a chapter unchanged since a cached run is reused
# (CACHE=0: none is); a failed chapter does not stop the others or the build, but makes
# `make book` fail at the end with the chapters' errors listed again, after the cost report.
book: $(STAMP)
	@status=0; \
	$(PY) scripts/chapters.py run $(RUN_FLAGS) || status=1; \
	$(PY) scripts/chapters.py stage || status=1; \
	rm -rf $(HTML) _build/.doctrees _build/jupyter_execute; \
	$(VENV)/bin/jupyter-book build -W --keep-going --path-output . _build/stage \
	  || { echo "jupyter-book build failed"; status=1; }; \
	if [ -s _build/chapter-costs.txt ]; then echo; cat _build/chapter-costs.txt; fi; \
	if [ -s _build/chapter-failures.txt ]; then echo; cat _build/chapter-failures.txt; fi; \
	if [ $$status -ne 0 ]; then echo "make book: FAILED"; else echo "make book: OK, open $(HTML)/index.html"; fi; \
	exit $$status

chapter: $(STAMP)
	@test -n "$(NB)" || { echo 'usage: make chapter NB=book/<chapter>.ipynb [ARGS="-p K 6"] [SCALE=quick]'; exit 2; }
	$(PY) scripts/chapters.py run $(RUN_FLAGS) $(ARGS) $(NB)

# Rebuild the HTML from what is already staged (no chapter is re-run).
html: $(STAMP)
	$(PY) scripts/chapters.py stage
	rm -rf $(HTML) _build/.doctrees _build/jupyter_execute
	$(VENV)/bin/jupyter-book build -W --keep-going --path-output . _build/stage

check-html: $(STAMP)
	$(PY) scripts/check_html.py $(HTML)

# After changing a preset or a chapter parameter (tests/test_params_doc.py checks it).
params-doc: $(STAMP)
	$(PY) scripts/chapters.py params-doc

test: $(STAMP)
	$(PY) -m pytest -n auto

# The chapter tests that read the numbers a chapter glued (marker `glued`, tests/conftest.py)
# take them, with TSDYN_EXECUTED, from chapters already run. .ci/run runs the rest of the suite
# (test-library) beside `make book` and these (test-chapters) after it; `make test` runs both.
# pytest -n auto runs one worker per core, so each worker's BLAS runs on one thread (as the
# chapters' sweep workers do, tsdyn.sweep): more would only oversubscribe the cores.
test test-library: export OPENBLAS_NUM_THREADS := 1
# --durations: the slowest tests in the log, where CI's time goes.
test-library: $(STAMP)
	$(PY) -m pytest -n auto -m "not glued" --durations=25

# One process: reading six executed notebooks takes seconds, fewer than starting workers.
test-chapters: $(STAMP)
	$(PY) -m pytest -m glued $(sort $(wildcard tests/*/test_chapter.py))

# Every benchmark runs (a failing one does not stop the others); any failure fails
# the target. bench-smoke is the same loop with TSDYN_BENCH_SMOKE=1, which each
# benchmark reads to run tiny sizes in seconds (CI runs it so that none can rot;
# timings are printed, not asserted).
BENCH_LOOP = status=0; shopt -s nullglob; \
	for f in benchmarks/bench_*.py; do \
	  echo "== $$f"; $(PY) $$f || { echo "FAILED: $$f"; status=1; }; \
	done; exit $$status

bench: $(STAMP)
	@$(BENCH_LOOP)

bench-smoke: $(STAMP)
	@export TSDYN_BENCH_SMOKE=1; $(BENCH_LOOP)

clean:
	rm -rf _build

distclean: clean
	rm -rf $(VENV) .pytest_cache
