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
    np.testing.assert_allclose(jaxsolve.from_table(tree, table), policy, atol=1e-15)
    only = jaxsolve.table(tree, policy, player=1)
    assert len(only) == 6


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
