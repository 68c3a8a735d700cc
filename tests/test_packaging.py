"""The built-in games install as the subpackage `jaxsolve.games` (the repository's
top-level games/ folder, mapped by pyproject.toml's package-dir), never as a top-level
`games` module, and `import jaxsolve` stays light."""

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEVEN = ["conjunction", "kuhn_poker", "leduc_poker", "maneuver_detection", "mini_maneuver",
         "orbital_pursuit_evasion", "spoof"]


def _python(code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_the_registry_lists_and_loads_the_seven_games():
    import jaxsolve.games
    from jaxsolve.games.kuhn_poker import KuhnPoker

    assert jaxsolve.games.names() == SEVEN
    game = jaxsolve.games.load("kuhn_poker")
    assert isinstance(game, KuhnPoker) and game.num_players() == 2
    assert type(game).__module__ == "jaxsolve.games.kuhn_poker"
    for name in SEVEN:  # every registered module path is the subpackage's
        assert jaxsolve.games.game_class(name).__module__.startswith("jaxsolve.games.")


def test_the_games_are_an_attribute_of_jaxsolve_loaded_on_first_use():
    out = _python("import sys, jaxsolve\n"
                  "assert 'jaxsolve.games' not in sys.modules\n"
                  "print(jaxsolve.games.names())\n"
                  "from jaxsolve import games\n"
                  "assert games is sys.modules['jaxsolve.games'] is jaxsolve.games\n").stdout
    assert out.strip() == repr(SEVEN)


def test_no_top_level_games_module_is_imported():
    _python("import jaxsolve, jaxsolve.games, sys\n"
            "jaxsolve.games.load('kuhn_poker'), jaxsolve.games.load('spoof')\n"
            "from jaxsolve.games import pursuit_evasion\n"
            "assert 'games' not in sys.modules\n"
            "assert not [m for m in sys.modules if m.startswith('games.')]\n")


def test_import_jaxsolve_is_light():
    """No game module and none of the heavy optional imports (the AlphaZero half's
    Flax and optax, plotting's matplotlib) on `import jaxsolve`."""
    out = _python("import sys, jaxsolve\n"
                  "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                  "('flax', 'optax', 'matplotlib', 'games') or m.startswith('jaxsolve.games')))\n")
    assert out.stdout.strip() == "[]"


def test_pyproject_installs_games_only_as_jaxsolve_games():
    setuptools = _pyproject()["tool"]["setuptools"]
    packages = setuptools["packages"]
    if isinstance(packages, dict):  # packages.find: its include patterns
        include = packages.get("find", {}).get("include", ["*"])
        assert not any(fnmatch("games", p) or fnmatch("games.x", p) for p in include)
    else:
        assert all(p == "jaxsolve" or p.startswith("jaxsolve.") for p in packages), packages
        # every package under jaxsolve/ is listed (a list does not find new ones)
        on_disk = {".".join(d.parent.relative_to(ROOT).parts)
                   for d in (ROOT / "jaxsolve").rglob("__init__.py")}
        assert on_disk | {"jaxsolve.games"} == set(packages)
    assert setuptools["package-dir"] == {"jaxsolve.games": "games"}
    assert (ROOT / "games" / "__init__.py").is_file()
    assert not (ROOT / "jaxsolve" / "games").exists()  # one source of the games


def test_pyproject_declares_the_license_file():
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("Copyright 2026 The jaxsolve authors\n")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_version_has_one_definition_which_the_changelog_describes():
    """pyproject.toml said 0.1.0 while CHANGELOG.md described 0.2.0: the package's
    version is read from `jaxsolve.__version__`, and the changelog's newest entry is
    that version."""
    import jaxsolve  # noqa: PLC0415

    project = _pyproject()["project"]
    assert "version" not in project and "version" in project["dynamic"]
    attr = _pyproject()["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "jaxsolve.__version__"
    newest = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert newest[1] == jaxsolve.__version__
    try:
        installed = importlib.metadata.version("jaxsolve")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("jaxsolve is not installed")
    assert installed == jaxsolve.__version__


def test_the_citation_names_this_version_and_license():
    """CITATION.cff (Citation File Format 1.2.0, which GitHub's "Cite this repository"
    reads) carries the package's version and license, and the authors the LICENSE
    names; its references are the papers of the solvers' docstrings."""
    import yaml  # noqa: PLC0415

    import jaxsolve  # noqa: PLC0415

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["title"] == "jaxsolve" and cff["version"] == jaxsolve.__version__
    assert cff["license"] == _pyproject()["project"]["license"]
    assert cff["authors"] == [{"name": "The jaxsolve authors"}]
    assert "date-released" not in cff  # the version is unreleased (CHANGELOG.md)
    years = {ref["authors"][0]["family-names"]: ref["year"] for ref in cff["references"]}
    for name, year in (("Zinkevich", 2007), ("Tammelin", 2014), ("Brown", 2019),
                       ("Farina", 2021), ("Xu", 2024), ("Meng", 2026)):
        assert years[name] == year
        assert f"{name}" in jaxsolve.solvers.__doc__ and f"{year}" in jaxsolve.solvers.__doc__


def test_installed_packaging_maps_the_games(tmp_path):
    """With jaxsolve installed (`pip install -e .` or `pip install .`), the packaging
    finds `jaxsolve.games`. Run from a folder outside the checkout."""
    try:
        importlib.metadata.distribution("jaxsolve")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("jaxsolve is not installed (imported from the checkout)")
    out = _python("import os, jaxsolve\n"
                  "import jaxsolve.games\n"
                  "print(os.path.dirname(jaxsolve.__file__))\n"
                  "print(os.path.dirname(jaxsolve.games.__file__))\n"
                  "print(jaxsolve.games.load('kuhn_poker').num_players())\n", cwd=tmp_path)
    package, games, players = out.stdout.split()
    # the installed copy (package/games) or, editable, the checkout's top-level games/
    assert Path(games) in (Path(package) / "games", Path(package).parent / "games")
    assert players == "2"
