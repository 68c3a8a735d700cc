"""The code of the README and of the docs guides runs as printed (on Kuhn instead of
Leduc, or with fewer iterations, for time), and prints what the text says.

The README keeps its first example; the other examples live on the docs pages whose
subject they are (docs/getting-started.md, sweeps.md, solvers.md, abstraction.md,
alphazero.md), and are checked here the same way."""

import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest


ROOT = Path(__file__).resolve().parents[2]


def _block(containing: str, page: str = "README.md") -> str:
    """The python block of `page` (README.md, or a docs page) that contains `containing`."""
    text = (ROOT / page).read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if containing in b]
    assert len(blocks) == 1, f"{len(blocks)} python blocks of {page} contain {containing!r}"
    return blocks[0]


def test_readme_example_runs(capsys):
    block = _block("jaxsolve.sweep")
    assert "jaxsolve.run" in block
    scope = {}
    exec(compile(block.replace('"leduc_poker"', '"kuhn_poker"'), "README.md", "exec"), scope)
    states, tree = scope["states"], scope["tree"]
    assert states.average.shape == (64,) + np.shape(tree.legal)
    first, sweep = capsys.readouterr().out.split("\n", 1)
    exploitability, value = first.split(" ", 1)
    assert float(exploitability) < 1e-3 and "-0.0555" in value  # Kuhn's value is -1/18
    # CFR+ is invariant to scaling the payoffs (regret matching takes ratios, the floor
    # at 0 commutes with a positive factor), so every game of the sweep plays the
    # unscaled game's policy and its exploitability scales with the payoffs; in float32
    # the rounding of scaled regrets moves some trajectories by up to ~2% (measured
    # 1.8%), while the scales span a factor of 4.
    printed = np.array(sweep.replace("[", " ").replace("]", " ").split(), float)
    scales = np.linspace(0.5, 2, 64)
    np.testing.assert_allclose(printed, scales * float(exploitability), rtol=0.04)


def test_getting_started_openspiel_example_agrees_with_pyspiel(capsys):
    """Getting started's round trip to OpenSpiel: pyspiel's own exploitability of our
    policy equals ours (on Kuhn, 200 iterations, for time)."""
    pytest.importorskip("pyspiel")

    import jaxsolve

    block = _block("to_tabular_policy", "docs/getting-started.md")
    scope = {"jaxsolve": jaxsolve, "solver": jaxsolve.cfr_plus()}
    exec(compile(block.replace('"leduc_poker"', '"kuhn_poker"').replace(", 1000)", ", 200)"),
                 "README.md", "exec"), scope)
    theirs, ours = map(float, capsys.readouterr().out.split())
    assert 0 < theirs < 0.01 and ours == pytest.approx(theirs, abs=1e-6)


def test_getting_started_strategy_json_round_trip(tmp_path, monkeypatch, capsys):
    """Getting started's block reads back the strategy.json that `jaxsolve solve` wrote
    (Kuhn, 100 iterations of CFR+ instead of the page's 1000, for time) as the policy
    the command saved: the average policy of its checkpoint, with the exploitability
    the command recorded, each player's value within 1e-3 of Kuhn's -1/18 and 1/18,
    and the keys the page's table lists."""
    import json

    import jaxsolve
    from jaxsolve import cli
    from jaxsolve.checkpoint import load_checkpoint

    monkeypatch.chdir(tmp_path)  # the block reads runs/kuhn_poker-cfr+/ in the working folder
    assert cli.main(["solve", "kuhn_poker", "--algo", "cfr+", "--iters", "100", "--quiet"]) == 0
    capsys.readouterr()
    scope = {}
    exec(compile(_block("from_table", "docs/getting-started.md"), "docs/getting-started.md",
                 "exec"), scope)
    ours, recorded = map(float, capsys.readouterr().out.split())
    assert 0 < recorded < 0.01 and ours == pytest.approx(recorded, abs=1e-7)
    tree, policy = scope["tree"], scope["policy"]
    state, _ = load_checkpoint(tmp_path / "runs" / "kuhn_poker-cfr+" / "checkpoint.npz")
    np.testing.assert_allclose(np.asarray(policy), np.asarray(jaxsolve.average_policy(tree, state)),
                               atol=1e-7)
    np.testing.assert_allclose(np.asarray(jaxsolve.policy_value(tree, policy)),
                               [-1 / 18, 1 / 18], atol=1e-3)
    record = json.loads((tmp_path / "runs" / "kuhn_poker-cfr+" / "strategy.json").read_text())
    listed = {"game", "params", "algo", "iterations", "players", "final", "exploitability",
              "value", "strategy", "device", "jax"}
    assert set(record) == listed
    page = (ROOT / "docs" / "getting-started.md").read_text()
    assert all(f"`{key}`" in page for key in listed)


def test_sweeps_run_until_example_runs(capsys):
    """The sweeps page's `run_until` block, on Kuhn with the sweep of its first block: CFR+
    first reaches 1e-3 at iteration 130, as OpenSpiel's CFRPlusSolver does
    (test_stopping.py). The sweep's end points scale the payoffs by 0.5 and 2, powers
    of two, so CFR+ (scale-invariant: regret matching takes ratios) plays exactly the
    unscaled game's iterates there, c times as exploitable: they stop where the
    unscaled game reaches 1e-3 / c. (Other scales round differently, and Kuhn's
    regrets that are exactly 0 in exact arithmetic then tip either way: their stops
    need not rise with c.)"""
    import jax

    import jaxsolve
    from jaxsolve import games

    tree = jaxsolve.compile_game(games.load("kuhn_poker"))
    scales = np.linspace(0.5, 2, 64)
    batch, axes = jaxsolve.sweep(tree, utilities=scales[:, None, None] * tree.utilities)
    scope = {"jax": jax, "jaxsolve": jaxsolve, "tree": tree, "solver": jaxsolve.cfr_plus(),
             "batch": batch, "axes": axes}
    exec(compile(_block("run_until", "docs/sweeps.md"), "docs/sweeps.md", "exec"), scope)
    first = capsys.readouterr().out.split()
    assert int(first[0]) == 130 and float(first[1]) <= 1e-3
    stops = np.asarray(scope["stops"].iterations)
    assert stops.shape == (64,)
    solver = jaxsolve.cfr_plus()
    for k, c in ((0, 0.5), (63, 2.0)):
        alone = jaxsolve.run_until(solver, tree, solver.init(tree), 1e-3 / c, 100_000, 10)
        assert stops[k] == int(alone.iterations)
    assert np.all(np.asarray(scope["stops"].exploitability) <= 1e-3)


def test_solvers_custom_solver_example_runs(capsys):
    """The solver page's own-solver block, on Kuhn: CFR with Hedge is no-regret, so its
    average nears equilibrium (uniform play's exploitability is 11/24); and player 0's
    counterfactual values at its first infosets (no own decision above them) add up to
    its expected value, which `policy_value` computes from reach products instead."""
    import jax

    import jaxsolve
    from jaxsolve import games

    tree = jaxsolve.compile_game(games.load("kuhn_poker"))
    policy = jaxsolve.uniform_policy(tree)
    scope = {"jax": jax, "jaxsolve": jaxsolve, "tree": tree, "policy": policy}
    exec(compile(_block("cfr_variant", "docs/solvers.md"), "docs/solvers.md", "exec"), scope)
    assert float(capsys.readouterr().out) < 0.01
    first = np.asarray(tree.infoset_parent) == tree.sizes.empty_sequence
    first &= np.asarray(tree.infoset_player) == 0
    assert first.sum() == 3  # one per card
    # In float32: two routes to 1/8 (uniform Kuhn's value), each a few roundings off.
    assert float(np.asarray(scope["v"])[first].sum()) == pytest.approx(
        float(jaxsolve.policy_value(tree, policy)[0]), abs=1e-6)


def test_solvers_exact_example_prints_leducs_published_value(capsys):
    """The solver page's exact-equilibrium block, as printed on Leduc: the value it
    prints is the published -0.0856064 (to its digits) and the exploitability it
    prints is float32 round-off."""
    pytest.importorskip("scipy")
    import jaxsolve
    from jaxsolve import games

    block = _block("solve_exact", "docs/solvers.md")
    exec(compile(block, "docs/solvers.md", "exec"), {"jaxsolve": jaxsolve, "games": games})
    value, exploitability, report = capsys.readouterr().out.splitlines()
    assert float(value) == pytest.approx(-0.0856064, abs=1e-6)
    assert abs(float(exploitability)) < 1e-6
    assert "Optimal" in report


def _leduc(jaxsolve, games):
    return jaxsolve.compile_game(games.load("leduc_poker"))


def test_solvers_sampling_example_runs():
    """The solver page's Monte-Carlo CFR block (external sampling, a sampling scheme of
    one's own given as masks) runs as printed on a Leduc tree, with 100 iterations
    instead of 1000; both sampled solvers' averages have the tree's [I, A] shape."""
    import jax

    import jaxsolve
    from jaxsolve import games

    block = _block("sampled_cfr", "docs/solvers.md")
    scope = {"jax": jax, "np": np, "games": games, "jaxsolve": jaxsolve,
             "tree": _leduc(jaxsolve, games)}
    small = block.replace(", 1000)", ", 100)")
    assert small != block
    exec(compile(small, "docs/solvers.md", "exec"), scope)
    tree = scope["tree"]
    assert scope["state"].average.shape == np.shape(tree.legal)
    assert scope["mine_state"].average.shape == np.shape(tree.legal)


def test_abstraction_example_runs(capsys):
    """The abstraction page's block (a final strategy, an abstraction of Leduc that
    forgets the private card) runs as printed on a Leduc tree and a short CFR+ state,
    with 100 iterations instead of 1000; the thresholded policy and the lifted coarse
    policy are valid policies of the true game, so the printed exploitability is a
    finite positive number."""
    import jax

    from jaxsolve import games
    import jaxsolve

    block = _block("abstraction.abstract", "docs/abstraction.md")
    assert "final_policy" in block
    tree = _leduc(jaxsolve, games)
    solver = jaxsolve.cfr_plus()
    scope = {"jax": jax, "np": np, "games": games, "jaxsolve": jaxsolve, "tree": tree,
             "state": jaxsolve.run(solver, tree, solver.init(tree), 100)}
    exec(compile(block.replace(", 1000)", ", 100)"), "docs/abstraction.md", "exec"), scope)
    np.testing.assert_allclose(np.asarray(scope["policy"], np.float64).sum(1), 1.0, atol=1e-5)
    lifted = np.asarray(scope["lifted"], np.float64)
    assert lifted.shape == np.shape(tree.legal)
    np.testing.assert_allclose(lifted.sum(1), 1.0, atol=1e-5)
    # The printed exploitability of the lifted policy in the true game equals
    # OpenSpiel's own (Python) best responses to it, NashConv / 2, run on the same
    # Leduc game through `as_openspiel_game`.
    pytest.importorskip("pyspiel")
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability

    from jaxsolve.openspiel import as_openspiel_game

    view = as_openspiel_game(scope["game"])
    tabular = os_policy.TabularPolicy(view)
    names = tree.names.infosets
    for key, row in tabular.state_lookup.items():
        tabular.action_probability_array[row] = lifted[names.index(key)]
    printed = float(capsys.readouterr().out)
    assert printed == pytest.approx(exploitability.nash_conv(view, tabular) / 2, rel=1e-5)


def test_alphazero_example_runs(tmp_path, monkeypatch, capsys):
    """The AlphaZero page's training block runs as printed, on a 3x3 board for 2
    iterations (for time), and what it prints is the evaluation of the checkpoint it
    saved: reloading az.npz and evaluating those parameters again, with the same key,
    gives the printed dict exactly (the rates themselves are checked against hand-made agents in
    test_alphazero_train)."""
    import jax

    from jaxsolve.alphazero import evaluate, exact, train

    monkeypatch.chdir(tmp_path)  # it saves az.npz in the working folder
    # Record the block's call to evaluate and keep its compiled matches, so that the
    # re-evaluation below reuses them instead of compiling the match again.
    real, calls = evaluate.evaluate, []

    def recording(*args, **kwargs):
        kwargs.setdefault("matches", {})
        calls.append((args, kwargs))
        return real(*args, **kwargs)
    monkeypatch.setattr(evaluate, "evaluate", recording)
    block = _block("TrainConfig.recipe", "docs/alphazero.md")
    small = block.replace("grid_size=5", "grid_size=3").replace("(cfg, 60)", "(cfg, 2)")
    assert small != block
    scope = {}
    exec(compile(small, "docs/alphazero.md", "exec"), scope)
    assert (tmp_path / "az.npz").exists() and int(scope["state"].step) == 2
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    result = ast.literal_eval(printed)  # the dict evaluate returned, as printed
    assert set(result) == {"win_vs_random_as_evader", "win_vs_random_as_defender", "mistake_rate"}
    assert all(0 <= v <= 1 for v in result.values())

    # The saved checkpoint holds the trained parameters, and evaluating them again
    # (a fresh exact solution of the game, the block's key) prints the same dict.
    cfg, graphdef = scope["cfg"], scope["graphdef"]
    assert len(calls) == 1
    call = inspect.signature(real).bind(*calls[0][0], **calls[0][1]).arguments
    assert call["env"] == cfg.env and call["cfg"] == cfg.search
    loaded = train.load(str(tmp_path / "az.npz"), train.init(cfg)[1], config=cfg)
    for a, b in zip(jax.tree.leaves(scope["state"].params), jax.tree.leaves(loaded.params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    again = real(cfg.env, cfg.search, graphdef, loaded.params, exact.solve(cfg.env),
                 call["key"], matches=call["matches"])
    assert again == result


def test_solvers_sweep_example_matches_separate_runs():
    """The solver page's hyperparameter grid, as printed but on Kuhn with 100 iterations:
    64 settings in one vmapped call, each equal to a run of the same settings given as
    Python numbers (two checked), and all below the uniform policy's exploitability
    (11/24, half of Kuhn's uniform NashConv 11/12)."""
    import jax

    import jaxsolve
    from jaxsolve import games

    block = _block("pdcfr_plus(alpha, gamma)", "docs/solvers.md")
    small = block.replace('"leduc_poker"', '"kuhn_poker"').replace(", 1000)", ", 100)")
    assert small.count("kuhn_poker") == 1 and ", 100)" in small
    scope = {}
    exec(compile(small, "docs/solvers.md", "exec"), scope)
    values, tree = np.asarray(scope["values"]), scope["tree"]
    assert values.shape == (64,)
    assert np.all(values < 11 / 24)
    for i in (9, 50):
        alpha, gamma = float(scope["alpha"][i]), float(scope["gamma"][i])
        solver = jaxsolve.pdcfr_plus(alpha, gamma)
        state = jaxsolve.run(solver, tree, solver.init(tree), 100)
        alone = float(jaxsolve.exploitability(tree, jaxsolve.average_policy(tree, state)))
        assert values[i] == pytest.approx(alone, rel=1e-5, abs=1e-7)
