"""What GAME names on the command line, and how it is loaded.

GAME is a built-in name (`jaxsolve.games.names()`), `openspiel:NAME`, a tree saved with
`GameTree.save` (`FILE.npz`), or `FILE.py:NAME` / `module:NAME`: a game in the user's
own code. `--param key=value` values are parsed here too, and `--max-nodes` and
`--max-depth`, the size caps of the commands that walk GAME, are defined here. Every
failure is one `CLIError` naming GAME, which the command line reports in one line; an
unknown name comes with the known names closest to it.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from jaxsolve import games
from jaxsolve.cli._base import CLIError, positive_int, silence_native
from jaxsolve.cli._run import resume_command
from jaxsolve.compile import DEFAULT_MAX_DEPTH, DEFAULT_MAX_NODES, compile_game
from jaxsolve.errors import CheckpointNotTreeError, GameError, one_line
from jaxsolve.openspiel import load_pyspiel
from jaxsolve.protocol import is_game
from jaxsolve.tree import GameTree
from jaxsolve.tree.arguments import batch_size

OPENSPIEL_PREFIX = "openspiel:"
PYTHON_GAME_HELP = ("FILE.py:NAME or module:NAME, a game in your own code (a class or "
                    "function called with the --param values, or a game object)")


def add_max_nodes(parser) -> None:
    """`--max-nodes` of the commands that compile a game to solve it (solve, sweep)."""
    parser.add_argument("--max-nodes", type=positive_int, default=DEFAULT_MAX_NODES,
                        metavar="N", help=f"refuse a game with more than N histories "
                        f"(default {DEFAULT_MAX_NODES:,}); the walk runs at ~20,000 "
                        "histories a second, so a lower N stops a too-large game sooner")


def add_max_depth(parser) -> None:
    """`--max-depth` of the commands that walk a game (solve, sweep, check)."""
    parser.add_argument("--max-depth", type=positive_int, default=DEFAULT_MAX_DEPTH,
                        metavar="N", help=f"refuse a game with a history of N actions that "
                        "has not ended, as one that may never end (default "
                        f"{DEFAULT_MAX_DEPTH:,})")


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """" (did you mean 'kuhn_poker'?)" for the known names closest to `name`, or ""."""
    close = difflib.get_close_matches(name, list(known), n=3)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def parse_value(text: str, option: str = "--param") -> Any:
    """A value given with `option` (--param, --vary): bool, int, float, a list ([0.3, 0.7], JSON or Python) or a
    tuple ((0.3, 0.7), as `jaxsolve games` prints defaults) when it looks like one,
    else str (OpenSpiel's own list strings, "[2;3]", included)."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    if text.strip()[:1] in ("[", "("):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
        try:  # Python's literal syntax: tuples, single quotes
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError) as e:
            if ";" in text:  # OpenSpiel's list syntax, "[2;3]": passed on as written
                return text
            raise CLIError(f"{option} value {text!r} is not a list or tuple of numbers, "
                           f"strings or booleans ({type(e).__name__}: {one_line(e)})") from None
        if isinstance(value, (list, tuple)):
            return value
        raise CLIError(f"{option} value {text!r} is a {type(value).__name__}; expected a list "
                       "or tuple")
    return text


def parse_params(items: Sequence[str], option: str = "--param") -> dict[str, Any]:
    """{key: value} from ["key=value", ...] given with `option`. A key given twice is
    refused unless both values are equal: keeping the last one silently would solve
    another game than the one a long command line seems to ask for."""
    params, given = {}, {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CLIError(f"{option} {item!r}: expected key=value")
        parsed = parse_value(value, option)
        if key in params and params[key] != parsed:
            raise CLIError(f"{option} {key} is given twice ({given[key]!r} and "
                           f"{value.strip()!r}); give it once")
        params[key], given[key] = parsed, value.strip()
    return params


_PYTHON_SPEC = re.compile(r"^(?P<source>[^:]+\.py|[A-Za-z_][\w.]*):(?P<name>[A-Za-z_]\w*)$")


def is_python_spec(spec: str) -> bool:
    """GAME given as `FILE.py:NAME` or `module:NAME` (a game in the user's own code)."""
    return not spec.startswith(OPENSPIEL_PREFIX) and bool(_PYTHON_SPEC.match(spec))


def load_python_game(spec: str, params: dict[str, Any]):
    """The game `FILE.py:NAME` or `module:NAME` names: NAME is a game class or a function
    returning a game, called with the --param values as keyword arguments, or a game
    object itself (then without --param). Every failure is one CLIError naming `spec`."""
    match = _PYTHON_SPEC.match(spec)
    source, name = match["source"], match["name"]
    try:
        if source.endswith(".py"):
            path = Path(source)
            if not path.is_file():
                raise CLIError(f"{spec}: no file {source}")
            module_spec = importlib.util.spec_from_file_location(f"_jaxsolve_game_{path.stem}", path)
            module = importlib.util.module_from_spec(module_spec)
            # As `python FILE` would: its own folder importable, and an argv of its own
            # (a script that parses arguments at import must not see jaxsolve's).
            folder, argv = str(path.resolve().parent), sys.argv
            sys.path.insert(0, folder)
            sys.argv = [str(path)]
            try:
                module_spec.loader.exec_module(module)
            finally:
                sys.path.remove(folder)
                sys.argv = argv
        else:
            module = _import_from_here(source)
    except CLIError:
        raise
    except ModuleNotFoundError as e:
        if e.name is None or source.split(".")[0] != e.name.split(".")[0]:
            raise CLIError(f"{spec}: importing {source} failed: {type(e).__name__}: "
                           f"{one_line(e)}") from None
        raise CLIError(f"{spec}: no module {e.name!r} in the current folder "
                       f"({os.getcwd()}) or on Python's path; for a file elsewhere give "
                       f"its path, e.g. path/to/{source.split('.')[-1]}.py:{name}") from None
    except SystemExit as e:  # a script that exits at import (no __main__ guard)
        raise CLIError(f"{spec}: importing {source} exited (SystemExit: {e.code}); guard its "
                       "script part with `if __name__ == \"__main__\":`") from None
    except Exception as e:  # the user's code may raise anything while importing
        raise CLIError(f"{spec}: importing {source} failed: {type(e).__name__}: "
                       f"{one_line(e)}") from None
    if not hasattr(module, name):
        found = sorted(k for k, v in vars(module).items()
                       if not k.startswith("_") and (isinstance(v, type) or callable(v))
                       and getattr(v, "__module__", None) == module.__name__)
        raise CLIError(f"{spec}: {source} has no {name!r}"
                       + (f" (it defines {', '.join(found)})" if found else ""))
    target = getattr(module, name)
    if is_game(target):  # a game object (a class has the methods too, unbound)
        if params:
            raise CLIError(f"{spec}: {name} is a game object; --param needs a class or "
                           f"function to call")
        return target
    if not callable(target):
        raise CLIError(f"{spec}: {name} is a {type(target).__name__}, not a game, a game "
                       "class or a function returning a game")
    try:
        game = target(**params)
    except Exception as e:  # a bad --param, or the user's constructor failing
        raise CLIError(f"{spec}: {name}({', '.join(f'{k}={v!r}' for k, v in params.items())}) "
                       f"failed: {type(e).__name__}: {one_line(e)}") from None
    if not is_game(game):
        raise CLIError(f"{spec}: {name}() returned a {type(game).__name__}, not a game (one "
                       "with num_players() and new_initial_state(); see jaxsolve.protocol)")
    return game


def _import_from_here(source: str):
    """`import source` as `python -m` finds it: the current folder searched first, for
    this import only (sys.path is as it was afterwards)."""
    here = os.getcwd()
    sys.path.insert(0, here)
    try:
        importlib.invalidate_caches()  # a module written since the last import
        return importlib.import_module(source)
    finally:
        sys.path.remove(here)


def load_game(spec: str, params: dict[str, Any], *, trees_too: bool = False):
    """The protocol game GAME names: a built-in name, `openspiel:NAME`, or `FILE.py:NAME`
    / `module:NAME` (`load_python_game`). `trees_too`: the command also takes a saved
    tree, so an unknown name mentions FILE.npz."""
    if is_python_spec(spec):
        return load_python_game(spec, params)
    if spec.startswith(OPENSPIEL_PREFIX):
        name = spec[len(OPENSPIEL_PREFIX):]
        if not name:
            raise CLIError("openspiel: needs a game name, e.g. openspiel:kuhn_poker")
        try:
            with silence_native(2):  # OpenSpiel's C++ also prints its errors
                return load_pyspiel(name, **params)
        except ImportError as e:
            raise CLIError(one_line(e)) from None
        except (GameError, ValueError, KeyError, TypeError) as e:
            message = one_line(e).split(" Available games are:")[0]
            raise CLIError(f"{spec}: {message}") from None
    if spec in games.names():
        try:
            return games.load(spec, **params)
        except (ValueError, KeyError, TypeError) as e:
            message = one_line(e)
            raise CLIError(message if spec in message else f"{spec}: {message}") from None
    if spec.endswith(".py"):
        raise CLIError(_bare_python_file(spec))
    also = ", a saved tree FILE.npz" if trees_too else ""
    raise CLIError(f"unknown game {spec!r}{did_you_mean(spec, games.names())}; known games: "
                   f"{', '.join(games.names())} "
                   f"(or {OPENSPIEL_PREFIX}NAME{also}, or FILE.py:NAME / module:NAME for a "
                   f"game in your own code)")


def is_tree_file(spec: str) -> bool:
    """GAME names a saved tree: not a game name, and a `.npz` path or an existing file.
    A `.py` file without `:NAME` is refused here (it was read as a tree: "not an .npz
    file")."""
    if is_file_game(spec) and spec.endswith(".py"):
        raise CLIError(_bare_python_file(spec))
    return is_file_game(spec) and (spec.endswith(".npz") or Path(spec).is_file())


def _bare_python_file(spec: str) -> str:
    return (f"{spec} is a Python file: name the game in it after a colon, {spec}:NAME (a "
            "game class, a function returning a game, or a game object)")


def load_tree(spec: str, params: dict[str, Any], *, progress: bool = False,
              max_nodes: int = DEFAULT_MAX_NODES,
              max_depth: int = DEFAULT_MAX_DEPTH) -> GameTree:
    """Compiles GAME: a built-in name, `openspiel:NAME`, or a saved `.npz` tree
    (`progress`: a bar while a long walk runs; a walk past `max_nodes` histories, or
    a history of `max_depth` actions that has not ended, is refused)."""
    if is_tree_file(spec):
        if params:
            raise CLIError(f"{spec}: --param does not apply to a saved tree")
        try:
            tree = GameTree.load(spec)
        except CheckpointNotTreeError as e:
            raise CLIError(_resume_instead(e)) from None
        except GameError as e:
            raise CLIError(one_line(e)) from None
        size = batch_size(tree)
        if size is not None:
            raise CLIError(f"{spec} holds a batch of {size} games (saved from jaxsolve.sweep "
                           "or jaxsolve.stack); the command line solves one: save one of "
                           "jaxsolve.unstack(batch) instead")
        return tree
    game = load_game(spec, params, trees_too=True)
    try:
        return compile_game(game, progress=progress, max_nodes=max_nodes, max_depth=max_depth)
    except GameError as e:
        raise CLIError(f"{spec}: {one_line(e)}") from None


def _resume_instead(error: CheckpointNotTreeError) -> str:
    """A checkpoint given as GAME: the command that resumes its run, where its record
    has one (`jaxsolve solve` wrote it); saved from Python with metadata of one's own,
    there is no command line to repeat, and the error says how to read it."""
    meta, path = error.meta, Path(error.path)
    if not isinstance(meta.get("game"), str) or not isinstance(meta.get("algo"), str):
        return one_line(error)
    words = ["jaxsolve", "solve", meta["game"], "--algo", meta["algo"]]
    params = meta.get("params")
    for key, value in (params.items() if isinstance(params, dict) else ()):
        words += ["--param", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    words += [w for key in ("batch", "seed") if key in meta for w in (f"--{key}", str(meta[key]))]
    words += ["--out", str(path.parent), "--resume"]
    return (f"{path}: this is a solver checkpoint, not a saved tree; resume its run with: "
            f"{resume_command(words)}")


def is_file_game(spec: str) -> bool:
    """GAME is a path: neither `openspiel:NAME`, a built-in name nor `FILE.py:NAME`."""
    return (not spec.startswith(OPENSPIEL_PREFIX) and spec not in games.names()
            and not is_python_spec(spec))


def default_out(spec: str, params: dict[str, Any], algo: str) -> Path:
    """runs/<game>-<algo>, with any parameters in the game part."""
    if spec.startswith(OPENSPIEL_PREFIX):
        # OpenSpiel's string form "kuhn_poker(players=3)" -> kuhn_poker_players=3
        game = "openspiel_" + spec[len(OPENSPIEL_PREFIX):].replace("(", "_").replace(")", "")
    elif is_python_spec(spec):
        source, name = spec.rsplit(":", 1)
        game = f"{Path(source).stem if source.endswith('.py') else source}_{name}"
    elif is_file_game(spec):
        game = Path(spec).stem
    else:
        game = spec
    game += "".join(f"_{k}={json.dumps(v, separators=(',', ':'))}" for k, v in params.items())
    return Path("runs") / re.sub(r"[^A-Za-z0-9_.+=,-]+", "_", f"{game}-{algo}")
