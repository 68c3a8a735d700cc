"""Visit counts (jaxsolve.visit_counts): a batch of B samples split down the tree.

Checked against a plain NumPy walk over the parent pointers written here: the root
holds B, an expanding node passes its count to every child, a sampling node splits
it (systematic: every share is floor or ceiling of n p; multinomial: the shares add
up), and q is the product of the sampling probabilities on the path. Unbiasedness
of the estimates built on the counts is tested in test_sampling.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsolve
from conftest import builtin_tree
from jaxsolve import sampling
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.sampling._estimate import _row_table
from jaxsolve.sampling._iteration import _dense_step
from jaxsolve.sampling._rows import _expand_chance_row
from jaxsolve.visit_counts import visit_counts


@functools.cache
def leduc():
    return builtin_tree("leduc_poker")


def random_policy(tree):
    legal = np.asarray(tree.legal)
    raw = np.random.default_rng(3).uniform(0.05, 1.0, legal.shape) * legal
    return raw / raw.sum(-1, keepdims=True)


def scheme_rows(tree, traverser=0, exploration=0.0, **scheme):
    """The row table of `random_policy` under a scheme."""
    policy = jnp.asarray(random_policy(tree))
    expand, expand_chance, _ = sampling.make_scheme(tree, **scheme)
    return _row_table(tree, policy, traverser, jnp.asarray(expand[traverser]),
                      _expand_chance_row(jnp.asarray(expand_chance), traverser), exploration)


@functools.partial(jax.jit, static_argnames=("batch_size", "split"))
def counts_of(tree, rows, expanded, row_of_node, key, *, batch_size, split):
    return visit_counts(tree, rows, expanded, row_of_node, key, batch_size, split)


@pytest.mark.parametrize("game,batch_size,split", [
    ("leduc_poker", 1, "systematic"), ("leduc_poker", 7, "systematic"),
    ("leduc_poker", 256, "systematic"),
    ("kuhn_poker", 7, "multinomial")])  # multinomial: a small tree, its sampler compiles slowly
def test_counts_follow_the_scheme_node_by_node(game, batch_size, split):
    tree = leduc() if game == "leduc_poker" else builtin_tree(game)
    rows, expanded, row_of_node = scheme_rows(tree, expand_own=True, expand_opponents=False,
                                              expand_chance=False)
    counts, q = counts_of(tree, rows, expanded, row_of_node, jax.random.PRNGKey(batch_size),
                          batch_size=batch_size, split=split)
    counts, q = np.asarray(counts, np.float64), np.asarray(q, np.float64)
    rows, expanded, row_of_node = map(np.asarray, (rows, expanded, row_of_node))
    parent, slot = np.asarray(tree.parent), np.asarray(tree.parent_action)
    children = np.asarray(tree.children)
    assert counts[0] == batch_size and q[0] == 1.0
    assert np.all(counts == np.round(counts)) and np.all(counts >= 0)
    for h in range(len(parent)):
        kids = children[h][children[h] >= 0]
        if len(kids) == 0:
            continue
        r = row_of_node[h]
        probs = rows[r, slot[kids]]
        np.testing.assert_allclose(q[kids], q[h] * (1.0 if expanded[r] else probs), rtol=1e-6)
        if expanded[r]:
            assert np.all(counts[kids] == counts[h])
        else:
            assert counts[kids].sum() == counts[h]
            if split == "systematic":
                share = counts[h] * probs / probs.sum()
                assert np.all(counts[kids] >= np.floor(share - 1e-4))
                assert np.all(counts[kids] <= np.ceil(share + 1e-4))


def test_multinomial_counts_visit_each_leaf_b_q_times_in_mean():
    """Multinomial counts are B independent samples of outcome sampling: over many
    keys each leaf's mean count is B q(z), within 6 standard errors (CLT)."""
    tree = builtin_tree("kuhn_poker")
    rows, expanded, row_of_node = scheme_rows(tree, expand_own=False, expand_opponents=False,
                                              expand_chance=False, exploration=0.5)
    keys = jax.random.split(jax.random.PRNGKey(0), 4000)
    draw = jax.vmap(lambda k: counts_of(tree, rows, expanded, row_of_node, k, batch_size=5,
                                        split="multinomial"))
    counts, _ = draw(keys)
    leaves = np.asarray(tree.terminal_node)
    visits = np.asarray(counts)[:, leaves]
    mean, se = visits.mean(0), visits.std(0) / np.sqrt(len(keys))
    # q(z) by hand: up the parent pointers, chance's probabilities, player 1's policy,
    # player 0's (the traverser's) mixed half and half with uniform over its legal actions.
    policy, legal = random_policy(tree), np.asarray(tree.legal)
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    parent, slot = np.asarray(tree.parent), np.asarray(tree.parent_action)
    owner, chance = np.asarray(tree.infoset_player), np.asarray(tree.chance_probs)
    expected = np.full(len(leaves), 5.0)
    for k, z in enumerate(leaves):
        h = z
        while parent[h] >= 0:
            up, a = parent[h], slot[h]
            if player[up] == CHANCE:
                p = chance[index[up], a]
            else:
                i = index[up]
                p = policy[i, a]
                if owner[i] == 0:
                    p = 0.5 * p + 0.5 / legal[i].sum()
            expected[k] *= p
            h = up
    assert np.all(np.abs(mean - expected) <= 6 * se + 1e-9)
    assert visits.std(0).max() > 0


def test_auto_traversal_picks_the_cheaper_drawing():
    tree = leduc()  # 9,457 histories
    solver = jaxsolve.external_sampling(256)
    K = solver.init(tree).frontier.shape[0]
    assert sampling.choose_traversal(tree, 256, K) == "counts"
    assert sampling.choose_traversal(tree, 1, 1) == "frontier"
    assert sampling.choose_traversal(tree, 256, 1) == "frontier"  # outcome sampling


def test_traversal_and_split_reach_the_step():
    solver = jaxsolve.outcome_sampling(8, traversal="counts", split="multinomial")
    assert solver.step.keywords["traversal"] == "counts"
    assert solver.step.keywords["split"] == "multinomial"
    # And the step computes it: its program (traced only, not compiled) is the
    # full-width step drawn from multinomial visit counts, written out here with
    # outcome sampling's settings (OpenSpiel's exploration 0.6, the traverser's
    # average, plain CFR's rule); the same step with systematic counts, or with the
    # frontier walk, is another program, so the comparison can tell.
    tree = builtin_tree("kuhn_poker")
    state = solver.init(tree, jax.random.PRNGKey(0))

    def program(step):
        return str(jax.make_jaxpr(step)(tree, state))

    def reference(traversal, split):
        return functools.partial(
            _dense_step, batch_size=8, exploration=0.6, averaging="traverser",
            floor=False, alpha=None, beta=None, gamma=0.0, traversal=traversal, split=split,
            solver_name="os-mccfr")
    step = program(solver.step)
    assert step == program(reference("counts", "multinomial"))
    assert step != program(reference("counts", "systematic"))
    assert step != program(reference("frontier", "multinomial"))


def test_bad_traversal_or_split_is_refused():
    with pytest.raises(ValueError, match="traversal must be one of"):
        jaxsolve.external_sampling(8, traversal="bfs")
    with pytest.raises(ValueError, match="split must be one of"):
        jaxsolve.external_sampling(8, split="stratified")


def test_chance_rows_and_terminals_in_the_table():
    tree = leduc()
    rows, expanded, row_of_node = map(np.asarray, scheme_rows(tree, expand_own=True,
                                                               expand_opponents=False))
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    chance = player == CHANCE
    probs = np.asarray(tree.chance_probs)
    np.testing.assert_allclose(rows[row_of_node[chance]][:, :probs.shape[1]],
                               probs[index[chance]], rtol=1e-6)
    assert not expanded[row_of_node[chance]].any()  # chance is sampled
    assert expanded[row_of_node[player == TERMINAL]].all()  # the zero row: nothing to split
