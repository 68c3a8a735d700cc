"""Every measured figure on the docs pages comes from a committed results file.

Two checks, read from the sources without building the site and without JAX:

* every inline figure a page writes, `{{ figure: NAME }}`, names an accessor of
  docs/gen_pages.py that renders from the committed `results/*.json`;
* the prose of README.md and of every docs page (outside code blocks, inline code and
  generated parts) holds no figure that looks measured: a time, a ratio, a size in
  bytes, a percentage, an "about N", or a value in scientific notation other than a
  bare power of ten (a round 1e-8 is a tolerance or target someone chose; a measured
  value has digits of its own). What is a fact rather than a measurement (a default,
  a property of the game or of the code) is listed in ALLOWED with the reason.
"""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md"))]

sys.path.insert(0, str(DOCS))  # as docs/hooks.py imports it
import gen_pages  # noqa: E402


MEASURED = re.compile(r"""
    (?<![\w.,])(?:
      \d[\d,.]*\s*(?:ns|µs|us|ms|s|seconds?|min|minutes?|hours?)\b   # a time
    | \d[\d.]*\s*[x×](?!\w)                                      # a ratio (not 5×5, 3x2)
    | \d[\d,.]*\s*(?:bytes?|[KMGT]i?B)\b                          # a size
    | \d[\d.]*\s*%                                                 # a share
    | (?!1e)\d+(?:\.\d+)?e[-−]\d+                                   # not a bare power of ten
    )
  | \b(?:about|around|roughly|nearly|almost)\s+(?!1e)\d[\d,.]*  # an approximate figure
""", re.X)

# (page, the text on its line that holds the figure, why it is a fact, not a measurement)
ALLOWED = [
    ("docs/big-games.md", "(8 GiB by default)", "the default of the builders' `max_bytes`"),
    ("docs/performance.md", "each 4 KiB page", "the page size of Linux on x86-64"),
    *((page, "every 10% of the iterations", "the default schedule of `--target`'s checks")
      for page in ("README.md", "docs/cli.md", "docs/sweeps.md")),
    ("docs/cli.md", "10 iterations or 10%", "the default schedule of `--target`'s checks"),
    ("docs/index.md", "| about 100 |", "how many games OpenSpiel's documentation lists"),
    ("docs/index.md", "| about 20 environments", "how many environments pgx's documentation lists"),
]

def _prose(text: str):
    """(line number, line) of the prose: code blocks, inline code, generated markers,
    inline figures and link targets blanked out."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "``", line)
        line = re.sub(r"<!--.*?-->", "", line)
        line = gen_pages.FIGURE.sub("FIGURE", line)
        line = re.sub(r"\]\([^)]*\)", "]()", line)
        yield number, line


def _allowed(path: str, line: str, match: re.Match) -> str | None:
    for page, words, _ in ALLOWED:
        if page != path:
            continue
        for at in (m.start() for m in re.finditer(re.escape(words), line)):
            if at <= match.start() and match.end() <= at + len(words):
                return words
    return None


def measured_figures(path: str, text: str) -> tuple[list[str], set[str]]:
    """The figures of `text` that look measured and are not allowed, as
    "path:line: figure in «line»", and the ALLOWED texts that excused one."""
    found, used = [], set()
    for number, line in _prose(text):
        for match in MEASURED.finditer(line):
            words = _allowed(path, line, match)
            if words:
                used.add(words)
            else:
                found.append(f"{path}:{number}: {match.group(0)!r} in «{line.strip()}»")
    return found, used


@pytest.mark.parametrize("path", PAGES)
def test_prose_holds_no_measured_figure_typed_by_hand(path):
    found, _ = measured_figures(path, (ROOT / path).read_text())
    assert not found, ("figures that look measured, typed by hand; write them as "
                       "{{ figure: NAME }} (docs/gen_pages.py) or say why they are facts "
                       "in ALLOWED:\n" + "\n".join(found))


def test_every_allowed_figure_is_still_on_its_page():
    for page, words, reason in ALLOWED:
        assert reason
        assert words in (ROOT / page).read_text(), f"{page} no longer holds {words!r}"


@pytest.mark.parametrize("line", [
    "lean trees of 13–16 bytes a history",
    "after 20 s on Leduc, CFR+ is at 3e-7 and external sampling at 4e-3",
    "| Leduc poker | 0.0792 (1.00x) | 0.0756 (0.95x) |",
    "between about 1.7× and 2.4× across runs",
    "`make test` about 15 minutes",
    "padding (85% of an array)",
    "print(exploitability)  # about 2.4e-4",
])
def test_the_scan_finds_hand_typed_figures(line):
    found, _ = measured_figures("page.md", line)
    assert found, line


@pytest.mark.parametrize("line", [
    "Kuhn poker's value is −1/18; Leduc's −0.0856064",
    "a 5×5 grid, a 3×128 MLP, Battleship 3x2",
    "tolerance 1e-8, checked every 10 iterations",
    "`--target 1e-3 --iters 100000` and `sleep 2s`",
    "```python\nx = 0.5  # 12 ms\n```",
    "bytes per history: {{ figure: bench_peers.bytes_per_history }}",
])
def test_the_scan_passes_facts_code_and_inline_figures(line):
    found, _ = measured_figures("page.md", line)
    assert not found, found


# ---------------------------------------------------------------- inline figures
def _figures_on_pages() -> list[tuple[str, str]]:
    return [(path, name) for path in PAGES
            for name in gen_pages.FIGURE.findall((ROOT / path).read_text())]


def test_every_inline_figure_renders_from_the_committed_results():
    used = _figures_on_pages()
    assert used, "no page writes an inline figure"
    for path, name in used:
        assert name in gen_pages.FIGURES, f"{path}: unknown figure {name!r}"
        text = gen_pages.figure(name)
        assert text and text.strip() == text and "{" not in text, (path, name, text)
    unused = set(gen_pages.FIGURES) - {name for _, name in used}
    assert not unused, f"figures no page writes: {sorted(unused)}"


def test_every_inline_figure_is_replaced_on_its_page():
    for path in PAGES[1:]:
        text = (ROOT / path).read_text()
        if gen_pages.FIGURE.search(text):
            assert gen_pages.FIGURE_START not in gen_pages.fill(text), path


def test_the_readme_writes_no_inline_figure():
    """MkDocs does not build the README, so a figure there would stay a placeholder."""
    assert gen_pages.FIGURE_START not in (ROOT / "README.md").read_text()


def test_an_unknown_or_malformed_figure_fails_the_build():
    with pytest.raises(KeyError, match="unknown figure"):
        gen_pages.fill("costs {{ figure: bench_peers.no_such_figure }} a history")
    with pytest.raises(ValueError, match="malformed"):
        gen_pages.fill("costs {{ figure bench_peers }} a history")
    with pytest.raises(KeyError):  # a key the results file lacks
        gen_pages.figure("bench_mcts.model_calls", {"batch": 256})


def test_figures_follow_the_results_file():
    """A figure is computed from the file: made-up files render their own numbers."""
    peers = {"games": [
        {"game": "Small", "histories": 10, "solvers": {"jaxsolve": {"tree_bytes": 1000}}},
        {"game": "A", "histories": 200_000, "solvers": {"jaxsolve": {"tree_bytes": 4_800_000}}},
        {"game": "B", "histories": 10**6, "solvers": {"jaxsolve": {"tree_bytes": 33_400_000}}},
    ]}
    # 4.8e6 / 2e5 = 24 and 3.34e7 / 1e6 = 33.4; the small game's 100 is left out.
    assert gen_pages.figure("bench_peers.bytes_per_history", peers) == "24–33"
    for game, (ours, theirs) in zip(peers["games"], [(0.5, 0.5000001), (0.2, 0.21), (1, 1.5)]):
        game["solvers"]["jaxsolve"]["check_exploitability"] = ours
        game["solvers"]["noregret"] = {"check_exploitability": theirs}
    assert gen_pages.figure("bench_peers.noregret_same", peers) == "Small"
    assert gen_pages.figure("bench_peers.noregret_apart", peers) == "50% of ours on A and B"
    for game in peers["games"]:  # all agree: the sentence about those that part is wrong
        game["solvers"]["noregret"]["check_exploitability"] = (
            game["solvers"]["jaxsolve"]["check_exploitability"])
    with pytest.raises(ValueError, match="reword"):
        gen_pages.figure("bench_peers.noregret_apart", peers)
    mcts = {"sims": 32, "ratio_gumbel": {"per_round": [2.31, 1.74, 2.0]}}
    assert gen_pages.figure("bench_mcts.model_calls", mcts) == "33"
    assert gen_pages.figure("bench_mcts.gumbel_ratio_rounds", mcts) == "1.7× to 2.3×"


# ---------------------------------------------------------------- make bench-all
MAKEFILE = (ROOT / "Makefile").read_text()
# A script writes results/NAME... under its own name, but for these:
WRITES = {"pursuit_alphazero": "pursuit/", "bench_time_to_target": "time_to_target"}


def _read_by_the_docs() -> set[str]:
    """The results files the generators and figures read, and the plots the pages show."""
    source = (DOCS / "gen_pages.py").read_text()
    files = set(re.findall(r'"([\w/]+\.json)"', source))
    for path in PAGES:
        files |= set(re.findall(r"\bresults/([\w/]+\.png)", (ROOT / path).read_text()))
    return files


def test_bench_all_reruns_every_experiment_the_docs_read():
    runs, _ = gen_pages.bench_all()
    scripts = [command.split()[0].removeprefix("experiments/").removesuffix(".py")
               for command, _, _ in runs]
    assert len(scripts) == len(set(scripts))
    prefixes = [WRITES.get(s, s) for s in scripts]
    read = _read_by_the_docs()
    assert {"bench_peers.json", "convergence.json", "pursuit/summary.json"} <= read
    orphans = sorted(f for f in read if not f.startswith(tuple(prefixes)))
    assert not orphans, f"results the docs read that make bench-all does not rerun: {orphans}"
    for (command, _, _), script in zip(runs, scripts):
        assert (ROOT / "experiments" / f"{script}.py").is_file(), script
        publishes = "--publish" in (ROOT / "experiments" / f"{script}.py").read_text()
        assert ("--publish" in command.split()) == publishes, command


def test_bench_all_announces_the_sum_of_its_parts():
    runs, (count, minutes) = gen_pages.bench_all()
    assert count == len(runs) and minutes == sum(m for _, _, m in runs)
    assert re.search(r"^\.PHONY:.*\bbench-all\b", MAKEFILE, re.M)


def test_the_rerunning_table_follows_the_makefile():
    makefile = ("bench-all: $(BENCH_STAMP)\n"
                '\t@echo "bench-all: 2 experiments, about 5 minutes on 2 CPU cores"\n'
                "\t$(BENCH_PY) experiments/a.py --publish  # the first: 3 min\n"
                "\t$(BENCH_PY) experiments/b.py  # the second: 2 min\n")
    assert gen_pages.bench_all(makefile) == (
        [("experiments/a.py --publish", "the first", 3), ("experiments/b.py", "the second", 2)],
        (2, 5))
    table = gen_pages.rerunning(makefile)
    assert "| `python experiments/a.py --publish` | the first | 3 min |" in table
    assert "about 5 minutes" in table
    with pytest.raises(ValueError, match="recipe"):
        gen_pages.bench_all(makefile.replace("# the second: 2 min", ""))
