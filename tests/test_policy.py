"""Readable strategy tables and final-strategy transforms."""

import numpy as np
import pytest

import jaxsolve
from conftest import builtin_tree


def test_table_round_trip_and_names():
    tree = builtin_tree("kuhn_poker")
    rng = np.random.default_rng(0)
    policy = np.where(tree.legal, rng.uniform(size=np.shape(tree.legal)), 0)
    policy /= policy.sum(1, keepdims=True)
    table = jaxsolve.table(tree, policy)
    assert len(table) == 12
    assert all(set(row) == {"Pass", "Bet"} for row in table.values())
    # from_table gives the default float type (float32): the policy rounded to it.
    np.testing.assert_allclose(jaxsolve.from_table(tree, table), policy, rtol=2**-24)
    only = jaxsolve.table(tree, policy, player=1)
    assert len(only) == 6
    # Keyed by action id, through JSON (whose keys are text): the same policy.
    import json  # noqa: PLC0415
    by_id = {name: {a: float(policy[i, a]) for a in range(2)}
             for i, name in enumerate(tree.names.infosets)}
    rounded = policy.astype(np.asarray(jaxsolve.from_table(tree, table)).dtype)
    np.testing.assert_array_equal(jaxsolve.from_table(tree, by_id), rounded)
    np.testing.assert_array_equal(jaxsolve.from_table(tree, json.loads(json.dumps(by_id))),
                                  rounded)
    with pytest.raises(jaxsolve.GameError, match=r"'2' is not a legal action"):
        jaxsolve.from_table(tree, {tree.names.infosets[0]: {"2": 1.0}})


def test_table_keeps_actions_that_share_a_name():
    # A game whose action_to_string names two actions alike must not get a row keyed by
    # name that keeps one of their probabilities (summing to less than 1), which
    # from_table would then refuse. Kuhn with both actions named "Bet" at every infoset:
    import dataclasses  # noqa: PLC0415
    kuhn = builtin_tree("kuhn_poker")
    names = kuhn.names
    tree = dataclasses.replace(kuhn, names=type(names).make(
        names.game, names.infosets, [["Bet", "Bet"]] * len(names.infosets)))
    policy = np.tile([0.25, 0.75], (12, 1))
    table = jaxsolve.table(tree, policy)
    assert all(row == {"Bet (id 0)": 0.25, "Bet (id 1)": 0.75} for row in table.values())
    np.testing.assert_array_equal(jaxsolve.from_table(tree, table), policy)


def test_from_table_rejects_bad_rows():
    tree = builtin_tree("kuhn_poker")
    name = tree.names.infosets[0]
    with pytest.raises(jaxsolve.GameError, match="does not have"):
        jaxsolve.from_table(tree, {"nope": {"Pass": 1.0}})
    with pytest.raises(jaxsolve.GameError, match="not a legal action"):
        jaxsolve.from_table(tree, {name: {"Raise": 1.0}})
    with pytest.raises(jaxsolve.GameError, match="not a distribution"):
        jaxsolve.from_table(tree, {name: {"Pass": 0.7, "Bet": 0.7}})
    with pytest.raises(jaxsolve.GameError, match="misses 11 infosets"):
        jaxsolve.from_table(tree, {name: {"Pass": 1.0}}, default="error")


def test_purify_and_threshold():
    tree = builtin_tree("kuhn_poker")
    policy = np.asarray(jaxsolve.uniform_policy(tree)).copy()
    policy[0, :2] = [0.95, 0.05]
    policy[1, :2] = [0.3, 0.7]
    pure = np.asarray(jaxsolve.purify(tree, policy))
    assert pure[0, :2].tolist() == [1, 0] and pure[1, :2].tolist() == [0, 1]
    cut = np.asarray(jaxsolve.threshold(tree, policy, 0.1))
    np.testing.assert_allclose(cut[0, :2], [1, 0])
    np.testing.assert_allclose(cut[1, :2], [0.3, 0.7])


# ---------------------------------------------------------------- final_policy
def _three_action_tree():
    """Player 0 at infoset "a" with three actions, the first leading to player 1's
    infoset "b" with two: policies are [2 infosets, 3 actions], b's last slot illegal."""
    from toy_games import SpecGame, decision, leaf
    b = decision(1, "b", leaf(1, -1), leaf(-1, 1))
    return jaxsolve.compile_game(SpecGame(decision(0, "a", b, leaf(0, 0), leaf(2, -2))))


def _state(tree, *, average=None, regrets=None, prediction=None, sampling=False):
    zeros = np.zeros(np.shape(tree.legal))
    fields = [np.asarray(x if x is not None else zeros, np.float64)
              for x in (regrets, average, None, prediction)]
    fields += [np.int32(7), np.float64(1.0), np.float64(1.0)]
    if not sampling:
        return jaxsolve.CFRState(*fields)
    return jaxsolve.MCCFRState(*fields, np.zeros(2, np.uint32), np.float64(0.0),
                               np.ones((2, 2), bool), np.ones((2, 1), bool),
                               np.zeros(3, np.int32))


@pytest.mark.parametrize("sampling", [False, True], ids=["CFRState", "MCCFRState"])
def test_final_policy_kinds_by_hand(sampling):
    from jaxsolve.policy import final_policy
    tree = _three_action_tree()
    assert list(tree.names.infosets) == ["a", "b"]
    assert np.asarray(tree.legal).tolist() == [[True, True, True], [True, True, False]]
    state = _state(tree, average=[[6, 3, 1], [1, 1, 0]], regrets=[[2, -1, 6], [-3, -1, 0]],
                   sampling=sampling)

    # average: the sums normalised per row.
    np.testing.assert_allclose(final_policy(tree, state), [[.6, .3, .1], [.5, .5, 0]])
    np.testing.assert_allclose(final_policy(tree, state, "average"),
                               jaxsolve.average_policy(tree, state))
    # threshold 0.2: a's 0.1 goes, the rest renormalised (0.6, 0.3) / 0.9; b keeps both.
    np.testing.assert_allclose(final_policy(tree, state, "threshold", tau=0.2),
                               [[2 / 3, 1 / 3, 0], [.5, .5, 0]], atol=1e-15)
    # threshold 0: nothing dropped.
    np.testing.assert_allclose(final_policy(tree, state, "threshold", tau=0.0),
                               [[.6, .3, .1], [.5, .5, 0]])
    # threshold 0.7: every entry of a is below it, which keeps its argmax.
    np.testing.assert_allclose(final_policy(tree, state, "threshold", tau=0.7),
                               [[1, 0, 0], [1, 0, 0]])
    # purify: argmax; b's tie 0.5/0.5 goes to the lowest action id.
    np.testing.assert_array_equal(final_policy(tree, state, "purify"), [[1, 0, 0], [1, 0, 0]])
    # current: regret matching of the regrets, (2, 0, 6) / 8 at a; no positive
    # regret at b, so uniform over its two legal actions.
    np.testing.assert_allclose(final_policy(tree, state, "current"),
                               [[.25, 0, .75], [.5, .5, 0]])


def test_final_current_counts_the_prediction():
    from jaxsolve.policy import final_policy
    tree = _three_action_tree()
    state = _state(tree, regrets=[[2, -1, 6], [0, 0, 0]], prediction=[[0, 3, 0], [0, 1, 0]])
    np.testing.assert_allclose(final_policy(tree, state, "current"),
                               [[.2, .2, .6], [0, 1, 0]])  # RM of (2, 2, 6) and (0, 1)


def test_final_policy_under_jit():
    import jax
    from jaxsolve.policy import final_policy
    tree = builtin_tree("kuhn_poker")
    rng = np.random.default_rng(1)
    state = _state(tree, average=rng.uniform(size=np.shape(tree.legal)),
                   regrets=rng.normal(size=np.shape(tree.legal)))
    jitted = jax.jit(final_policy, static_argnums=(2, 3))
    for kind, tau in [("average", None), ("current", None), ("threshold", 0.1),
                      ("purify", None)]:
        policy = np.asarray(jitted(tree, state, kind, tau))
        np.testing.assert_allclose(policy, final_policy(tree, state, kind, tau))
        # Rows of 2-3 float32 probabilities: each sum is off by a rounding or two.
        np.testing.assert_allclose(policy.sum(1), 1.0, rtol=4 * 2**-24)
    assert set(np.unique(jitted(tree, state, "purify", None))) <= {0.0, 1.0}


@pytest.mark.parametrize("kind, tau, says", [
    ("median", None, "unknown final policy kind 'median'"),
    ("threshold", None, "needs tau"),
    ("threshold", 1.0, r"\[0, 1\)"),
    ("threshold", -0.1, r"\[0, 1\)"),
    ("threshold", float("nan"), r"\[0, 1\)"),
    ("threshold", "0.1", "must be a number"),
    ("purify", 0.1, "'threshold' final policy only"),
    ("average", 0.1, "'threshold' final policy only"),
])
def test_final_policy_rejects_bad_arguments(kind, tau, says):
    from jaxsolve.policy import final_policy
    tree = _three_action_tree()
    with pytest.raises(ValueError, match=says):
        final_policy(tree, _state(tree), kind, tau)
