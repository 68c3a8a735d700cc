"""`jaxsolve` itself: the commands plug into one parser, `--version` and `python -m
jaxsolve`, the usage line, GAME after --param, a pipe whose reader leaves, and
warnings printed as one line."""

import io
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import pytest

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
    printed = capsys.readouterr().out
    assert printed.startswith(f"jaxsolve {jaxsolve.__version__}, jax {jax.__version__} ")
    # The backend and its devices, which nothing printed before.
    devices = jax.devices()
    assert f"backend {jax.default_backend()}, {len(devices)} device" in printed
    assert f": {devices[0]}" in printed and devices[0].device_kind in printed
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




# An imperfect-recall game in a file: player 0 moves twice and, at its second move,
# no longer knows its first.
FORGETFUL_GAME = '''
from toy_games import SpecGame, decision, leaf

def second(a):
    return decision(1, "p1", decision(0, "again", leaf(a, -a), leaf(-a, a)), leaf(0, 0))

GAME = SpecGame(decision(0, "first", second(1.0), second(-1.0)))
'''


def test_the_program_prints_a_warning_as_its_message_alone(tmp_path):
    """The ImperfectRecallWarning printed the library's file and line
    (".../jaxsolve/cli/_game_spec.py:230: ImperfectRecallWarning: ..."); the program
    prints `jaxsolve: warning: MESSAGE`. Importing the command line changes no
    warning setting: only the program does."""
    (tmp_path / "forgetful.py").write_text(FORGETFUL_GAME)
    tests = str(Path(__file__).resolve().parents[1])  # toy_games
    done = subprocess.run(
        [sys.executable, "-m", "jaxsolve", "solve", "forgetful.py:GAME", "--iters", "3",
         "--quiet", "--out", str(tmp_path / "run")], cwd=tmp_path, capture_output=True,
        text=True, timeout=300, env={**os.environ, "PYTHONPATH": tests})
    assert done.returncode == 0, done.stderr
    assert "jaxsolve: warning: imperfect recall: player 0 reaches" in done.stderr, done.stderr
    assert "Warning" not in done.stderr and ".py:" not in done.stderr, done.stderr
    assert warnings.showwarning is not cli.show_warning


def test_the_program_shows_an_old_name_as_one_warning_line():
    """Python hides a DeprecationWarning raised outside __main__; the program shows
    the one of an old name given on its command line, as one line."""
    done = subprocess.run(
        [sys.executable, "-m", "jaxsolve", "pursuit", "solve", "--variant", "seed", "--grid",
         "3"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("jaxsolve: warning: pursuit: --variant seed is renamed --variant "
                           "base; the old name goes in jaxsolve 0.3.0\n")
    assert '"winner": "evader"' in done.stdout


def test_an_old_game_parameter_value_works_on_the_command_line_and_warns(capsys):
    with pytest.warns(DeprecationWarning, match="infostate='seed' is renamed"):
        assert cli.main(["check", "orbital_pursuit_evasion", "--param", "infostate=seed",
                         "--max-nodes", "100", "--playouts", "5"]) == 0
    # The game checked forgets the Attacker's moves, in entry_position_turn's strings.
    out = capsys.readouterr().out
    assert "player 0 has imperfect recall" in out
    assert re.search(r"'entry=\d,pos=\(\d,\d\),turn=\d'", out), out


def test_show_warning_writes_one_line_without_a_file_or_class():
    stream = io.StringIO()
    cli.show_warning(jaxsolve.ImperfectRecallWarning("player 0 forgets"),
                     jaxsolve.ImperfectRecallWarning, "/x/jaxsolve/cli/_game_spec.py", 230,
                     file=stream)
    assert stream.getvalue() == "jaxsolve: warning: player 0 forgets\n"
