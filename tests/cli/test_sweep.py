"""`jaxsolve sweep`: every point solved in vmapped batches, Ctrl-C keeps what is solved,
bad input is one line."""

import json
import re

import numpy as np
import pytest

import jaxsolve
from jaxsolve import cli, games
from jaxsolve.cli import sweep as sweep_command
from conftest import RUN, builtin_tree


BATTLESHIP_2X2 = ["--param", "board_width=2", "--param", "board_height=2",
                  "--param", "num_shots=2", "--param", "ship_values=[1.0]"]



@pytest.mark.float64  # --x64's batch against each game solved alone, to 1e-9
def test_openspiel_lists_pass_in_either_syntax_and_a_payoff_sweep_is_one_batch(
        tmp_path, capsys):
    """battleship's ship_sizes as [1] (a list, written "[1]" for OpenSpiel) or as
    OpenSpiel's "[1]" string is the same game; sweeping its loss_multiplier moves only
    payoffs, so the points (whose OpenSpiel names differ: they list the multiplier)
    are one vmapped batch, each point as solved alone."""
    pyspiel = pytest.importorskip("pyspiel")
    from jaxsolve.openspiel import load_pyspiel
    params = {"board_width": 2, "board_height": 2, "num_shots": 2, "ship_values": "[1.0]"}
    assert str(load_pyspiel("battleship", **params, ship_sizes=[1])) == str(
        pyspiel.load_game("battleship", {**params, "ship_sizes": "[1]"}))
    out = tmp_path / "sweep"
    assert cli.main(["sweep", "openspiel:battleship", *BATTLESHIP_2X2, "--param",
                     "ship_sizes=[1]", "--vary", "loss_multiplier=[1.0, 2.0]", "--iters", "100",
                     "--x64", "--out", str(out), "--quiet"]) == 0
    assert "2 games in 1 vmapped batch of cfr+" in capsys.readouterr().out
    points = json.loads((out / "sweep.json").read_text())["points"]
    for point in points:
        game = pyspiel.load_game("battleship", {**params, "ship_sizes": "[1]",
                                                "loss_multiplier": point["value"]})
        tree = jaxsolve.compile_game(game)
        solver = jaxsolve.cfr_plus()
        alone = jaxsolve.policy_value(tree, jaxsolve.average_policy(
            tree, RUN(solver, tree, solver.init(tree), 100)))
        np.testing.assert_allclose(point["values"], alone, atol=1e-9)



# ---------------------------------------------------------------------- sweep
def test_sweep_solves_every_point_against_the_lp(tmp_path, capsys):
    """`jaxsolve sweep` over maneuver detection's prior: one vmapped batch, and every
    point's value within its NashConv of the independent sequence-form LP's value of
    that point's game (for a zero-sum game |u0 - v*| <= NashConv = 2 x exploitability)."""
    try:  # tests/ is on sys.path when it is not a package (pytest's default rootdir mode)
        from reference.sequence_form_lp import solve_zero_sum
    except ImportError:  # pragma: no cover
        from tests.reference.sequence_form_lp import solve_zero_sum  # type: ignore
    out = tmp_path / "sweep"
    priors = [(0.1, 0.9), (0.5, 0.5), (0.7, 0.3)]
    assert cli.main(["sweep", "maneuver_detection", "--vary", f"situation_probs={priors}",
                     "--iters", "2000", "--x64", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "3 games in 1 vmapped batch of cfr+, 2000 iterations each" in printed
    record = json.loads((out / "sweep.json").read_text())
    assert record["batches"] == 1 and (out / "sweep.png").stat().st_size > 10_000
    for point, prior in zip(record["points"], priors):
        assert tuple(point["value"]) == prior
        lp = solve_zero_sum(games.load("maneuver_detection", situation_probs=prior)).value
        assert point["values"][0] == pytest.approx(-point["values"][1], abs=1e-12)
        assert abs(point["values"][0] - lp) <= 2 * point["exploitability"] + 1e-9
        assert 0 <= point["exploitability"] < 1e-3
        assert set(point["strategy"]) == {"situation=N", "situation=M", "operator_acted"}



def test_sweep_over_a_structural_parameter_solves_one_batch_per_structure(tmp_path, capsys):
    """Spoof's rounds change the tree: one call per round count; the values are the
    README's (Spoof's LP-checked 1/3, 1/3, 2/3) within NashConv."""
    out = tmp_path / "spoof"
    assert cli.main(["sweep", "spoof", "--vary", "max_rounds=1:3:3", "--algo", "dcfr",
                     "--iters", "500", "--out", str(out), "--quiet"]) == 0
    assert "3 games in 3 vmapped batches of dcfr" in capsys.readouterr().out
    record = json.loads((out / "sweep.json").read_text())
    assert [p["value"] for p in record["points"]] == [1, 2, 3]
    for point, value in zip(record["points"], (1 / 3, 1 / 3, 2 / 3)):
        assert abs(point["values"][0] - value) <= 2 * max(point["exploitability"], 0) + 1e-5



def test_an_interrupted_sweep_keeps_what_it_solved(tmp_path, capsys, monkeypatch):
    """Ctrl-C in the second of three batches (Spoof's round counts): the first point
    is kept whole, the second as far as its last completed call, the third is left
    out; the record says so and the exit code is 130."""
    real, calls = sweep_command._run, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 25:  # 20 calls per batch: the 5th call of the second
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(sweep_command, "_run", interrupted)
    out = tmp_path / "spoof"
    assert cli.main(["sweep", "spoof", "--vary", "max_rounds=[1, 2, 3]", "--iters", "40",
                     "--out", str(out), "--quiet"]) == cli.EXIT_INTERRUPTED
    printed = capsys.readouterr()
    assert "Interrupted: 2 of 3 points solved" in printed.err
    assert "iterations" in printed.out.splitlines()[0]
    record = json.loads((out / "sweep.json").read_text())
    assert record["interrupted"] is True and (out / "sweep.png").stat().st_size > 10_000
    assert [(p["value"], p["iterations"]) for p in record["points"]] == [(1, 40), (2, 8)]
    first = record["points"][0]  # Spoof with one round is worth 1/3 (the LP's value)
    # + float32 round-off (eps 1.2e-7) of values summed over Spoof's few leaves
    assert abs(first["values"][0] - 1 / 3) <= 2 * first["exploitability"] + 1e-6



@pytest.mark.parametrize("argv, says", [
    (["sweep", "spoof", "--vary", "max_rounds"], r"expected KEY=\[v1, v2, \.\.\.\] or KEY=START:STOP"),
    (["sweep", "spoof", "--vary", "max_rounds=[2]"], "a list of at least two values"),
    (["sweep", "spoof", "--vary", "max_rounds=1:3:1"], "COUNT must be at least 2"),
    (["sweep", "kuhn_poker", "--vary", "players=2:3:3"], r"players=2.0: .*got 2.0 \(2:3:3 "
     r"steps by 0.5, so every value is a float; .* e.g. 2:3:2\)"),
    (["sweep", "spoof", "--vary", "max_rounds=a:b:3"], "two numbers and an integer"),
    (["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--param", "max_rounds=3"],
     "name the same parameter"),
    (["sweep", "spoof", "--vary", "max_rounds=[1, 0]"], "max_rounds=0: .*max_rounds"),
    (["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--algo", "os-mccfr"], "--algo"),
    (["sweep", "SAVED", "--vary", "x=[1, 2]"], "not a saved tree"),
    (["sweep", "spoof"], "--vary"),
    (["sweep", "spoof", "--vary", "max_rounds=[1, 2"], r"^jaxsolve: error: --vary value '\[1, 2'"),
    # refused before the points are solved, not after, which would lose them all
    (["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--out", "FILE"],
     "cannot write to --out .*: .*File exists"),
])
def test_sweep_bad_input_is_one_line(argv, says, tmp_path, capsys):
    saved = str(builtin_tree("kuhn_poker").save(tmp_path / "kuhn.npz"))
    (tmp_path / "file").write_text("")
    argv = [saved if a == "SAVED" else str(tmp_path / "file") if a == "FILE" else a
            for a in argv]
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert re.search(says, err) and len(err.strip().splitlines()) == 1, err

