"""The `jaxsolve` command line: `main` and `build_parser`, one module per command.

    jaxsolve solve kuhn_poker --algo cfr+ --iters 2000     # jaxsolve.cli.solve
    jaxsolve sweep spoof --vary max_rounds=1:3:3           # jaxsolve.cli.sweep
    jaxsolve check my_game.py:MyGame                       # jaxsolve.cli.check
    jaxsolve games                                         # jaxsolve.cli.games
    jaxsolve pursuit train --iterations 100                # jaxsolve.cli.pursuit

Each command module has `add_subparser(subparsers)` and the function its parser
runs. The private modules hold what several commands share: errors, exit codes and
numeric options (`_base`), output folders (`_output`), a pipe whose reader left
(`_pipe`), `--solver-param` (`_solver_args`), GAME and `--param` (`_game_spec`), and
the run of a long command with its checkpoint and Ctrl-C (`_run`), when `solve`
and `sweep` check the exploitability (`_checks`), and where `solve` runs, on one
device or across processes (`_placement`). Bad input ends in one line on stderr and
exit code 2; Ctrl-C in a long command saves its last completed chunk, prints the
command that resumes it and exits with 130; processes that cannot run as one
(`jaxsolve.processes`) end in one line and exit code 1. The `jaxsolve` program prints
a warning as one line, `jaxsolve: warning: ...`, without the file and line that
raised it, and shows each use of a renamed name (`jaxsolve._deprecated`).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Sequence

import jax
import jaxlib

from jaxsolve import __version__ as jaxsolve_version
from jaxsolve import _deprecated, allocator, processes
from jaxsolve.cli import check, games, pursuit, solve, sweep
from jaxsolve.cli._base import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CLIError,
                                devices_text)
from jaxsolve.cli._pipe import PipeSafeStdout
from jaxsolve.errors import DistributedError, one_line


class _Parser(argparse.ArgumentParser):
    """argparse whose errors become CLIError (one line, exit 2) instead of usage + exit."""

    def error(self, message: str):
        raise CLIError(message)


def version_text() -> str:
    """What `jaxsolve --version` prints: jaxsolve's and JAX's versions, JAX's backend
    and its devices (the backend starts only when this is asked for)."""
    return (f"jaxsolve {jaxsolve_version}, jax {jax.__version__} (jaxlib "
            f"{jaxlib.__version__}), {devices_text()}")


class _Version(argparse.Action):
    """`--version`: prints `version_text()` and exits 0 (argparse's own version action
    formats its text when the parser is built, which would start JAX's backend for
    every command)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """`warnings.showwarning` of the `jaxsolve` program: the message alone, as one
    `jaxsolve: warning: ...` line on stderr (not the library file and line that
    raised it)."""
    stream = sys.stderr if file is None else file
    try:
        stream.write(f"jaxsolve: warning: {message}\n")
    except (OSError, ValueError):  # stderr closed: the warning is lost, as Python's would be
        pass


def _game_given_after_param(args) -> None:
    """GAME is required, but a `--param k=v GAME` hands it to --param (which takes one or
    more values): the last --param (or --solver-param) value without '=' is taken back
    as GAME."""
    if getattr(args, "game", "") is not None:
        return
    for words in (getattr(args, "param", []), getattr(args, "solver_param", [])):
        if words and "=" not in words[-1]:
            args.game = words.pop()
            return
    raise CLIError("the following arguments are required: GAME")


def _alone_unless_solve(command: str) -> None:
    """Only `solve` runs across processes; another command started as one of several
    (`JAXSOLVE_NUM_PROCESSES` set) would run once per process, each writing the same
    files."""
    if command != "solve" and os.environ.get(processes.NUM_PROCESSES):
        raise CLIError(f"only `jaxsolve solve` runs across processes; unset "
                       f"{processes.NUM_PROCESSES} to run `jaxsolve {command}`")


def _usage_requires_game(command: argparse.ArgumentParser) -> None:
    """GAME is optional to argparse only so that `--param k=v GAME` can hand it back
    (`_game_given_after_param`); the usage line shows it as the required word it is."""
    usage = command.format_usage().removeprefix("usage: ").rstrip("\n")
    command.usage = usage.replace("[GAME]", "GAME").replace("%", "%%")


def build_parser() -> argparse.ArgumentParser:
    """The `jaxsolve` parser with every command (`pursuit` included; building it loads
    no Flax or optax)."""
    parser = _Parser(prog="jaxsolve", description="Solve imperfect-information games "
                     "with the jitted CFR family.")
    parser.add_argument("--version", action=_Version,
                        help="print jaxsolve's and JAX's versions, JAX's backend and its "
                        "devices, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (solve, games, check, sweep, pursuit):
        command.add_subparser(sub)
    for name in ("solve", "sweep", "check"):
        _usage_requires_game(sub.choices[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit code (0, 2 for bad input, 1 for processes
    that could not run as one, 130 on Ctrl-C).

    Changes nothing in the calling process beyond what the command does (the `jaxsolve`
    program itself starts at `program`)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except CLIError as e:
        print(f"jaxsolve: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else EXIT_OK
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        _game_given_after_param(args)
        _alone_unless_solve(args.command)
    except CLIError as e:
        print(f"jaxsolve: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE

    x64_before = bool(jax.config.read("jax_enable_x64"))
    if getattr(args, "x64", False) and not x64_before:
        jax.config.update("jax_enable_x64", True)  # before any array of this command
    stdout = sys.stdout
    sys.stdout = PipeSafeStdout(stdout)  # `| head`: the files are still written
    try:
        code = args.func(args)
        return EXIT_OK if code is None else int(code)
    except CLIError as e:
        print(f"jaxsolve: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except DistributedError as e:  # processes that could not run as one
        print(f"jaxsolve: error: {one_line(e)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:  # outside a run's chunks: while compiling, loading, ...
        print("\njaxsolve: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        sys.stdout = stdout
        if bool(jax.config.read("jax_enable_x64")) != x64_before:
            jax.config.update("jax_enable_x64", x64_before)


def program(argv: Sequence[str] | None = None) -> int:
    """The `jaxsolve` program (its console script and `python -m jaxsolve`): `main`, in
    a process of its own, which first keeps large freed blocks in the C heap
    (`jaxsolve.keep_freed_memory`; `JAXSOLVE_SYSTEM_MALLOC=1` leaves the C allocator as
    it is), prints warnings as `show_warning` does and shows every warning of an old
    name given (`--variant seed`, `--param infostate=seed`), which Python hides by default
    outside `__main__`. The settings hold for the whole process, so only a program
    that owns its process applies them, before its first computation. A failed run across processes (`jaxsolve.processes`) ends the process
    at once with its exit code."""
    allocator.keep_freed_memory()
    warnings.showwarning = show_warning
    warnings.filterwarnings("always", message=_deprecated.MESSAGE, category=DeprecationWarning)
    code = main(argv)
    if code != EXIT_OK and processes.joined():
        # A run across processes that failed: JAX's exit would wait at a barrier for
        # the other processes (a lost one never comes) and then abort with a stack
        # trace. The error is printed; the process ends with its code.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "CLIError",
           "build_parser", "main", "program", "show_warning", "version_text"]
