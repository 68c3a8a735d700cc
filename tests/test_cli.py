"""The `jaxsolve` command line, run in-process through `main([...])`."""

import json
import re

import numpy as np
import pytest

import jaxsolve
from jaxsolve import cli
from jaxsolve.checkpoint import load_checkpoint, save_checkpoint
from conftest import builtin_tree

KUHN_VALUE = -1 / 18  # player 0's value of 2-player Kuhn poker (Kuhn 1950)


def solve(out, *extra, game="kuhn_poker"):
    return cli.main(["solve", game, "--out", str(out), "--quiet", *extra])


def final_state(out):
    state, _ = load_checkpoint(out / cli.CHECKPOINT)
    return state


def assert_same_state(a, b):
    for field in jaxsolve.CFRState._fields:
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and np.array_equal(x, y), field


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """60 iterations of CFR+ on Kuhn in one go (eval every 2, the default for 60)."""
    out = tmp_path_factory.mktemp("straight")
    assert solve(out, "--iters", "60") == 0
    return out


def test_solve_writes_results_that_check_out(tmp_path, capsys):
    assert solve(tmp_path, "--iters", "2000") == 0
    printed = capsys.readouterr().out
    for name in (cli.STRATEGY, cli.CONVERGENCE, cli.PLOT, cli.CHECKPOINT):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (tmp_path / cli.PLOT).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The printed game value is Kuhn's published one.
    value = float(re.search(r"Game value: player 0 = ([-+]?\d+\.\d+)", printed).group(1))
    assert abs(value - KUHN_VALUE) < 2e-3
    assert "Exploitability:" in printed and "p0 card=0 history=" in printed

    # The saved table is the policy whose exploitability the file reports.
    result = json.loads((tmp_path / cli.STRATEGY).read_text())
    assert (result["game"], result["algo"], result["iterations"]) == ("kuhn_poker", "cfr+", 2000)
    tree = builtin_tree("kuhn_poker")
    policy = jaxsolve.from_table(tree, result["strategy"], default="error")
    assert abs(float(jaxsolve.exploitability(tree, policy)) - result["exploitability"]) < 1e-6
    assert np.allclose(jaxsolve.policy_value(tree, policy), result["value"], atol=1e-6)

    history = json.loads((tmp_path / cli.CONVERGENCE).read_text())
    assert len(history) == 50 and history[-1]["iteration"] == 2000
    assert history[-1]["exploitability"] == pytest.approx(result["exploitability"], abs=1e-9)
    assert all(set(r) == {"iteration", "exploitability", "seconds"} for r in history)


def test_resume_ends_exactly_where_an_uninterrupted_run_ends(tmp_path, uninterrupted):
    assert solve(tmp_path, "--iters", "30") == 0  # chunks of 1 ...
    assert solve(tmp_path, "--iters", "60", "--resume") == 0  # ... then chunks of 2
    assert_same_state(final_state(tmp_path), final_state(uninterrupted))
    iterations = [r["iteration"] for r in json.loads((tmp_path / cli.CONVERGENCE).read_text())]
    assert iterations == list(range(1, 31)) + list(range(32, 61, 2))


def test_ctrl_c_saves_and_resumes_to_the_same_result(tmp_path, uninterrupted, monkeypatch,
                                                     capsys):
    real, calls = cli._run_chunk, []

    def interrupted_once(*args):
        calls.append(args[-1])
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(cli, "_run_chunk", interrupted_once)
    assert solve(tmp_path, "--iters", "60") == 130
    err = capsys.readouterr().err
    assert "Interrupted at iteration 6" in err and "--resume" in err
    state, meta = load_checkpoint(tmp_path / cli.CHECKPOINT)
    assert int(state.iteration) == meta["iteration"] == 6
    assert not (tmp_path / cli.STRATEGY).exists()

    assert solve(tmp_path, "--iters", "60", "--resume") == 0
    assert_same_state(final_state(tmp_path), final_state(uninterrupted))
    straight = json.loads((uninterrupted / cli.CONVERGENCE).read_text())
    resumed = json.loads((tmp_path / cli.CONVERGENCE).read_text())
    assert ([(r["iteration"], r["exploitability"]) for r in resumed]
            == [(r["iteration"], r["exploitability"]) for r in straight])


def test_chunks_of_any_size_share_one_compilation(tmp_path):
    solve(tmp_path / "a", "--iters", "7", "--eval-every", "3")  # compiled (and warm)
    before = cli._run_jit._cache_size()
    assert solve(tmp_path / "b", "--iters", "11", "--eval-every", "4") == 0  # 4, 4, 3
    assert cli._run_jit._cache_size() == before


def test_checkpoint_round_trip_is_bit_exact(tmp_path):
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.cfr_plus()
    state = jaxsolve.run(solver, tree, solver.init(tree), 5)
    meta = {"game": "kuhn_poker", "convergence": [{"iteration": 5}]}
    save_checkpoint(tmp_path / "c.npz", state, meta)
    loaded, loaded_meta = load_checkpoint(tmp_path / "c.npz")
    assert_same_state(loaded, jax_to_numpy(state))
    assert loaded_meta["convergence"] == meta["convergence"]
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]  # no temporary left over


def jax_to_numpy(state):
    return jaxsolve.CFRState(*(np.asarray(x) for x in state))


def test_games_lists_the_builtin_games(capsys):
    assert cli.main(["games"]) == 0
    lines = capsys.readouterr().out.splitlines()
    kuhn = next(line for line in lines if line.startswith("kuhn_poker "))
    assert kuhn.split()[1:4] == ["2", "58", "12"]  # players, histories, infosets
    assert "players=2" in kuhn
    assert any(line.startswith("leduc_poker ") and "9,457" in line for line in lines)

    assert cli.main(["games", "--no-count"]) == 0
    listed = capsys.readouterr().out
    assert "kuhn_poker" in listed and "leduc_poker" in listed


def test_parse_params():
    assert cli.parse_params(["players=3", "p=0.5", "flag=true", "xs=[1, 2]", "name=abc"]) == {
        "players": 3, "p": 0.5, "flag": True, "xs": [1, 2], "name": "abc"}


@pytest.fixture
def bad_npz(tmp_path):
    path = tmp_path / "broken.npz"
    path.write_bytes(b"not a zip file")
    return path


@pytest.mark.parametrize("argv, says", [
    (["solve", "no_such_game"], "known games: "),
    (["solve", "kuhn_poker", "--param", "players=1"], "players"),
    (["solve", "kuhn_poker", "--param", "colour=red"], "no parameter 'colour'"),
    (["solve", "kuhn_poker", "--param", "players"], "expected key=value"),
    (["solve", "BROKEN"], "broken.npz"),
    (["solve", "kuhn_poker", "--out", "EMPTY", "--resume"], "cannot --resume"),
    (["solve", "kuhn_poker", "--iters", "0"], "--iters"),
    (["solve", "kuhn_poker", "--algo", "sgd"], "--algo"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_code_2(argv, says, bad_npz, tmp_path, capsys):
    argv = [str(bad_npz) if a == "BROKEN" else str(tmp_path / "empty") if a == "EMPTY" else a
            for a in argv]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    line = captured.err.strip()
    assert "\n" not in line and line.startswith("jaxsolve: error: ") and says in line, line
    assert "Traceback" not in captured.err + captured.out


def test_resume_refuses_another_runs_checkpoint(tmp_path, uninterrupted, capsys):
    assert solve(uninterrupted, "--iters", "60", "--algo", "dcfr", "--resume") == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "algo 'cfr+', not 'dcfr'" in line
    assert solve(uninterrupted, "--iters", "60", "--param", "players=3", "--resume") == 2
    assert "params" in capsys.readouterr().err


def test_unknown_openspiel_game_is_one_line(capsys):
    pytest.importorskip("pyspiel")
    assert cli.main(["solve", "openspiel:no_such_game"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "no_such_game" in line


def test_later_subcommands_plug_in(monkeypatch, capsys):
    """A `jaxsolve.alphazero.cli` module with `add_subparser` adds its command."""
    import sys
    import types

    package = types.ModuleType("jaxsolve.alphazero")
    plugin = types.ModuleType("jaxsolve.alphazero.cli")

    def add_subparser(subparsers):
        pursuit = subparsers.add_parser("pursuit")
        pursuit.add_argument("--steps", type=int, default=1)
        pursuit.set_defaults(func=lambda args: print(f"pursuit {args.steps}") or 0)

    plugin.add_subparser = add_subparser
    package.cli = plugin
    monkeypatch.setitem(sys.modules, "jaxsolve.alphazero", package)
    monkeypatch.setitem(sys.modules, "jaxsolve.alphazero.cli", plugin)
    assert cli.main(["pursuit", "--steps", "3"]) == 0
    assert capsys.readouterr().out == "pursuit 3\n"


def test_pursuit_solve_reports_the_seed_game_as_an_evader_win(capsys):
    # Hand derivation: the defender's sensor sits on the centre cell and never sees
    # it, so an evader that stays at the centre (its start) is never detected and
    # wins; the exact solver must say so through the command line.
    assert cli.main(["pursuit", "solve", "--variant", "seed"]) == 0
    out = capsys.readouterr().out
    assert '"winner": "evader"' in out and '"root_value": 1.0' in out
