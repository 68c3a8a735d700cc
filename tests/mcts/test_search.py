"""Whole searches on the pursuit-evasion game: the tree's invariants, the depth cap,
the arguments."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from games import pursuit_evasion as pe
from jaxsolve import mcts
from jaxsolve.alphazero import network, selfplay
from jaxsolve.mcts import _tree
from pursuit_models import ENV, make_net, make_roots


@pytest.fixture(scope="module")
def net():
    return make_net()


@pytest.fixture(scope="module")
def roots():
    return make_roots()


# ------------------------------------------------- whole searches on the pursuit game
@pytest.mark.parametrize("kind", ["puct", "gumbel", "gumbel_waves"])
def test_tree_is_consistent(net, roots, kind):
    """Node statistics agree with the edges, every stored state is the environment step
    from its parent's, and q = reward + discount * value."""
    graphdef, params = net
    sims = 40
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    legal = root.legal_action_mask
    root = root._replace(prior_logits=mcts.masked_logits(root.prior_logits, legal))
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    if kind == "puct":
        sel = dict(root_select=mcts.puct_select, interior_select=mcts.puct_select)
    else:
        schedule = jnp.asarray(mcts.considered_visits_table(9, sims), jnp.int32)[
            jnp.minimum(9, jnp.sum(root.legal_action_mask, -1))]
        sel = dict(root_select=functools.partial(
            mcts.gumbel_root_select, gumbel_logits=root.prior_logits.T, schedule=schedule),
            interior_select=mcts.gumbel_interior_select)
        if kind == "gumbel_waves":  # every root here has 8 legal actions
            sel["plan"] = mcts.gumbel_waves(9, sims, 8)
            assert max(w for w, _ in sel["plan"]) == 8
    tree = jax.jit(lambda p, k: mcts.search(p, k, root, rec, num_simulations=sims, **sel))(
        params, jax.random.key(3))
    idx = np.asarray(tree.children_index)
    visits, cvisits = np.asarray(tree.node_visits), np.asarray(tree.children_visits)
    assert visits[:, 0].tolist() == [sims + 1] * idx.shape[0]
    expanded = idx >= 0
    for b in range(idx.shape[0]):
        kids = idx[b][expanded[b]]
        assert sorted(kids.tolist()) == list(range(1, sims + 1))  # each node linked once
    # The parent pointers the backup climbs agree with the links; the root's is itself.
    parents = np.asarray(tree.nodes[:, :-1, _tree.N_PARENT]).astype(int)
    bi, ni, _ = np.nonzero(expanded)
    np.testing.assert_array_equal(parents[bi, idx[expanded]], ni)
    assert (parents[:, 0] == mcts.Tree.ROOT_INDEX).all()
    # Every selection passed through a node visits one child: sum(children) = visits - 1.
    inner = expanded.any(-1)
    np.testing.assert_array_equal(np.where(inner, cvisits.sum(-1), 0),
                                  np.where(inner, visits - 1, 0))
    q = np.asarray(tree.children_qvalues)
    want = np.asarray(tree.children_rewards + tree.children_discounts * tree.children_values)
    np.testing.assert_array_equal(q[expanded], want[expanded])
    # Stored states: child = step(parent, action).
    b_, n_, a_ = idx.shape
    parent = np.repeat(np.arange(n_), a_)[None].repeat(b_, 0).reshape(b_, n_, a_)
    action = np.broadcast_to(np.arange(a_), idx.shape)
    bi, ni, ai = np.nonzero(expanded)
    take = lambda x, n: x[bi, n]
    before = jax.tree.map(lambda x: take(x, parent[bi, ni, ai]), tree.embeddings)
    after = jax.tree.map(lambda x: take(x, idx[bi, ni, ai]), tree.embeddings)
    stepped = jax.vmap(functools.partial(pe.step, ENV))(before, jnp.asarray(action[bi, ni, ai]))
    for got, want in zip(jax.tree.leaves(after), jax.tree.leaves(stepped)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_max_depth_caps_the_walk(net, roots):
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    out = jax.jit(lambda p, k: mcts.alphazero_policy(
        p, k, root, rec, 30, dirichlet_fraction=0.0, temperature=0.0, max_depth=1))(
        params, jax.random.key(0))
    tree = jax.jit(lambda p, k: mcts.search(
        p, k, root, rec, num_simulations=30, root_select=mcts.puct_select,
        interior_select=mcts.puct_select, max_depth=1))(params, jax.random.key(0))
    idx = np.asarray(tree.children_index)
    assert np.all(idx[:, 1:] == mcts.Tree.UNVISITED)  # nothing below depth 1
    assert np.asarray(out.visit_counts).sum(-1).tolist() == [30] * idx.shape[0]
    # Depth 1 only: the root's q-values are its children's network values.
    np.testing.assert_array_equal(np.asarray(tree.children_index[:, 0] >= 0),
                                  np.asarray(out.visit_counts) > 0)
    # Computed here from the game and the network directly: the mover's reward on the
    # edge plus discount -1 times the network's value of the child for the player to
    # move there (no child ends the game: the roots are a few plies in, see `roots`).
    expanded = np.asarray(tree.children_index[:, 0] >= 0)
    qvalues = np.asarray(tree.children_qvalues[:, 0])
    for a in range(pe.NUM_ACTIONS):
        rows = expanded[:, a]
        if not rows.any():
            continue
        child = jax.vmap(functools.partial(pe.step, ENV))(roots, jnp.full(len(rows), a))
        assert not np.asarray(child.terminated).any()
        _, value = network.apply(graphdef, params, child.observation)
        mover = np.asarray(roots.current_player)
        reward = np.asarray(child.rewards)[np.arange(len(rows)), mover]
        np.testing.assert_allclose(qvalues[rows, a], (reward - np.asarray(value))[rows],
                                   atol=1e-5)


def test_wave_arguments_are_checked(net, roots):
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    select = dict(root_select=mcts.puct_select, interior_select=mcts.puct_select)
    with pytest.raises(ValueError, match="sum to num_simulations"):
        mcts.search(params, jax.random.key(0), root, rec, num_simulations=5,
                    plan=((2, 2),), **select)
    with pytest.raises(ValueError, match="wider than the 9 root actions"):
        mcts.search(params, jax.random.key(0), root, rec, num_simulations=10,
                    plan=((10, 1),), **select)
    with pytest.raises(ValueError, match="wave_sizes"):
        mcts.gumbel_policy(params, jax.random.key(0), root, rec, 8, wave_sizes=(12,))


def test_too_large_a_tree_is_refused_before_tracing(net):
    """The flat int32 row ids would overflow: a clear error, found from shapes alone."""
    graphdef, params = net
    b, sims = 2 ** 20, 256
    root = mcts.RootFnOutput(
        prior_logits=jax.ShapeDtypeStruct((b, 9), jnp.float32),
        value=jax.ShapeDtypeStruct((b,), jnp.float32),
        embedding=jax.ShapeDtypeStruct((b, 4), jnp.float32),
        legal_action_mask=jax.ShapeDtypeStruct((b, 9), jnp.bool_))
    select = dict(root_select=mcts.puct_select, interior_select=mcts.puct_select)
    with pytest.raises(ValueError, match="int32 indices"):
        jax.eval_shape(lambda r: mcts.search(params, jax.random.key(0), r, lambda *a: None,
                                             num_simulations=sims, **select), root)
