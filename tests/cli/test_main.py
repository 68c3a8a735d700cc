"""`jaxsolve` itself: the commands plug into one parser, `--version` and `python -m
jaxsolve`, the usage line, GAME after --param, and a pipe whose reader leaves."""

import re
import sys

import jaxsolve
from jaxsolve import cli
from jaxsolve.cli import solve as solve_command
from cli_runs import solve


def test_later_subcommands_plug_in(monkeypatch, capsys):
    """The `jaxsolve.cli.pursuit` module's `add_subparser` adds its command."""
    import types

    plugin = types.ModuleType("jaxsolve.cli.pursuit")

    def add_subparser(subparsers):
        pursuit = subparsers.add_parser("pursuit")
        pursuit.add_argument("--steps", type=int, default=1)
        pursuit.set_defaults(func=lambda args: print(f"pursuit {args.steps}") or 0)

    plugin.add_subparser = add_subparser
    monkeypatch.setattr(cli, "pursuit", plugin)
    assert cli.main(["pursuit", "--steps", "3"]) == 0
    assert capsys.readouterr().out == "pursuit 3\n"



def test_game_missing_is_still_an_error_after_param(capsys):
    assert cli.main(["solve", "--param", "players=3"]) == cli.EXIT_USAGE
    assert "the following arguments are required: GAME" in capsys.readouterr().err



def test_a_closed_pipe_drops_the_printout_but_not_the_files(tmp_path, monkeypatch):
    """`jaxsolve solve ... | head -1`: the reader leaves after a line. The command
    still writes strategy.json and the plot, without 'cannot write the results'."""
    class HeadOne:  # a pipe whose reader exits after the first line
        def __init__(self):
            self.lines = 0

        def write(self, text):
            if self.lines >= 1:
                raise BrokenPipeError(32, "Broken pipe")
            self.lines += text.count("\n")
            return len(text)

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", HeadOne())
    assert solve(tmp_path / "bp", "--iters", "5") == 0
    assert sorted(p.name for p in (tmp_path / "bp").iterdir()) == sorted(
        [solve_command.CHECKPOINT, solve_command.STRATEGY, solve_command.CONVERGENCE, solve_command.PLOT])
    assert isinstance(sys.stdout, HeadOne)  # given back after the command



def test_version_and_python_dash_m(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"jaxsolve {jaxsolve.__version__}, jax ")
    import subprocess  # noqa: PLC0415
    done = subprocess.run([sys.executable, "-m", "jaxsolve", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("jaxsolve "), done.stderr
    # Building the parser (every command does, `pursuit` included) loads no Flax or
    # optax: the AlphaZero modules load when a pursuit command runs.
    probe = ("import sys, jaxsolve.cli; jaxsolve.cli.build_parser(); "
             "print(sorted(m for m in ('flax', 'optax') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "[]", done.stderr



def test_usage_shows_game_as_required(capsys):
    # argparse takes GAME as optional (so that `--param k=v GAME` works) and would
    # print it as [GAME]; every command that needs it shows it plainly.
    for command in ("solve", "sweep", "check"):
        assert cli.main([command, "--help"]) == 0
        usage = capsys.readouterr().out.split("\n\n")[0]
        assert "[GAME]" not in usage and re.search(r"\sGAME\b", usage), usage

