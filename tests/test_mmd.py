"""Magnetic mirror descent (`jaxsolve.mmd`), held to its authors' code and to LiteEFG.

The authors' code (github.com/ssokota/mmd at 0505c94, run in float64;
`tests/reference/mmd/README.md`) with both Nash settings of its examples: the
exploitability of the current policy after each of 200 iterations. Last-iterate
dynamics do not amplify round-off as regret matching's floors and switches do, so
Kuhn poker agrees to round-off over all 200 (measured 4.4e-16). On Leduc poker the
authors' code also floors the illegal actions of each OpenSpiel row at 1e-10 and plays
the legal entries unnormalised, where jaxsolve's rows hold no illegal mass: the curves
differ by that, at most 1.8e-10 (measured). LiteEFG's MMD, an independent
implementation of the same update without a floor, is `mmd(..., floor=0)` to
round-off on both games, Leduc included.
"""

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsolve
from conftest import EXPLOITABILITY, RUN, builtin_tree
from jaxsolve import kernel
from jaxsolve.cli import _solver_args
from toy_games import SpecGame, decision, leaf

pytestmark = pytest.mark.float64

REFERENCE = pathlib.Path(__file__).parent / "reference" / "mmd"


# The schedules of the authors' examples/efg/nash.py ("annealing_temperature"), as
# module-level functions: one solver, one compilation, for every test that uses them.
def _inverse_sqrt(t):
    return 1 / jnp.sqrt(t)


def _five_over_sqrt(t):
    return 5 / jnp.sqrt(t)


SETTINGS = {
    ("annealing_temperature", "kuhn_poker"): jaxsolve.mmd(_inverse_sqrt, _inverse_sqrt, 0.0),
    ("annealing_temperature", "leduc_poker"): jaxsolve.mmd(_five_over_sqrt, _inverse_sqrt, 0.0),
    ("moving_magnet", "kuhn_poker"): jaxsolve.mmd(1.0, 0.1, 0.05),
    ("moving_magnet", "leduc_poker"): jaxsolve.mmd(1.0, 0.1, 0.05),
}
LITEEFG = jaxsolve.mmd(0.05, 0.005, 0.0, floor=0.0)  # its class defaults, no floor


def curve(solver, tree, iterations):
    """The exploitability of the current policy after each of `iterations`."""
    state, out = solver.init(tree), []
    for _ in range(iterations):
        state = RUN(solver, tree, state, 1)
        out.append(float(EXPLOITABILITY(tree, jaxsolve.current_policy(tree, state))))
    return np.array(out)


def reference_curve(key):
    runs = json.loads((REFERENCE / "exploitability.json").read_text())["runs"]
    return np.array(runs[key]["exploitability"])


@pytest.mark.parametrize("setting,game,atol", [
    ("annealing_temperature", "kuhn_poker", 1e-13),   # measured 1.9e-16
    ("moving_magnet", "kuhn_poker", 1e-13),           # measured 4.4e-16
    ("annealing_temperature", "leduc_poker", 5e-10),  # measured 1.4e-10: the illegal floor
    ("moving_magnet", "leduc_poker", 5e-10),          # measured 1.8e-10: likewise
])
def test_current_policy_after_each_iteration_equals_the_authors(setting, game, atol):
    expected = reference_curve(f"sokota/{setting}/{game}")
    ours = curve(SETTINGS[setting, game], builtin_tree(game), len(expected))
    np.testing.assert_allclose(ours, expected, rtol=0, atol=atol)


@pytest.mark.parametrize("game,through,atol", [
    ("kuhn_poker", 200, 1e-13),   # measured 5.3e-16
    ("leduc_poker", 150, 1e-13),  # measured 1.3e-15; the two part slowly after 190
    ("leduc_poker", 200, 1e-11),  # (1.1e-12 at 200)
])
def test_without_the_floor_it_is_liteefgs_mmd(game, through, atol):
    expected = reference_curve(f"liteefg/{game}")[:through]
    ours = curve(LITEEFG, builtin_tree(game), through)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=atol)


def two_step_game():
    """Player 0 plays L or R; R ends the game, worth 0.5 to player 0; after L player 1
    (who sees it) plays a, b or c, worth 1, -2 and 0 to player 0 (zero-sum)."""
    after_l = decision(1, "after L", leaf(1.0, -1.0), leaf(-2.0, 2.0), leaf(0.0, 0.0))
    return SpecGame(decision(0, "start", after_l, leaf(0.5, -0.5)))


def by_hand(policy, magnet, q, temperature, learning_rate, magnet_learning_rate, floor):
    """The update as the authors' code writes it (mmd/efg/learners.py, with
    mmd/utils.py's project): the energies, exp(e - max e), max(., floor), normalised;
    the magnet mag^(1 - mu) * pi'^mu, floored and normalised the same way."""
    policy, magnet, q = (np.asarray(x, np.float64) for x in (policy, magnet, q))
    pull = learning_rate * temperature
    energy = (np.log(policy) + pull * np.log(magnet) + learning_rate * q) / (1 + pull)
    x = np.maximum(np.exp(energy - energy.max()), floor)
    new = x / x.sum()
    m = np.maximum(magnet**(1 - magnet_learning_rate) * new**magnet_learning_rate, floor)
    return new, m / m.sum()


def test_one_step_by_hand():
    """One step from a state that is not uniform, on `two_step_game`.

    Q-values, by hand: player 0's are its expected payoffs after each action,
    Q(L) = 0.7 * 1 + 0.3 * (-2) + 1e-20 * 0 = 0.1 and Q(R) = 0.5. Player 1's are its
    payoffs after L, (-1, 2, 0), whatever the probability 0.25 that player 0 plays L:
    the counterfactual values 0.25 * (-1, 2, 0) over that reach. Action c's weight
    exp(e_c - e_b) is about 3e-17, under the floor 1e-10, which sets it.
    """
    tree = jaxsolve.compile_game(two_step_game())
    start, after = (tree.names.infosets.index(name) for name in ("start", "after L"))
    settings = dict(temperature=0.5, learning_rate=0.4, magnet_learning_rate=0.25,
                    floor=1e-10)
    solver = jaxsolve.mmd(**settings)
    policy, magnet = np.zeros((2, 3)), np.zeros((2, 3))
    policy[start, :2], magnet[start, :2] = [0.25, 0.75], [0.5, 0.5]
    policy[after], magnet[after] = [0.7, 0.3, 1e-20], [0.2, 0.3, 0.5]
    state = jaxsolve.MMDState(jnp.asarray(policy), jnp.asarray(magnet),
                              jnp.asarray(3, jnp.int32))

    expected = {start: by_hand(policy[start, :2], magnet[start, :2], [0.1, 0.5], **settings),
                after: by_hand(policy[after], magnet[after], [-1.0, 2.0, 0.0], **settings)}
    # the best action's weight is 1: c's, floored, is 1e-10 of it
    assert expected[after][0][2] / expected[after][0].max() == pytest.approx(1e-10, rel=1e-12)
    rule = solver.steps.keywords["rule"]
    for stepped in (RUN(solver, tree, state, 1), kernel.padded_step(tree, state, rule)):
        assert int(stepped.iteration) == 4
        for row, (new_policy, new_magnet) in expected.items():
            width = len(new_policy)
            np.testing.assert_allclose(np.asarray(stepped.policy[row, :width]), new_policy,
                                       rtol=1e-14, atol=0)
            np.testing.assert_allclose(np.asarray(stepped.magnet[row, :width]), new_magnet,
                                       rtol=1e-14, atol=0)
        assert float(stepped.policy[start, 2]) == float(stepped.magnet[start, 2]) == 0.0


def test_an_infoset_never_reached_keeps_its_policy_and_magnet():
    """Player 0 never plays L (no floor keeps it): player 1's infoset has reach 0 and
    no Q-value, so its rows stay as they are; player 0's still move."""
    tree = jaxsolve.compile_game(two_step_game())
    start, after = (tree.names.infosets.index(name) for name in ("start", "after L"))
    solver = jaxsolve.mmd(0.5, 0.4, 0.25, floor=0.0)
    policy, magnet = np.zeros((2, 3)), np.zeros((2, 3))
    policy[start, :2], magnet[start, :2] = [0.0, 1.0], [0.5, 0.5]
    policy[after], magnet[after] = [0.7, 0.2, 0.1], [0.2, 0.3, 0.5]
    state = jaxsolve.MMDState(jnp.asarray(policy), jnp.asarray(magnet),
                              jnp.zeros((), jnp.int32))
    for stepped in (RUN(solver, tree, state, 1),
                    kernel.padded_step(tree, state, solver.steps.keywords["rule"])):
        np.testing.assert_array_equal(np.asarray(stepped.policy[after]), policy[after])
        np.testing.assert_array_equal(np.asarray(stepped.magnet[after]), magnet[after])
        # log 0 = -inf: L keeps probability 0 without a floor; the magnet moves towards R
        np.testing.assert_array_equal(np.asarray(stepped.policy[start]), [0.0, 1.0, 0.0])
        assert float(stepped.magnet[start, 1]) > 0.5


def test_packed_and_padded_formulations_agree_on_leduc():
    """The padded rows (a tree where a player forgets) run the same update, illegal
    actions and a schedule included."""
    tree = builtin_tree("leduc_poker")
    solver = SETTINGS["annealing_temperature", "leduc_poker"]
    packed = RUN(solver, tree, solver.init(tree), 3)
    padded, step = solver.init(tree), jax.jit(kernel.padded_step, static_argnums=2)
    for _ in range(3):
        padded = step(tree, padded, solver.steps.keywords["rule"])
    for field in ("policy", "magnet"):
        np.testing.assert_allclose(np.asarray(getattr(packed, field)),
                                   np.asarray(getattr(padded, field)), rtol=1e-13, atol=1e-15)
    assert int(padded.iteration) == int(packed.iteration) == 3


def test_a_traced_temperature_sweeps_under_vmap():
    """Temperatures traced: one compiled call, each the solver of a Python number."""
    tree = builtin_tree("kuhn_poker")

    def policy(temperature):
        solver = jaxsolve.mmd(temperature, 0.1, 0.05)
        return jaxsolve.run(solver, tree, solver.init(tree), 15).policy

    temperatures = [0.5, 2.0]
    swept = jax.jit(jax.vmap(policy))(jnp.array(temperatures))
    for k, temperature in enumerate(temperatures):
        alone = RUN(jaxsolve.mmd(temperature), tree, jaxsolve.mmd(temperature).init(tree), 15)
        np.testing.assert_allclose(np.asarray(swept[k]), np.asarray(alone.policy),
                                   rtol=0, atol=1e-14)
    assert not np.allclose(np.asarray(swept[0]), np.asarray(swept[1]))


def test_run_until_and_final_policy_read_the_current_policy():
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.mmd()
    stopped = jaxsolve.run_until(solver, tree, solver.init(tree), 0.1, 1000, check_every=10)
    current = jaxsolve.current_policy(tree, stopped.state)
    assert float(stopped.exploitability) == pytest.approx(
        float(EXPLOITABILITY(tree, current)), abs=1e-15)
    assert float(stopped.exploitability) <= 0.1
    # the first check at or below the target: the one ten iterations before was above
    earlier = RUN(solver, tree, solver.init(tree), int(stopped.iterations) - 10)
    assert float(EXPLOITABILITY(tree, jaxsolve.current_policy(tree, earlier))) > 0.1
    for policy in (jaxsolve.final_policy(tree, stopped.state),
                   jaxsolve.final_policy(tree, stopped.state, solver=solver),
                   jaxsolve.current_policy(tree, stopped.state, solver)):
        np.testing.assert_array_equal(np.asarray(policy), np.asarray(current))
    with pytest.raises(jaxsolve.ArgumentTypeError, match="keeps no average"):
        jaxsolve.average_policy(tree, stopped.state)


def test_the_built_in_is_named_registered_and_checked():
    solver = jaxsolve.mmd()
    assert jaxsolve.SOLVERS["mmd"]() is solver and solver.name == "mmd"
    assert solver.last_iterate and solver.state_type is jaxsolve.MMDState
    assert jaxsolve.mmd(0.5).name == "mmd(0.5,0.1,0.05,1e-10)"
    assert SETTINGS["annealing_temperature", "kuhn_poker"].name == (
        "mmd(schedule,schedule,0,1e-10)")
    assert jaxsolve.mmd(_inverse_sqrt, _inverse_sqrt, 0.0) is SETTINGS[
        "annealing_temperature", "kuhn_poker"]  # equal schedules: the same solver
    assert _solver_args.settable("mmd") == ["temperature", "learning_rate",
                                            "magnet_learning_rate", "floor"]
    tree = builtin_tree("leduc_poker")
    state = solver.init(tree)
    np.testing.assert_array_equal(np.asarray(state.policy),
                                  np.asarray(jaxsolve.uniform_policy(tree)))
    for bad, says in (({"temperature": -1.0}, "temperature must"),
                      ({"learning_rate": 0.0}, "learning_rate must"),
                      ({"magnet_learning_rate": 1.5}, "magnet_learning_rate must"),
                      ({"floor": 1.0}, "floor must")):
        with pytest.raises(jaxsolve.ArgumentError, match=says):
            jaxsolve.mmd(**bad)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="MMDState"):
        jaxsolve.run(solver, tree, jaxsolve.cfr_plus().init(tree), 1)


def test_a_fixed_temperature_and_magnet_converge_to_the_qre():
    """With tau and the (uniform) magnet fixed, a fixed point pi of the update has
    log pi = (log pi + eta tau log mag + eta Q) / (1 + eta tau) + c, i.e.
    pi proportional to mag * exp(Q / tau) at every infoset: the agent QRE of
    temperature tau. Q is computed here with the public evaluation, not the kernel:
    the counterfactual
    values of the policy over those of the same tree with every payoff 1 (the
    infosets' reach by chance and the other player)."""
    tree = builtin_tree("kuhn_poker")
    tau = 0.5
    solver = jaxsolve.mmd(tau, 0.5, 0.0)  # contracts by about 1 / (1 + 0.25) a step
    policy = np.asarray(RUN(solver, tree, solver.init(tree), 300).policy)
    ones = tree.replace(utilities=np.ones_like(tree.utilities))
    owner = np.asarray(tree.infoset_player)
    q = np.zeros_like(policy)
    for p in range(2):
        values, _ = jaxsolve.counterfactual_values(tree, policy, p)
        reach, _ = jaxsolve.counterfactual_values(ones, policy, p)
        mine = owner == p
        q[mine] = np.asarray(values)[mine] / np.asarray(reach)[mine]
    qre = np.exp((q - q.max(axis=1, keepdims=True)) / tau)
    np.testing.assert_allclose(policy, qre / qre.sum(axis=1, keepdims=True), rtol=0,
                               atol=1e-13)  # measured 3.9e-16
    assert policy.min() > 1e-3  # fully mixed (measured 2.5e-3), as no Nash of Kuhn is
