"""`jaxsolve games`: the built-in games and their sizes; `jaxsolve games NAME`: one game.

    jaxsolve games                       # every built-in game, compiled with its defaults
    jaxsolve games --no-count            # names and parameters only
    jaxsolve games maneuver_detection    # its rules, whole defaults and sizes
    jaxsolve games openspiel:liars_dice  # an OpenSpiel game's kind and parameters

Counting compiles each game, so it runs under a clock (`--timeout`) and a size cap
(`--max-nodes`); a game that breaks either, or fails, is listed with the reason. The
listing fits 100 columns: the sizes in one table, the parameters' defaults in another,
wrapped between parameters.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import signal
import sys
import threading
from typing import Sequence

from jaxsolve import games
from jaxsolve.cli._base import CLIError, nonnegative_real, positive_int
from jaxsolve.cli._game_spec import OPENSPIEL_PREFIX, did_you_mean, load_game
from jaxsolve.compile import compile_game
from jaxsolve.errors import one_line
from jaxsolve.openspiel import load_pyspiel


class _TimeLimit(BaseException):
    """Not an Exception: the walk turns a game's exceptions into GameErrors naming the
    history, and this one is the listing's clock, not the game's fault."""


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Raises _TimeLimit after `seconds` of wall time (main thread on POSIX only;
    elsewhere no limit)."""
    usable = (seconds and seconds > 0 and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise _TimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


WIDTH = 100  # the listing's lines fit this many columns


def _short(text: str, width: int = 28) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _wrap(items: Sequence[str], width: int) -> list[str]:
    """`items` joined by ", " into lines of at most `width` characters, broken between
    items (an item longer than `width` gets a line of its own)."""
    lines, line = [], ""
    for k, item in enumerate(items):
        piece = item + ("," if k < len(items) - 1 else "")
        if line and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    return [*lines, line]


def _format_columns(header: Sequence[str], rows: list[Sequence], width: int = WIDTH) -> str:
    """Aligned columns under a header and a rule. The last cell of a row may be a list of
    items: they are joined by ", " and wrapped to the width left to the column."""
    last = len(header) - 1
    first_widths = [max(len(str(r[j])) for r in [header, *rows]) for j in range(last)]
    room = max(30, width - sum(w + 2 for w in first_widths))
    cells = [[*r[:last], _wrap(r[last], room) if isinstance(r[last], list) else [str(r[last])]]
             for r in rows]
    widths = [*first_widths, max(len(line) for r in [[*header[:last], [header[last]]], *cells]
                                 for line in r[last])]
    indent = " " * sum(w + 2 for w in first_widths)
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for r in cells:
        head = "  ".join(str(c).ljust(w) for c, w in zip(r[:last], widths))
        lines.append(f"{head}  {r[last][0]}".rstrip() if last else r[last][0])
        lines += [indent + more for more in r[last][1:]]
    return "\n".join(lines)


def _sizes(spec: str, args) -> tuple[dict | None, str]:
    """The game GAME `spec` names, compiled with its defaults within --timeout and
    --max-nodes: (tree.summary(), "") or (None, why it was not counted)."""
    try:
        with _time_limit(args.timeout):
            tree = compile_game(load_game(spec, {}), max_nodes=args.max_nodes,
                                warn_imperfect_recall=False)
    except _TimeLimit:
        return None, f"compiling took over {args.timeout:g} s"
    except Exception as e:  # noqa: BLE001 - a listing reports a broken game, not stops
        return None, one_line(e)
    return tree.summary(), ""


def _builtin_text(name: str) -> tuple[str, dict]:
    """A built-in game's rules (its module's docstring; the class's is a line pointing
    there) and parameters with their defaults."""
    if name not in games.names():
        raise CLIError(f"unknown game {name!r}{did_you_mean(name, games.names())}; known "
                       f"games: {', '.join(games.names())} (or {OPENSPIEL_PREFIX}NAME)")
    cls = games.game_class(name)
    texts = [sys.modules[cls.__module__].__doc__, cls.__doc__]
    shown = [inspect.cleandoc(t) for t in texts if t and "module docstring" not in t]
    return "\n\n".join(shown) or "(no description)", games.parameters(name)


def _openspiel_text(name: str) -> tuple[str, dict]:
    """An OpenSpiel game's long name and kind, and its parameters with their defaults
    (from pyspiel's registry: no game is loaded)."""
    try:
        import pyspiel  # noqa: PLC0415 - optional: only openspiel:NAME needs OpenSpiel
    except ImportError:
        raise CLIError(f"{OPENSPIEL_PREFIX}{name}: OpenSpiel is not installed (pip install "
                       "'jaxsolve[openspiel]')") from None
    short = name.split("(", 1)[0]  # OpenSpiel's string form "kuhn_poker(players=3)"
    found = [t for t in pyspiel.registered_games() if t.short_name == short]
    if not found:
        raise CLIError(f"{OPENSPIEL_PREFIX}{name}: OpenSpiel has no game {short!r}")
    kind = found[0]
    values = dict(kind.parameter_specification)
    if short != name:  # the values the string gives replace the defaults
        try:
            # As OpenSpiel loads it: the turn-based wrapper of a simultaneous game has
            # parameters (and a type) of its own.
            game = load_pyspiel(name, turn_based=False)
        except Exception as e:  # noqa: BLE001 - OpenSpiel's own refusal, in one line
            raise CLIError(f"{OPENSPIEL_PREFIX}{name}: {one_line(e)}") from None
        values.update(game.get_parameters())
        kind = game.get_type()  # its information depends on them (goofspiel's imp_info)
    players = (f"{kind.min_num_players}" if kind.min_num_players == kind.max_num_players
               else f"{kind.min_num_players}-{kind.max_num_players}")
    described = (f"OpenSpiel's {kind.long_name}: {players} players, "
                 + ", ".join(str(x).split(".")[-1].lower().replace("_", " ")
                             for x in (kind.dynamics, kind.chance_mode, kind.information,
                                       kind.utility)))
    return described, values


def _describe_game(spec: str, args) -> int:
    """`jaxsolve games NAME`: the game's description, every parameter with its whole
    default (the listing shortens long ones) and, unless --no-count, its sizes with
    those defaults."""
    if spec.startswith(OPENSPIEL_PREFIX):
        text, params = _openspiel_text(spec[len(OPENSPIEL_PREFIX):])
    else:
        text, params = _builtin_text(spec)
    print(spec)
    print(text)
    print("\nparameters (set with solve's or sweep's --param KEY=VALUE)"
          + (":" if params else ": none"))
    for key, value in params.items():
        print(f"  {key} = {value!r}")
    if args.no_count:
        return 0
    s, why = _sizes(spec, args)
    if s is None:
        print(f"\nsize: not counted ({why})")
    else:
        which = "values" if "(" in spec else "defaults"
        print(f"\nwith these {which}: {s['players']} players, {s['histories']:,} histories, "
              f"{s['infosets']:,} infosets ({'/'.join(map(str, s['infosets_per_player']))} "
              f"per player), {s['terminals']:,} terminals")
    return 0


def cmd_games(args) -> int:
    if args.name is not None:
        return _describe_game(args.name, args)
    shortened = False
    sizes, parameters, notes = [], [], []
    for name in games.names():
        try:
            params = games.parameters(name)
            described = [f"{k}={_short(repr(v))}" for k, v in params.items()] or ["-"]
            shortened |= any(_short(repr(v)) != repr(v) for v in params.values())
        except Exception as e:  # a listing reports a broken game rather than stopping
            described = [f"(cannot read parameters: {one_line(e)})"]
        parameters.append([name, described])
        if args.no_count:
            continue
        s, why = _sizes(name, args)
        if s is None:
            notes.append(f"{name}: not counted ({why})")
            sizes.append([name, "?", "?", "?", "?"])
            continue
        per = "/".join(str(n) for n in s["infosets_per_player"])
        sizes.append([name, str(s["players"]), f"{s['histories']:,}",
                      f"{s['infosets']:,} ({per})", f"{s['terminals']:,}"])
    if not args.no_count:
        print(_format_columns(["game", "players", "histories", "infosets (per player)",
                               "terminals"], sizes))
        print()
    print(_format_columns(["game", "parameters (defaults; solve's and sweep's --param "
                           "KEY=VALUE sets one)"], parameters))
    for note in notes:
        print(f"note: {note}")
    if shortened:
        print("(values ending in ... are shortened: `jaxsolve games NAME` shows them whole)")
    return 0


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Adds `games` to the command line's subcommands."""
    listing = subparsers.add_parser(
        "games", help="list the built-in games",
        description="The built-in games with their parameters' defaults (long values "
        "shortened) and, compiled with the defaults, their players, histories, infosets "
        "and terminals; with NAME, that game's description and whole defaults.")
    listing.add_argument("name", metavar="NAME", nargs="?", default=None,
                         help=f"one game to describe in full: a built-in name or "
                         f"{OPENSPIEL_PREFIX}NAME")
    listing.add_argument("--no-count", action="store_true",
                         help="only names and parameters, without compiling")
    listing.add_argument("--timeout", type=nonnegative_real, default=30.0, metavar="SECONDS",
                         help="skip counting a game whose compile takes longer (default 30; "
                         "0: no limit)")
    listing.add_argument("--max-nodes", type=positive_int, default=5_000_000, metavar="N",
                         help="skip counting a game with more histories (default 5,000,000)")
    listing.set_defaults(func=cmd_games)
    return listing
