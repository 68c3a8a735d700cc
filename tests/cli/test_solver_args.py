"""`--solver-param`: a solver's own settings from the command line (jaxsolve.cli._solver_args)."""

import inspect
import json
import re

import numpy as np
import pytest

import jaxsolve
from jaxsolve import cli
from jaxsolve.cli import _solver_args
from jaxsolve.cli import solve as solve_command
from jaxsolve.checkpoint import load_checkpoint
from cli_runs import solve
from conftest import AVERAGE, RUN, builtin_tree, openspiel_average, pyspiel_game, pyspiel_tree


def average(out, tree):
    state, _ = load_checkpoint(out / solve_command.CHECKPOINT)
    return np.asarray(AVERAGE(tree, state))


@pytest.mark.float64  # OpenSpiel's iterates to 1e-8
def test_dcfr_settings_give_openspiel_dcfr_with_those_settings(tmp_path):
    """alpha=2, beta=0.5, gamma=3 through the command line: the average policy after 30
    iterations is OpenSpiel's Python DCFRSolver's with the same three numbers (to
    1e-8 in float64), and not the default (1.5, 0, 2) one's."""
    pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import discounted_cfr

    game, tree = pyspiel_game("kuhn_poker"), pyspiel_tree("kuhn_poker")
    assert solve(tmp_path, "--algo", "dcfr", "--solver-param", "alpha=2", "beta=0.5",
                 "gamma=3", "--iters", "30", "--x64", game="openspiel:kuhn_poker") == 0
    ours = average(tmp_path, tree)
    for settings, same in (({"alpha": 2, "beta": 0.5, "gamma": 3}, True), ({}, False)):
        theirs = discounted_cfr.DCFRSolver(game, **settings)
        for _ in range(30):
            theirs.evaluate_and_update_policy()
        gap = np.abs(ours - openspiel_average(tree, theirs)).max()
        assert (gap < 1e-8) == same, (settings, gap)
    result = json.loads((tmp_path / solve_command.STRATEGY).read_text())
    assert result["algo"] == "dcfr"
    assert result["solver_params"] == {"alpha": 2, "beta": 0.5, "gamma": 3}


def test_exploration_reaches_outcome_sampling(tmp_path, capsys):
    """os-mccfr's exploration from the shell is the library's `exploration=`: the
    same state as outcome_sampling(64, exploration=0.3) from PRNGKey(0), which the
    default 0.6 is not."""
    tree = builtin_tree("kuhn_poker")
    assert solve(tmp_path, "--algo", "os-mccfr", "--batch", "64", "--solver-param",
                 "exploration=0.3", "--iters", "20") == 0
    assert "os-mccfr (exploration=0.3) after 20 iterations" in capsys.readouterr().out
    ours = average(tmp_path, tree)
    import jax  # noqa: PLC0415
    for exploration, same in ((0.3, True), (0.6, False)):
        solver = jaxsolve.outcome_sampling(64, exploration=exploration)
        state = RUN(solver, tree, solver.init(tree, jax.random.PRNGKey(0)), 20)
        assert np.array_equal(ours, np.asarray(AVERAGE(tree, state))) == same, exploration


def test_the_command_line_and_the_library_sample_alike_by_default(tmp_path):
    """`solve --algo es-mccfr` without --batch is `jaxsolve.external_sampling()`
    without batch_size: the same state after the same iterations from PRNGKey(0)."""
    import jax  # noqa: PLC0415
    tree = builtin_tree("kuhn_poker")
    assert solve(tmp_path, "--algo", "es-mccfr", "--iters", "3") == 0
    solver = jaxsolve.external_sampling()
    state = RUN(solver, tree, solver.init(tree, jax.random.PRNGKey(0)), 3)
    assert np.array_equal(average(tmp_path, tree), np.asarray(AVERAGE(tree, state)))


def test_a_run_resumes_only_with_its_own_settings(tmp_path, capsys):
    """The settings belong to the run: resuming with others is refused, the resume hint
    of an interrupted run repeats them, and the same settings continue it."""
    out = tmp_path / "run"
    assert solve(out, "--algo", "dcfr", "--solver-param", "gamma=3", "--iters", "4") == 0
    capsys.readouterr()
    for other in (["--solver-param", "gamma=4"], []):
        assert solve(out, "--algo", "dcfr", *other, "--iters", "8", "--resume") == 2
        err = capsys.readouterr().err
        assert "belongs to another run (solver_params {'gamma': 3}" in err, err
    assert solve(out, "--algo", "dcfr", "--solver-param", "gamma=3", "--iters", "8",
                 "--resume") == 0
    straight = tmp_path / "straight"
    assert solve(straight, "--algo", "dcfr", "--solver-param", "gamma=3", "--iters", "8") == 0
    tree = builtin_tree("kuhn_poker")
    assert np.array_equal(average(out, tree), average(straight, tree))
    # Without --resume the note names the settings of the run it replaces.
    capsys.readouterr()
    assert solve(out, "--algo", "dcfr", "--iters", "2") == 0
    assert "replacing the run in" in (err := capsys.readouterr().err) and "dcfr (gamma=3)" in err
    assert _solver_args.words(["gamma=3"]) == ["--solver-param", "gamma=3"]


def test_an_interrupted_run_is_told_to_resume_with_its_settings(tmp_path, monkeypatch, capsys):
    real, calls = solve_command._run_chunk, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(solve_command, "_run_chunk", interrupted)
    assert solve(tmp_path, "--algo", "pcfr+", "--solver-param", "gamma=1", "--iters",
                 "10", "--eval-every", "2") == 130
    hint = capsys.readouterr().err.splitlines()[-1]
    assert "--algo pcfr+" in hint and "--solver-param gamma=1" in hint and "--resume" in hint


@pytest.mark.parametrize("argv, says", [
    (["--algo", "dcfr", "--solver-param", "delta=1"], r"--solver-param delta: --algo dcfr "
     r"takes alpha, beta, gamma$"),
    (["--algo", "cfr+", "--solver-param", "gamma=2"], "--algo cfr\\+ has no settings"),
    (["--algo", "os-mccfr", "--solver-param", "batch_size=8"], "set it with --batch"),
    (["--algo", "cfr", "--solver-param", "alternating=true"], "set it with --algo cfr-alt"),
    (["--algo", "dcfr", "--solver-param", "gamma=-1"], "dcfr: gamma must be a finite number >= 0, got -1"),
    (["--algo", "dcfr", "--solver-param", "alpha=inf"], "alpha"),
    (["--algo", "es-mccfr", "--solver-param", "rule=foo"], "rule must be one of"),
    (["--algo", "os-mccfr", "--solver-param", "exploration=2"], "exploration"),
    (["--algo", "dcfr", "--solver-param", "gamma=1", "gamma=2"], "gamma is given twice"),
    (["--algo", "dcfr", "--solver-param", "gamma"], "expected key=value"),
])
def test_bad_settings_are_one_line_before_any_walk(argv, says, tmp_path, capsys, monkeypatch):
    walked = []
    monkeypatch.setattr(solve_command, "load_tree", lambda *a, **k: walked.append(1))
    assert solve(tmp_path, *argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert re.search(says, err) and len(err.strip().splitlines()) == 1, err
    assert not walked


def test_settable_keys_are_the_constructors_own():
    """Every key offered is a keyword its constructor takes, and builds with the
    constructor's own default (so the list cannot name a setting that does not exist);
    dcfr's and pcfr+'s are their exponents."""
    assert _solver_args.settable("dcfr") == ["alpha", "beta", "gamma"]
    assert _solver_args.settable("pcfr+") == ["gamma"]
    assert _solver_args.settable("cfr+") == _solver_args.settable("cfr-alt") == []
    for algo in jaxsolve.SOLVERS:
        for key in _solver_args.settable(algo):
            make = jaxsolve.SOLVERS[algo]
            default = inspect.signature(make).parameters.get(key)
            value = (default.default if default is not None else
                     inspect.signature(jaxsolve.sampled_cfr).parameters[key].default)
            _solver_args.make(algo, {key: value}, batch=4)


def test_sweep_takes_the_settings(tmp_path, capsys):
    """pcfr+ with gamma=1 over Spoof's first two round counts: the record keeps the
    setting and the points' values are Spoof's LP-checked 1/3 within NashConv."""
    out = tmp_path / "sweep"
    assert cli.main(["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--algo", "pcfr+",
                     "--solver-param", "gamma=1", "--iters", "300", "--out", str(out),
                     "--quiet"]) == 0
    assert "of pcfr+ (gamma=1), 300 iterations each" in capsys.readouterr().out
    record = json.loads((out / "sweep.json").read_text())
    assert record["solver_params"] == {"gamma": 1}
    for point in record["points"]:
        assert abs(point["values"][0] - 1 / 3) <= 2 * point["exploitability"] + 1e-6
