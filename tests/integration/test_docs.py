"""The docs site's sources, checked without building it (CI builds it in strict mode
with `make docs`): the navigation, the notebooks, the generated pages, the API pages'
coverage of the public names, the README's figures and the own-game guide's example.

Nothing here is skipped: what needs a tool the test extras lack (nbformat) is checked
by hand instead."""

import argparse
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _docs_module(name):
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_pages = _docs_module("gen_pages")
notebook_links = _docs_module("notebook_links")


def _config() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def _nav_paths(nav) -> list[str]:
    """Every file the nav names, depth first."""
    out = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out += _nav_paths(value) if isinstance(value, list) else [value]
    return out


NAV = _nav_paths(_config()["nav"])
NOTEBOOKS = sorted((DOCS / "tutorials").glob("*.ipynb"))


def test_every_nav_page_exists_and_every_page_is_in_the_nav():
    assert len(NAV) == len(set(NAV)), "a page is listed twice"
    missing = [p for p in NAV if not (DOCS / p).is_file()]
    assert not missing, f"nav pages without a file: {missing}"
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*")
             if p.suffix in (".md", ".ipynb")}
    assert pages == set(NAV), f"pages outside the nav: {sorted(pages - set(NAV))}"


def test_the_nav_has_the_guides_tutorials_and_reference():
    for page in ("index.md", "getting-started.md", "own-game.md", "solvers.md", "sweeps.md",
                 "big-games.md", "abstraction.md", "alphazero.md", "cli.md", "games.md",
                 "correctness.md", "performance.md", "architecture.md", "api/index.md"):
        assert page in NAV
    assert {f"tutorials/{p.name}" for p in NOTEBOOKS} <= set(NAV)
    assert len(NOTEBOOKS) == 9


def test_notebooks_are_valid_and_hold_no_outputs():
    """Outputs come from the docs build, which executes every notebook."""
    for path in NOTEBOOKS:
        book = json.loads(path.read_text())
        assert book["nbformat"] == 4, path
        assert book["metadata"]["kernelspec"]["name"] == "python3", path
        assert book["cells"], path
        for cell in book["cells"]:
            assert cell["cell_type"] in ("markdown", "code"), path
            assert isinstance(cell["source"], (str, list)) and "".join(cell["source"]).strip()
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, \
                    f"{path.name}: a code cell holds outputs; clear them before committing"
        try:
            import nbformat  # the docs extra; the test extras lack it
        except ImportError:
            continue
        nbformat.validate(nbformat.read(path, as_version=4))


def _slug(heading: str) -> str:
    """A heading's anchor as MkDocs' toc extension makes it (Python-Markdown's slugify)."""
    words = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", words)


def test_notebook_links_name_pages_and_headings_that_exist():
    """The build resolves a notebook's links (docs/notebook_links.py) but cannot see
    their anchors: both are checked here against the pages' sources."""
    links = 0
    for path in NOTEBOOKS:
        text = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                       if c["cell_type"] == "markdown")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            links += 1
            page, _, anchor = target.partition("#")
            source = (path.parent / page).resolve()
            assert source.is_file(), f"{path.name}: {target} names no page"
            if anchor and source.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", source.read_text(), re.M)
                assert anchor in {_slug(h) for h in headings}, \
                    f"{path.name}: {target} names no heading of {page}"
    assert links >= 20


def test_notebook_links_point_at_the_built_pages():
    built = {"solvers.md": "../solvers.html", "tutorials/own_game.ipynb": "own_game.html"}
    html = ('<a href="../solvers.md#monte-carlo-cfr">a</a> <a href="own_game.ipynb">b</a> '
            '<a href="https://example.org/x.md">c</a> <a href="#top">d</a>')
    out = notebook_links.resolve(html, "tutorials/x.ipynb", built.get)
    assert out == ('<a href="../solvers.html#monte-carlo-cfr">a</a> <a href="own_game.html">'
                   'b</a> <a href="https://example.org/x.md">c</a> <a href="#top">d</a>')
    with pytest.raises(ValueError, match="'../gone.md' names no page"):
        notebook_links.resolve('<a href="../gone.md">e</a>', "tutorials/x.ipynb", built.get)


def test_the_build_executes_notebooks_and_fails_on_errors():
    plugins = _config()["plugins"]
    jupyter = next(p["mkdocs-jupyter"] for p in plugins
                   if isinstance(p, dict) and "mkdocs-jupyter" in p)
    assert jupyter["execute"] is True and jupyter["allow_errors"] is False
    assert jupyter["include"] == ["*.ipynb"]  # not the generator scripts beside the pages
    assert _config()["strict"] is True


def _parser():
    from jaxsolve.cli import build_parser

    return build_parser()


def _all_subcommands(parser, prefix=()):
    """An independent walk: each parser's subcommands, read from its usage's choices."""
    found = []
    for group in parser._subparsers._group_actions if parser._subparsers else ():
        for name, sub in group.choices.items():
            found.append(prefix + (name,))
            found += _all_subcommands(sub, prefix + (name,))
    return found


def test_cli_page_covers_every_subcommand_with_its_help():
    parser = _parser()
    page = gen_pages.cli(parser)
    commands = _all_subcommands(parser)
    assert {("solve",), ("games",), ("check",), ("sweep",)} <= set(commands)
    assert [w for w, _ in gen_pages.subcommands(parser)] == commands
    headings = re.findall(r"^## (jaxsolve.*)$", page, re.M)
    assert headings == ["jaxsolve"] + [f"jaxsolve {' '.join(w)}" for w in commands]
    with gen_pages._columns(gen_pages.HELP_WIDTH):
        for words, sub in gen_pages.subcommands(parser):
            assert sub.format_help().rstrip() in page, words
            for action in sub._actions:  # every option is on the page
                for flag in action.option_strings:
                    assert flag in page, (words, flag)


def test_cli_page_includes_pursuit_when_alphazero_is_installed():
    pytest.importorskip("flax")
    commands = _all_subcommands(_parser())
    assert {("pursuit",), ("pursuit", "solve"), ("pursuit", "train"),
            ("pursuit", "eval")} <= set(commands)


def test_cli_generator_walks_nested_subparsers():
    parser = argparse.ArgumentParser(prog="tool")
    sub = parser.add_subparsers()
    outer = sub.add_parser("outer", help="outer help")
    inner = outer.add_subparsers()
    inner.add_parser("inner").add_argument("--flag")
    sub.add_parser("other")
    page = gen_pages.cli(parser)
    assert [w for w, _ in gen_pages.subcommands(parser)] == [("outer",), ("outer", "inner"),
                                                              ("other",)]
    assert "## jaxsolve outer inner" in page and "--flag" in page


def _table_rows(markdown: str) -> list[list[str]]:
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows]


@pytest.mark.parametrize("name,file,rows", [
    ("bench_peers", "bench_peers.json", lambda d: len(d["games"])),
    ("bench_peers_eval", "bench_peers.json", lambda d: len(d["games"])),
    ("bench_peers_bounds", "bench_peers.json",
     lambda d: sum(g["histories"] >= 100_000 for g in d["games"])),
    ("bench_cfr", "bench_cfr.json", lambda d: len(d["games"])),
    ("bench_mcts", "bench_mcts.json", lambda d: 2),
    ("bench_rules", "bench_rules.json", lambda d: 2 * len(d["games"])),
    ("cfr_variants", "cfr_variants.json", lambda d: len(d["games"]["kuhn_poker"]["solvers"])),
    ("convergence", "convergence.json", lambda d: len(d["games"])),
    ("abstraction", "abstraction.json", lambda d: len(d["rows"])),
    ("pursuit", "pursuit/summary.json", lambda d: len(d["scaling"]) + len(d["simulations"])),
])
def test_performance_tables_render_from_the_committed_results(name, file, rows):
    data = json.loads((gen_pages.RESULTS / file).read_text())
    text = gen_pages.GENERATORS[name]()
    body = [r for r in _table_rows(text) if r[0] not in ("game", "search", "board", "solver",
                                                         "simulations", "abstraction")]
    assert len(body) == rows(data), text
    assert all(cell for row in body for cell in row)
    if name not in ("bench_peers_eval", "bench_peers_bounds"):  # under bench_peers' heading
        assert f"results/{file}" in text and "`python experiments/" in text
    # A number of the file appears on the page, rounded as the tables round.
    if name == "bench_peers":
        ours = data["games"][1]["solvers"]["jaxsolve"]["ms_per_iter"]
        assert gen_pages._num(ours) in text
        assert data["date"] in text and data["machine"]["cpu"] in text


def test_mccfr_tables_render_from_the_committed_results():
    data = json.loads((gen_pages.RESULTS / "bench_mccfr.json").read_text())
    text = gen_pages.bench_mccfr(data)
    body = [r for r in _table_rows(text) if r[0] != "game"]
    expected = sum(len(g["throughput"]) + len(g["equal_time"]) for g in data["games"].values())
    assert len(body) == expected


def test_performance_generator_on_a_results_file_of_its_own():
    """The table follows the JSON: a made-up file renders its own numbers."""
    data = {"date": "2030-01-02 03:04:05 UTC", "command": "bench_peers.py --publish",
            "machine": {"cpu": "Test CPU", "cores": 4, "python": "3.13", "jax": "9.9"},
            "versions": {"noregret": "1"},
            "games": [{"game": "Toy", "histories": 1234, "solvers": {
                "jaxsolve": {"ms_per_iter": 0.5, "eval_ms": 0.1},
                "noregret": {"ms_per_iter": 2.0, "eval_ms": 0.3}}}]}
    text = gen_pages.bench_peers(data)
    assert _table_rows(text)[1:] == [["Toy", "1,234", "0.5", "2", "—", "—", "4.0×"]]
    assert "2030-01-02 03:04:05 UTC" in text and "Test CPU, 4 cores" in text
    assert "`python experiments/bench_peers.py --publish`" in text
    assert gen_pages.readme_rows(data) == ["| Toy | 1,234 | 0.5 | 2 | — | — |"]


def test_every_generated_part_on_the_pages_exists():
    for page in DOCS.rglob("*.md"):
        for name in gen_pages.MARKER.findall(page.read_text()):
            assert name in gen_pages.GENERATORS, f"{page.name}: unknown part {name!r}"
    with pytest.raises(KeyError, match="unknown generated part"):
        gen_pages.fill("<!-- generated: no_such_part -->")


def test_the_changelog_page_is_the_changelog_file():
    """The site's changelog page is CHANGELOG.md itself, filled in at build time, and
    the README and the navigation link it."""
    page = gen_pages.fill((DOCS / "changelog.md").read_text())
    assert (ROOT / "CHANGELOG.md").read_text() in page
    assert "changelog.md" in NAV and "faq.md" in NAV
    assert "](CHANGELOG.md)" in (ROOT / "README.md").read_text()


def test_alphazero_page_spec_table_is_the_environments():
    """The pursuit environment's spec table on the AlphaZero page states what the
    environment does: its observation sizes, legal moves, rewards and game lengths,
    measured by playing random games here."""
    import jax

    from jaxsolve.games import pursuit_evasion as pe

    page = (DOCS / "alphazero.md").read_text()

    def played(params):
        state, key = pe.init(params, jax.random.PRNGKey(0)), jax.random.PRNGKey(1)
        first, steps, legal = state, 0, []
        while not bool(state.terminated):
            legal.append(int(state.legal_action_mask.sum()))
            key, sub = jax.random.split(key)
            state = pe.step(params, state, pe.random_action(sub, state))
            steps += 1
        return first, state, steps, legal

    first, last, steps, legal = played(pe.Params())
    assert first.observation.shape == (35,) and first.observation.dtype == np.float32
    assert f"`[{first.observation.shape[0]}]` float32" in page
    assert first.legal_action_mask.shape == (9,) and legal[:2] == [9, 8]
    assert last.rewards.shape == (2,) and sorted(last.rewards.tolist()) == [-1.0, 1.0]
    assert not bool(last.legal_action_mask.any())
    assert f"20 defender moves ({steps} steps)" in page
    sizes = []
    for g in (5, 7):
        first, last, steps, legal = played(pe.goal_variant(g))
        assert legal[:2] == [9, 3] and steps == 2 * g + 2
        assert first.observation.shape == (g * g + 12,)
        sizes.append(f"{first.observation.shape[0]} on {g}×{g}")
    assert f"`[g² + 12]` float32 ({', '.join(sizes)})" in page


def _api_text() -> str:
    return "\n".join(p.read_text() for p in sorted((DOCS / "api").glob("*.md")))


def test_api_pages_document_every_public_name():
    import jaxsolve

    text = _api_text()
    directives = re.findall(r"^::: ([\w.]+)", text, re.M)
    members = " ".join(re.findall(r"members: \[([^\]]*)\]", text))
    for name in jaxsolve.__all__:
        assert (f"jaxsolve.{name}" in directives
                or re.search(rf"\b{name}\b", members)), f"jaxsolve.{name} is on no API page"
    for directive in directives:  # every path the pages name resolves
        module, _, attr = directive.rpartition(".")
        try:
            importlib.import_module(directive)
        except ImportError:
            assert hasattr(importlib.import_module(module), attr), directive


def test_readme_is_short_and_its_figures_are_the_committed_ones():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    for row in gen_pages.readme_rows():
        assert row in text, f"README's headline table lacks {row}"
    assert "make bench-peers" in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link


@pytest.mark.parametrize("path", ["README.md", *sorted(
    p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md"))])
def test_pages_speak_of_the_product_not_its_history(path):
    text = (ROOT / path).read_text()
    for words in ("seed 00", "seed game", "the seed's", "session ", "target met",
                  "targets met", "no GPU was lent", 'infostate="seed"', "variant seed",
                  "seed_costs", "seed_games", "test_seed_", "gpu_session"):
        assert words not in text.lower(), f"{path}: {words!r}"


def _own_game_page() -> str:
    return (DOCS / "own-game.md").read_text()


def test_own_game_example_checks_and_solves_as_the_page_says(capsys):
    """The own-game guide's game compiles and passes check_game with the report the
    page prints, line for line; CFR+ reaches the equilibrium found by hand."""
    import jaxsolve

    page = _own_game_page()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    game_block = next(b for b in blocks if "class OneCardBluff" in b)
    check_block = next(b for b in blocks if "check_game" in b)
    scope = {}
    exec(compile(game_block, "own-game.md", "exec"), scope)
    exec(compile(check_block, "own-game.md", "exec"), scope)
    printed = capsys.readouterr().out.strip()
    shown = re.search(r"```text\n(check_game:.*?)```", page, re.S).group(1).strip()
    assert printed == shown
    assert scope["report"].ok

    tree = jaxsolve.compile_game(scope["OneCardBluff"]())
    solver = jaxsolve.cfr_plus()
    policy = jaxsolve.average_policy(tree, jaxsolve.run(solver, tree, solver.init(tree), 2000))
    table = jaxsolve.table(tree, policy)
    assert table["p0 card=L actions="]["Bet"] == pytest.approx(1 / 3, abs=2e-3)
    assert table["p1 card=? actions=1"]["Call"] == pytest.approx(2 / 3, abs=2e-3)
    assert float(jaxsolve.policy_value(tree, policy)[0]) == pytest.approx(1 / 3, abs=1e-4)
    assert np.isclose(float(jaxsolve.exploitability(tree, policy)), 0, atol=1e-3)


def test_own_game_page_lists_every_protocol_method():
    page = _own_game_page()
    for method in ("num_players", "new_initial_state", "num_distinct_actions", "utility_sum",
                   "min_utility", "max_utility", "current_player", "is_terminal",
                   "legal_actions", "chance_outcomes", "child", "apply_action", "clone",
                   "returns", "information_state_string", "action_to_string",
                   "information_state_tensor"):
        assert f"`{method}(" in page, method


def test_own_game_notebook_uses_the_pages_game():
    """The tutorial and the guide show one game: the notebook's game cell is the
    page's game block."""
    page_block = next(b for b in re.findall(r"```python\n(.*?)```", _own_game_page(), re.S)
                      if "class OneCardBluff" in b)
    book = json.loads((DOCS / "tutorials" / "own_game.ipynb").read_text())
    cells = ["".join(c["source"]) for c in book["cells"] if c["cell_type"] == "code"]
    assert page_block.strip() in [c.strip() for c in cells]


def test_every_test_file_the_docs_name_exists():
    """The correctness page says which test checks what: each path it (or any page, or
    the README) names must be a file of the suite, so moving a test cannot leave a
    page pointing nowhere."""
    named = {(page.relative_to(ROOT), path)
             for page in [ROOT / "README.md", *DOCS.rglob("*.md")]
             for path in re.findall(r"tests/[\w/]+\.py", page.read_text())}
    assert any(page.name == "correctness.md" for page, _ in named)
    missing = sorted(f"{page}: {path}" for page, path in named if not (ROOT / path).is_file())
    assert not missing, missing
