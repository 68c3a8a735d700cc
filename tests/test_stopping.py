"""`jaxsolve.run_until` and `--target`: solving until a target exploitability.

The reference for where a run stops is OpenSpiel: its C++ CFRPlusSolver, evaluated by
pyspiel.exploitability every 10 iterations, first reaches 1e-3 on Kuhn poker at
iteration 130 (at 120 it is 1.006e-3, a margin far above float64 rounding). A
batch's games must stop on their own, as each would alone, and the scale of the
payoffs must move the stop as CFR+'s invariance says it does.
"""

import json

import jax
import numpy as np
import pytest

import jaxsolve
from jaxsolve import cli, games
from jaxsolve.cli import _game_spec as game_spec
from jaxsolve.cli import sweep as sweep_command
from jaxsolve.cli._checks import TARGET_SCHEDULE
from jaxsolve.cli.solve import CONVERGENCE, STRATEGY
from jaxsolve.sampling import SAMPLING_SOLVERS
from jaxsolve.stopping import CHECK_EVERY, CHECK_GROWTH_PERCENT, check_gap, check_iterations
from conftest import AVERAGE, EXPLOITABILITY, RUN, builtin_tree, pyspiel_game, pyspiel_tree

RUN_UNTIL = jax.jit(jaxsolve.run_until, static_argnums=0)
TARGET, EVERY = 1e-3, 10


@pytest.fixture(scope="module")
def openspiel_stop():
    """(iteration, exploitability) at which OpenSpiel's CFR+ on Kuhn first has an
    average policy at most TARGET exploitable, checked every EVERY iterations."""
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel_game("kuhn_poker")
    solver = pyspiel.CFRPlusSolver(game)
    for iteration in range(EVERY, 2000 + 1, EVERY):
        for _ in range(EVERY):
            solver.evaluate_and_update_policy()
        gap = pyspiel.exploitability(game, solver.average_policy())
        if gap <= TARGET:
            return iteration, gap
    raise AssertionError("OpenSpiel's CFR+ did not reach the target")  # pragma: no cover


@pytest.mark.float64  # OpenSpiel's exploitability to 1e-9
def test_run_until_stops_where_openspiel_cfr_plus_first_reaches_the_target(openspiel_stop):
    tree, solver = pyspiel_tree("kuhn_poker"), jaxsolve.cfr_plus()
    stopped = RUN_UNTIL(solver, tree, solver.init(tree), TARGET, 10_000, EVERY)
    iteration, gap = openspiel_stop
    assert int(stopped.iterations) == int(stopped.state.iteration) == iteration
    assert float(stopped.exploitability) == pytest.approx(gap, abs=1e-9)


def test_each_game_of_a_batch_stops_on_its_own_and_scale_moves_the_stop_as_cfr_plus_says():
    """Utilities times c (a power of two, so exact in float64): CFR+'s regrets scale by
    c and its policies do not change, so exploitability scales by c, and the game at c
    reaches TARGET where the original reaches TARGET / c. Under vmap each game must
    stop at its own iteration, with the state `run` reaches in that many."""
    tree, solver = builtin_tree("kuhn_poker"), jaxsolve.cfr_plus()
    scales = np.array([0.5, 1.0, 2.0])
    batch, axes = jaxsolve.sweep(tree, utilities=scales[:, None, None] * tree.utilities)
    stopped = jax.jit(jax.vmap(lambda t: jaxsolve.run_until(
        solver, t, solver.init(t), TARGET, 10_000, EVERY), in_axes=(axes,)))(batch)
    alone = [RUN_UNTIL(solver, tree, solver.init(tree), TARGET / c, 10_000, EVERY)
             for c in scales]
    expected = [int(s.iterations) for s in alone]
    assert expected[0] < expected[1] < expected[2]  # the stops differ: a real test of freezing
    np.testing.assert_array_equal(stopped.iterations, expected)
    for k, (c, one) in enumerate(zip(scales, alone)):
        assert float(stopped.exploitability[k]) == pytest.approx(
            c * float(one.exploitability), rel=1e-12)
        straight = RUN(solver, tree, solver.init(tree), expected[k])
        np.testing.assert_allclose(stopped.state.average[k], straight.average, rtol=1e-12)
        assert int(stopped.state.iteration[k]) == expected[k]


def test_the_last_block_is_cut_by_max_iterations_and_a_state_at_the_target_is_kept():
    tree, solver = builtin_tree("kuhn_poker"), jaxsolve.cfr_plus()
    capped = RUN_UNTIL(solver, tree, solver.init(tree), 0.0, 25, EVERY)  # 0: never reached
    assert int(capped.iterations) == 25
    straight = RUN(solver, tree, solver.init(tree), 25)
    np.testing.assert_array_equal(capped.state.regrets, straight.regrets)
    assert float(capped.exploitability) == float(EXPLOITABILITY(tree, AVERAGE(tree, straight)))
    again = RUN_UNTIL(solver, tree, capped.state, 1.0, 1000, EVERY)  # uniform Kuhn: 0.458
    assert int(again.iterations) == 0
    np.testing.assert_array_equal(again.state.regrets, capped.state.regrets)
    assert int(RUN_UNTIL(solver, tree, solver.init(tree), 0.0, 0, EVERY).iterations) == 0


@pytest.mark.parametrize("algo", sorted(jaxsolve.SOLVERS))
def test_every_solver_stops_at_the_state_run_reaches(algo):
    """The stop is `run` for `iterations` steps, evaluated; reached or capped."""
    tree = builtin_tree("kuhn_poker")
    sampling = algo in SAMPLING_SOLVERS
    solver = jaxsolve.SOLVERS[algo](batch_size=64) if sampling else jaxsolve.SOLVERS[algo]()
    init = solver.init(tree, jax.random.PRNGKey(3)) if sampling else solver.init(tree)
    # uniform play: 0.458; every solver gets there within 200 iterations (mmd's last
    # iterate, at its default step, to 0.094 after 100)
    target = 0.1 if solver.last_iterate else 0.05
    stopped = RUN_UNTIL(solver, tree, init, target, 200, 20)
    n = int(stopped.iterations)
    assert 0 < n <= 200 and n % 20 == 0
    straight = RUN(solver, tree, init, n)
    for a, b in zip(jax.tree.leaves(stopped.state), jax.tree.leaves(straight)):
        np.testing.assert_array_equal(a, b)
    # the policy that converges: the average, or mmd's current one
    gap = float(EXPLOITABILITY(tree, jaxsolve.final_policy(tree, straight, solver=solver)))
    assert float(stopped.exploitability) == gap <= target
    if n > 20:  # the block before did not reach the target
        before = RUN(solver, tree, init, n - 20)
        policy = jaxsolve.final_policy(tree, before, solver=solver)
        assert float(EXPLOITABILITY(tree, policy)) > target


@pytest.mark.parametrize("kwargs, says", [
    ({"target": -1.0}, "target must be a finite number >= 0, got -1.0"),
    ({"target": "small"}, "target must be a finite number >= 0, got 'small'"),
    ({"max_iterations": 2.5}, r"max_iterations must be an integer in \[0, 2,147,483,647\]"),
    ({"max_iterations": -1}, r"max_iterations must be an integer in \[0, 2,147,483,647\], got -1"),
    ({"check_every": 0}, r"check_every must be an integer in \[1, 2,147,483,647\], got 0"),
    ({"check_growth_percent": 101}, r"check_growth_percent must be an integer in \[0, 100\], got 101"),
    ({"check_growth_percent": -1}, r"check_growth_percent must be an integer in \[0, 100\], got -1"),
])
def test_bad_arguments_are_named(kwargs, says):
    tree, solver = builtin_tree("kuhn_poker"), jaxsolve.cfr_plus()
    arguments = {"target": 1e-3, "max_iterations": 100, "check_every": 10, **kwargs}
    with pytest.raises(jaxsolve.ArgumentError, match=f"run_until: {says}"):
        jaxsolve.run_until(solver, tree, solver.init(tree), **arguments)


# ---------------------------------------------------------------------- the schedule
def test_the_growing_schedule_costs_a_tenth_of_a_run_and_stops_within_a_tenth():
    """Every 10 iterations to 100, then 10% of the iterations done apart: at most one
    check per 10 iterations (an evaluation costs about one iteration), and each check
    at most 10 iterations or 10% past the one before, so a run stops at most that far
    past the check that first could have stopped it. Python's and the compiled loop's
    gaps agree to the iteration, up to 2^31."""
    assert (CHECK_EVERY, CHECK_GROWTH_PERCENT) == (10, 10)
    checks = check_iterations(0, 100_000, CHECK_EVERY, CHECK_GROWTH_PERCENT)
    assert checks[:12] == [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 121]
    assert checks[-1] == 100_000 and len(checks) <= 100_000 // 10
    assert len(checks) < 100  # 10 to iteration 100, then about 24 a decade
    for before, after in zip([0, *checks], checks):
        assert after - before >= 10 and after - before <= max(10, -(-before // 10))
    assert check_iterations(0, 25, 10) == [10, 20, 25]  # fixed: the cap cuts the last gap
    assert check_iterations(30, 30, 10, 10) == []
    points = np.array([0, 1, 99, 100, 101, 1234, 10**6, 2**31 - 2], np.int64)
    compiled = jax.jit(lambda i: check_gap(i, 10, 10))(points.astype(np.int32))
    assert [check_gap(int(i), 10, 10) for i in points] == np.asarray(compiled).tolist()
    assert check_gap(2**31 - 2, 10, 100) == 2**31 - 2  # no int32 overflow on the way


def test_run_until_with_a_growing_schedule_checks_where_the_schedule_says_in_any_calls():
    """The gaps count the run's iterations (the state's), not the call's: a run in two
    calls, the first cut at a check, stops where one call stops, at a check of the
    schedule past one that had not reached the target."""
    tree, solver = builtin_tree("kuhn_poker"), jaxsolve.cfr_plus()
    one = RUN_UNTIL(solver, tree, solver.init(tree), 1e-4, 100_000, 10, 10)
    n = int(one.iterations)
    schedule = check_iterations(0, 100_000, 10, 10)
    assert n in schedule and n > 100
    before = RUN(solver, tree, solver.init(tree), schedule[schedule.index(n) - 1])
    assert float(EXPLOITABILITY(tree, AVERAGE(tree, before))) > 1e-4
    first = RUN_UNTIL(solver, tree, solver.init(tree), 1e-4, 100, 10, 10)
    assert int(first.iterations) == 100
    second = RUN_UNTIL(solver, tree, first.state, 1e-4, 100_000, 10, 10)
    assert 100 + int(second.iterations) == n
    np.testing.assert_array_equal(second.state.regrets, one.state.regrets)


# ---------------------------------------------------------------------- command line
def _solve(out, *extra):
    return cli.main(["solve", "kuhn_poker", "--out", str(out), "--quiet", "--x64",
                     "--eval-every", str(EVERY), *extra])


def test_solve_target_stops_where_openspiel_does_and_a_resume_stays(tmp_path, capsys,
                                                                   openspiel_stop):
    assert _solve(tmp_path, "--target", str(TARGET), "--iters", "5000") == 0
    printed = capsys.readouterr().out
    record = json.loads((tmp_path / STRATEGY).read_text())
    assert record["iterations"] == openspiel_stop[0] and record["target_reached"] is True
    assert f"<= 0.001 at iteration {openspiel_stop[0]}" in printed
    assert _solve(tmp_path, "--target", str(TARGET), "--iters", "6000", "--resume") == 0
    assert json.loads((tmp_path / STRATEGY).read_text())["iterations"] == openspiel_stop[0]


def test_solve_target_not_reached_says_so(tmp_path, capsys):
    assert _solve(tmp_path, "--target", "1e-9", "--iters", "30") == 0
    assert "Target NOT reached" in capsys.readouterr().out
    record = json.loads((tmp_path / STRATEGY).read_text())
    assert record["iterations"] == 30 and record["target_reached"] is False
    # Resumed with a looser target the run is past already: the record says where
    # the target was first met, not only where the run stands.
    history = json.loads((tmp_path / CONVERGENCE).read_text())
    first = next(r["iteration"] for r in history if r["exploitability"] <= 0.3)
    assert first < 30
    assert _solve(tmp_path, "--target", "0.3", "--iters", "30", "--resume") == 0
    printed = capsys.readouterr().out
    assert f"<= 0.3 at iteration 30 (first met at iteration {first})" in printed
    assert f"Checked every {EVERY} iterations; the last checks" in printed


def test_solve_target_stops_near_it_by_default_says_when_it_checked_and_ends_its_bar(
        tmp_path, capsys):
    """Without --eval-every a target run checks on the growing schedule (the README's
    `--target 1e-3 --iters 100000` checked every 2,000 and stopped 13 times below the
    target, its bar frozen at 2%): it stops at the first check at the target, the
    check before it was above, the summary lists the last checks, and the bar ends
    where the run stopped."""
    out = tmp_path / "run"
    assert cli.main(["solve", "kuhn_poker", "--out", str(out), "--target", "1e-4",
                     "--iters", "100000"]) == 0
    printed, bar = capsys.readouterr()
    record = json.loads((out / STRATEGY).read_text())
    history = json.loads((out / CONVERGENCE).read_text())
    stop = record["iterations"]
    assert [r["iteration"] for r in history] == TARGET_SCHEDULE.checks(0, stop)
    assert history[-1]["exploitability"] <= 1e-4 < history[-2]["exploitability"]
    assert record["target_reached"] and stop < 2000
    assert (record["eval_every"], record["check_growth_percent"]) == (10, 10)
    assert ("Checked every 10 iterations up to iteration 100, then every 10% of the "
            "iterations done; the last checks (iteration: exploitability): "
            f"{history[-3]['iteration']}: ") in printed
    assert f"{stop}: {history[-1]['exploitability']:.3g}" in printed
    final = bar.strip().split("\r")[-1]  # the bar's last drawing
    assert f" {stop}/{stop} " in final and "100%" in final, bar


def test_eval_every_past_iters_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for module in (sweep_command, game_spec):
        monkeypatch.setattr(module, "compile_game", None)  # compiling would fail
    assert cli.main(["solve", "kuhn_poker", "--eval-every", "5000", "--iters", "1000",
                     "--quiet"]) == cli.EXIT_USAGE
    assert ("--eval-every 5000 is more than --iters 1000: the run would check only at its "
            "end") in capsys.readouterr().err
    assert cli.main(["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--target", "0.1",
                     "--eval-every", "50", "--iters", "20"]) == cli.EXIT_USAGE
    assert "--eval-every 50 is more than --iters 20" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.float64  # --x64's stops and exploitabilities, each run alone to 1e-9
def test_sweep_target_gives_each_point_its_own_stop(tmp_path, capsys):
    """Maneuver detection's prior: each point's iterations are those of `run_until`
    on that point's game alone, though the sweep runs in chunks of 50 (its progress
    bar counts the points at the target); the one that needs more than the cap says
    so."""
    out = tmp_path / "sweep"
    priors = [(0.9, 0.1), (0.5, 0.5), (0.1, 0.9)]
    assert cli.main(["sweep", "maneuver_detection", "--vary", f"situation_probs={priors}",
                     "--target", "1e-4", "--iters", "1000", "--eval-every", "5", "--x64",
                     "--out", str(out)]) == 0
    printed, bar = capsys.readouterr()
    assert "2/3 at the target" in bar
    assert "until exploitability <= 0.0001 (checked every 5 iterations, at most 1000)" in printed
    assert printed.count("(cap, target not reached)") == 1
    record = json.loads((out / "sweep.json").read_text())
    assert record["target"] == 1e-4 and (out / "sweep.png").stat().st_size > 10_000
    solver = jaxsolve.cfr_plus()
    for point, prior in zip(record["points"], priors):
        tree = jaxsolve.compile_game(games.load("maneuver_detection", situation_probs=prior))
        alone = RUN_UNTIL(solver, tree, solver.init(tree), 1e-4, 1000, 5)
        assert point["iterations"] == int(alone.iterations)
        assert point["exploitability"] == pytest.approx(float(alone.exploitability), rel=1e-9)
    assert [p["iterations"] == 1000 for p in record["points"]] == [False, True, False]


def test_a_sweep_bar_ends_where_its_games_stopped(tmp_path, capsys):
    """Every point reaches a loose target long before the cap, inside the first call
    of the sweep: the bar ends at the iterations the longest point ran, not at the
    cap."""
    out = tmp_path / "sweep"
    assert cli.main(["sweep", "maneuver_detection", "--vary", "situation_probs=[[0.9, 0.1], "
                     "[0.5, 0.5]]", "--target", "0.05", "--iters", "5000", "--eval-every", "5",
                     "--out", str(out)]) == 0
    _, bar = capsys.readouterr()
    longest = max(p["iterations"] for p in json.loads((out / "sweep.json").read_text())["points"])
    assert 0 < longest < 5000
    final = bar.strip().split("\r")[-1]  # the bar's last drawing
    assert f" {longest}/{longest} " in final and "2/2 at the target" in final, bar


def test_sweep_eval_every_needs_a_target_and_is_refused_before_any_work(
        tmp_path, capsys, monkeypatch):
    """Refused before a game is compiled or runs/<game>-sweep-<key>/ is made (the
    current folder is the test's own, so a regression writes nothing in the checkout)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sweep_command, "compile_game", None)  # compiling would fail
    assert cli.main(["sweep", "spoof", "--vary", "max_rounds=[1, 2]",
                     "--eval-every", "5"]) == cli.EXIT_USAGE
    assert "--eval-every applies with --target only" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.float64  # --x64's stops, each point's alone to the iteration
def test_sweep_target_checks_on_the_growing_schedule_by_default(tmp_path, capsys):
    """Without --eval-every each point stops at a check of the schedule `solve` uses,
    where `run_until` with that schedule stops it alone, though the sweep runs in
    chunks; the summary says when it checked."""
    out = tmp_path / "sweep"
    priors = [(0.9, 0.1), (0.5, 0.5)]
    assert cli.main(["sweep", "maneuver_detection", "--vary", f"situation_probs={priors}",
                     "--target", "1e-4", "--iters", "3000", "--out", str(out),
                     "--quiet", "--x64"]) == 0
    printed = capsys.readouterr().out
    assert ("(checked every 10 iterations up to iteration 100, then every 10% of the "
            "iterations done, at most 3000)") in printed
    record = json.loads((out / "sweep.json").read_text())
    assert (record["eval_every"], record["check_growth_percent"]) == (10, 10)
    device = jax.devices()[0]  # the device it ran on, printed and recorded
    assert f"Solved on device {device} ({device.device_kind}) with JAX" in printed
    assert (record["device"], record["jax"]) == (f"{device} ({device.device_kind})",
                                                 jax.__version__)
    solver = jaxsolve.cfr_plus()
    for point, prior in zip(record["points"], priors):
        assert point["iterations"] in TARGET_SCHEDULE.checks(0, 3000)
        tree = jaxsolve.compile_game(games.load("maneuver_detection", situation_probs=prior))
        alone = RUN_UNTIL(solver, tree, solver.init(tree), 1e-4, 3000, 10, 10)
        assert point["iterations"] == int(alone.iterations)


def test_a_sweep_in_chunks_ends_where_each_game_alone_ends(tmp_path):
    """37 iterations in chunks of 2 (the last one 1): every point's strategy is the
    average policy of 37 iterations of its game alone."""
    out = tmp_path / "sweep"
    priors = [(0.9, 0.1), (0.3, 0.7)]
    assert cli.main(["sweep", "maneuver_detection", "--vary", f"situation_probs={priors}",
                     "--iters", "37", "--out", str(out), "--quiet"]) == 0
    solver = jaxsolve.cfr_plus()
    for point, prior in zip(json.loads((out / "sweep.json").read_text())["points"], priors):
        tree = jaxsolve.compile_game(games.load("maneuver_detection", situation_probs=prior))
        alone = jaxsolve.table(tree, AVERAGE(tree, RUN(solver, tree, solver.init(tree), 37)))
        assert point["iterations"] == 37 and point["strategy"].keys() == alone.keys()
        for name, row in alone.items():
            for action, p in row.items():
                # float32 (eps 1.2e-7): 37 iterations batched and alone, summed in
                # other orders, round differently.
                assert point["strategy"][name][action] == pytest.approx(p, abs=1e-6)
