# The two commands of the README. Each sets itself up: a virtual environment in
# .venv with jaxsolve installed editable, rebuilt when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.installed

.PHONY: demo test bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

# Solve Kuhn poker with CFR+: strategy table, its value, exploitability.
demo: $(STAMP)
	$(VENV)/bin/jaxsolve solve kuhn_poker --algo cfr+ --iters 1000

# The test suite (what CI runs), one worker per core; the tests marked slow are
# skipped (faster tests cover their behaviour). Each test file stays on
# one worker (--dist loadfile), so the compiled functions a file shares are
# compiled once.
test: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow" -n auto --dist loadfile

# Speed against OpenSpiel (C++ CFR+ and JaxCFR), written to results/local/bench_cfr.json
# (experiments/bench_cfr.py --publish writes the tracked results/bench_cfr.json).
bench: $(STAMP)
	$(VENV)/bin/python experiments/bench_cfr.py
