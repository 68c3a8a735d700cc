"""`jaxsolve check GAME`: the conformance checks of `jaxsolve.check_game` from the shell.

    jaxsolve check kuhn_poker
    jaxsolve check my_game.py:MyGame --param size=3 --playouts 500

Prints one line per check and the first offending history of each failure; the exit
code is 0 if every check passes, 1 if one fails and 2 on bad input. A game that may
never end is found as `solve` finds it: a history of --max-depth actions that has not
ended, looked for along the first actions from the root once the walk has grown.
"""

from __future__ import annotations

import argparse

from jaxsolve.check import check_game
from jaxsolve.cli._base import EXIT_OK, CLIError, positive_int
from jaxsolve.cli._game_spec import (
    OPENSPIEL_PREFIX, PYTHON_GAME_HELP, add_max_depth, is_tree_file, load_game, parse_params)


def cmd_check(args) -> int:
    """`jaxsolve check`: prints the conformance report; 0 if every check passes, 1 if
    one fails."""
    if args.playouts < 0:
        raise CLIError("--playouts must be >= 0")
    if is_tree_file(args.game):  # the checks call a game's code; a tree file has none
        raise CLIError(f"{args.game}: check takes a game (a built-in name, "
                       f"{OPENSPIEL_PREFIX}NAME or FILE.py:NAME), not a saved tree; a saved "
                       f"tree's arrays "
                       f"are validated when it is loaded, e.g. by jaxsolve solve {args.game}")
    game = load_game(args.game, parse_params(args.param))
    report = check_game(game, playouts=args.playouts, seed=args.seed, max_nodes=args.max_nodes,
                        max_steps=args.max_depth)
    print(report)
    return EXIT_OK if report.ok else 1


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Adds `check` to the command line's subcommands."""
    check = subparsers.add_parser("check", help="run the conformance checks on a game",
                                  description="Conformance checks: one line per check "
                                  "and the first offending history of each failure. Exit 0 "
                                  "if all pass, 1 if one fails, 2 on bad input.")
    check.add_argument("game", metavar="GAME", nargs="?", help="a built-in game, "
                       "openspiel:NAME, or " + PYTHON_GAME_HELP)
    check.add_argument("--param", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                       help="game parameter (repeatable)")
    check.add_argument("--playouts", type=int, default=100, help="random playouts (default 100)")
    check.add_argument("--seed", type=int, default=0, help="playout seed (default 0)")
    check.add_argument("--max-nodes", type=positive_int, default=200_000, metavar="N",
                       help="walk the full tree up to N histories (default 200,000)")
    add_max_depth(check)
    check.set_defaults(func=cmd_check)
    return check
