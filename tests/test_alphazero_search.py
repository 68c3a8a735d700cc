"""Our MCTS against mctx (same game, same network, fixed keys, noise off), plus the
behaviour mctx does not have: masking at every node and terminal handling."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from games import pursuit_evasion as pe
from jaxsolve.alphazero import exact, network, search, selfplay

ENV = pe.Params()
SIMS = 24


@pytest.fixture(scope="module")
def net():
    return network.init_params(ENV.obs_size, hidden=(32, 32), seed=3)


@pytest.fixture(scope="module")
def roots():
    """8 positions a few random plies into the default game (no terminal within reach)."""
    batch = 8
    state = jax.vmap(lambda k: pe.init(ENV, k))(jax.random.split(jax.random.key(0), batch))
    step = jax.vmap(functools.partial(pe.step, ENV))
    for i in range(5):
        keys = jax.random.split(jax.random.key(10 + i), batch)
        state = step(state, jax.vmap(pe.random_action)(keys, state))
    return state  # defender to move: action 8 is illegal


def _mctx_recurrent(graphdef):
    def rec(params, key, action, state):
        out, nxt = selfplay.recurrent_fn(graphdef, ENV, params, key, action, state)
        return mctx.RecurrentFnOutput(reward=out.reward, discount=out.discount,
                                      prior_logits=out.prior_logits, value=out.value), nxt
    return rec


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_visit_counts_equal_mctx(net, roots, kind):
    graphdef, params = net
    key = jax.random.key(42)
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    ours_rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    mroot = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value, embedding=roots)
    invalid = ~root.legal_action_mask
    if kind == "puct":
        ours = jax.jit(lambda p, k: search.alphazero_policy(
            p, k, root, ours_rec, SIMS, dirichlet_fraction=0.0, temperature=0.0))(params, key)
        theirs = jax.jit(lambda p, k: mctx.muzero_policy(
            p, k, mroot, _mctx_recurrent(graphdef), SIMS, invalid_actions=invalid,
            dirichlet_fraction=0.0))(params, key)
    else:
        ours = jax.jit(lambda p, k: search.gumbel_policy(
            p, k, root, ours_rec, SIMS, gumbel_scale=0.0))(params, key)
        theirs = jax.jit(lambda p, k: mctx.gumbel_muzero_policy(
            p, k, mroot, _mctx_recurrent(graphdef), SIMS, invalid_actions=invalid,
            gumbel_scale=0.0))(params, key)
        np.testing.assert_array_equal(ours.action, theirs.action)
        np.testing.assert_allclose(ours.action_weights, theirs.action_weights, atol=1e-5)
    summary = theirs.search_tree.summary()
    np.testing.assert_array_equal(ours.visit_counts, summary.visit_counts)
    np.testing.assert_allclose(ours.value, summary.value, atol=1e-5)
    assert np.all(np.asarray(ours.visit_counts)[:, 8] == 0)


def _uniform_recurrent(env):
    """A model with uniform priors over *all* actions and zero values: only masking
    keeps the search off illegal moves, and only the tree sees the real outcome."""
    def rec(params, key, action, state):
        nxt = jax.vmap(functools.partial(pe.step, env))(state, action)
        reward = jnp.take_along_axis(nxt.rewards, state.current_player[:, None], 1)[:, 0]
        zeros = jnp.zeros(action.shape, jnp.float32)
        return search.RecurrentFnOutput(reward, jnp.where(nxt.terminated, 0.0, -1.0),
                                        jnp.zeros(nxt.legal_action_mask.shape), zeros,
                                        nxt.legal_action_mask), nxt
    return rec


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_masks_every_node_and_stops_at_terminals(kind):
    # 3x3 with 2 turns: the whole game has 4 plies, so 200 simulations hit terminals
    # many times; the defender's stay (8) and out-of-turn-rate moves are illegal.
    env = pe.Params(grid_size=3, max_turns=2, threshold=0.0, turn_rate=1, evader_start=(1, 0))
    state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.key(0), 2))
    root = search.RootFnOutput(jnp.zeros((2, 9)), jnp.zeros(2), state, state.legal_action_mask)
    rec = _uniform_recurrent(env)
    if kind == "puct":
        policy = functools.partial(search.alphazero_policy, dirichlet_fraction=0.0, temperature=0.0)
    else:
        policy = functools.partial(search.gumbel_policy, gumbel_scale=0.0)
    tree_fn = jax.jit(lambda k: search.search(
        None, k, root._replace(prior_logits=search._masked_logits(root.prior_logits, root.legal_action_mask)),
        rec, num_simulations=200, root_select=search.puct_select, interior_select=search.puct_select))
    tree = tree_fn(jax.random.key(0))
    idx, legal = np.asarray(tree.children_index), np.asarray(tree.legal)
    assert np.all(idx[~legal] == search.UNVISITED)  # no illegal edge anywhere
    assert not np.any(idx[np.asarray(tree.terminal)] != search.UNVISITED)  # leaves
    out = jax.jit(lambda k: policy(None, k, root, rec, 1000))(jax.random.key(1))
    # The move chosen is one the exact solver calls winning (the evader starts on the
    # N ray; only some first moves escape both looks).
    optimal = np.asarray(exact.solve(env).optimal_moves(pe.EVADER))[0, 0, 1, 0]
    assert 0 < optimal.sum() < 9
    assert np.all(optimal[np.asarray(out.action)])
    assert np.asarray(out.visit_counts).sum(-1).tolist() == [1000, 1000]
