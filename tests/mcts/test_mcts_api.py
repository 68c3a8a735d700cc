"""jaxsolve.mcts's public names, and its place among the layers: the search imports
neither the AlphaZero trainer, a game, Flax nor optax."""

import ast
import pathlib
import subprocess
import sys

from jaxsolve import mcts

PACKAGE = pathlib.Path(mcts.__file__).parent
FORBIDDEN = ("jaxsolve.alphazero", "games", "jaxsolve.games", "flax", "optax", "matplotlib")


def test_every_public_name_is_exported_once():
    assert not [name for name in mcts.__all__ if not hasattr(mcts, name)]
    assert len(set(mcts.__all__)) == len(mcts.__all__)


def _imported(path: pathlib.Path) -> list:
    """Every module `path` imports, with `from a import b` counted as a and a.b."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def test_the_search_imports_no_trainer_game_or_flax():
    for path in sorted(PACKAGE.glob("*.py")):
        bad = [name for name in _imported(path)
               if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)]
        assert not bad, f"{path.name} imports {bad}"
    # And at run time, in a fresh process run from this checkout.
    code = ("import sys, jaxsolve.mcts; "
            f"print([m for m in {FORBIDDEN!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=PACKAGE.parents[1])
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
