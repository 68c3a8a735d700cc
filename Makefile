# The two commands of the README. Each sets itself up: a virtual environment in
# .venv with jaxsolve installed editable, rebuilt when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
STAMP := $(VENV)/.installed

.PHONY: demo test docs docs-check bench bench-peers bench-time-to-target bench-all

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

# The docs site, built into site/ (open site/index.html): the guides, the API
# reference from the docstrings and the tutorials executed as notebooks, in strict
# mode (a broken link, a missing reference or a notebook that fails stops the build).
# The `docs` extra goes into the same .venv, after the test extras, with its own stamp.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	$(VENV)/bin/python -m pip install --quiet -e ".[test,docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Opens the built site in headless Chromium (Debian's `chromium`) and checks that four
# pages render with every asset they load; skips, saying so, without Chromium.
docs-check: docs
	$(VENV)/bin/python docs/check_site.py

# Speed against OpenSpiel (C++ CFR+ and JaxCFR), written to results/local/bench_cfr.json
# (experiments/bench_cfr.py --publish writes the tracked results/bench_cfr.json).
bench: $(STAMP)
	$(VENV)/bin/python experiments/bench_cfr.py

# CFR+ against NoRegret, LiteEFG and OpenSpiel's C++ in one process (~15 min on 2
# cores), written to results/local/bench_peers.json. NoRegret needs Python >= 3.12:
# this builds its own environment, .venv-bench, with the `bench` extra.
# The first interpreter found that runs and is 3.12 or newer (a pyenv shim of a
# version not selected does not run).
PYTHON312 ?= $(shell for p in python3.13 python3.12 $$(ls -d $$HOME/.pyenv/versions/3.1[2-9]*/bin/python3 2>/dev/null); do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo $$p; break; }; done)
BENCH_STAMP := .venv-bench/.installed

$(BENCH_STAMP): pyproject.toml
	@test -n "$(PYTHON312)" || { echo "bench-peers needs Python 3.12 or newer (set PYTHON312=...)"; exit 2; }
	$(PYTHON312) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet --upgrade pip
	.venv-bench/bin/python -m pip install --quiet -e ".[test,bench]"
	.venv-bench/bin/python -m pip install --quiet --no-deps "noregret>=0.0.0.dev17" "liteefg>=1.0"
	touch $(BENCH_STAMP)

bench-peers: $(BENCH_STAMP)
	.venv-bench/bin/python experiments/bench_peers.py

# Wall time to an exploitability of 1e-3 and 1e-4 of the payoff range: every jaxsolve
# variant against NoRegret's, LiteEFG's and OpenSpiel's solvers, evaluations counted
# (~50 min on 2 cores), written to results/local/time_to_target.json and its .png;
# bench-all runs it with --publish.
bench-time-to-target: $(BENCH_STAMP)
	.venv-bench/bin/python experiments/bench_time_to_target.py

# Every experiment whose results file the docs read, rerun one after another in
# .venv-bench (the environment with the peers) and written to the tracked files under
# results/ (`--publish`; abstraction, convergence, conjunction and spoof_rounds write
# there by default). The next `make docs` then shows the new figures. After each
# command, what it measures and its minutes on 2 CPU cores: the performance page's
# "Rerunning" table is generated from these lines, and a test checks that the total
# printed first is their sum. `make -n bench-all` lists the commands; `make -k
# bench-all` goes on past a failing one.
BENCH_PY := .venv-bench/bin/python

bench-all: $(BENCH_STAMP)
	@echo "bench-all: 15 experiments, about 141 minutes on 2 CPU cores"
	$(BENCH_PY) experiments/bench_peers.py --publish  # CFR+ against NoRegret, LiteEFG and OpenSpiel: 15 min
	$(BENCH_PY) experiments/bench_time_to_target.py --publish  # time to a target exploitability, jaxsolve's variants against the peers': 50 min
	$(BENCH_PY) experiments/bench_cfr.py --publish  # CFR+ against OpenSpiel's C++ and JaxCFR: 7 min
	$(BENCH_PY) experiments/bench_mccfr.py --publish  # MCCFR against OpenSpiel's C++: 8 min
	$(BENCH_PY) experiments/bench_mcts.py --publish  # MCTS against mctx: 2 min
	$(BENCH_PY) experiments/bench_malloc.py --publish  # jaxsolve's malloc settings against glibc's defaults: 3 min
	$(BENCH_PY) experiments/bench_rules.py --publish  # a rule of one's own against the built-in: 5 min
	$(BENCH_PY) experiments/convergence.py  # the solvers' exploitability against time: 10 min
	$(BENCH_PY) experiments/cfr_variants.py --publish  # the CFR family after 100 and 1000 iterations: 2 min
	$(BENCH_PY) experiments/variant_sweep.py --publish  # PDCFR+'s and DCFR's hyperparameter grids: 20 min
	$(BENCH_PY) experiments/abstraction.py  # Leduc on coarsened infosets: 1 min
	$(BENCH_PY) experiments/resolving.py --publish  # every public state of a depth re-solved by each gadget: 10 min
	$(BENCH_PY) experiments/pursuit_alphazero.py --publish  # AlphaZero on pursuit-evasion: 6 min
	$(BENCH_PY) experiments/conjunction.py  # the conjunction game and its cost-table sweep: 1 min
	$(BENCH_PY) experiments/spoof_rounds.py  # Spoof's value by number of rounds: 1 min
