"""Our MCTS against mctx (same game, same network, fixed keys, root noise off and on), plus the
behaviour mctx does not have: masking at every node and terminal handling."""

import dataclasses
import functools
import re

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from jaxsolve.alphazero import (checks, exact, network, packing, policies, search, selection,
                               selfplay)
from jaxsolve.games import pursuit_evasion as pe

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


def _ours_and_mctx(graphdef, params, states, kind, sims, key, noise=False):
    """Our search and mctx's on the same roots, network and key; root noise off, or
    with `noise` both policies' defaults (Dirichlet 0.25 / 0.3 and temperature 1 for
    PUCT, Gumbel scale 1), drawn from the key as mctx draws them."""
    root = selfplay.root_fn(graphdef, ENV, params, states)
    ours_rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    mroot = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value, embedding=states)
    invalid = ~root.legal_action_mask
    if kind == "puct":
        off = {} if noise else {"dirichlet_fraction": 0.0}
        ours = jax.jit(lambda p, k: policies.alphazero_policy(
            p, k, root, ours_rec, sims, **off, **({} if noise else {"temperature": 0.0})))(
            params, key)
        theirs = jax.jit(lambda p, k: mctx.muzero_policy(
            p, k, mroot, _mctx_recurrent(graphdef), sims, invalid_actions=invalid,
            **off))(params, key)
    else:
        off = {} if noise else {"gumbel_scale": 0.0}
        ours = jax.jit(lambda p, k: policies.gumbel_policy(
            p, k, root, ours_rec, sims, **off))(params, key)
        theirs = jax.jit(lambda p, k: mctx.gumbel_muzero_policy(
            p, k, mroot, _mctx_recurrent(graphdef), sims, invalid_actions=invalid,
            **off))(params, key)
    return ours, theirs


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_visit_counts_equal_mctx_with_root_noise(net, roots, kind):
    # The same key gives both searches the same Dirichlet or Gumbel noise (and PUCT the
    # same sampled action at temperature 1): the keys are split in mctx's order. Noise
    # from the other half of the split would make the visits differ.
    graphdef, params = net
    for seed in (42, 7):
        ours, theirs = _ours_and_mctx(graphdef, params, roots, kind, SIMS,
                                      jax.random.key(seed), noise=True)
        summary = theirs.search_tree.summary()
        np.testing.assert_array_equal(ours.visit_counts, summary.visit_counts)
        np.testing.assert_array_equal(ours.action, theirs.action)


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
    # 3x3 with 2 turns: the whole game has 4 plies and 1 + 9 + 27 + 243 + 729 = 1009
    # positions, so 1000 simulations reach terminal ones (200 did not, with PUCT's
    # breadth-first start under uniform priors); the defender's stay (8) and
    # out-of-turn-rate moves are illegal.
    env = pe.Params(grid_size=3, max_turns=2, threshold=0.0, turn_rate=1, evader_start=(1, 0))
    state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.key(0), 2))
    root = search.RootFnOutput(jnp.zeros((2, 9)), jnp.zeros(2), state, state.legal_action_mask)
    rec = _uniform_recurrent(env)
    masked = root._replace(prior_logits=selection.masked_logits(root.prior_logits,
                                                                root.legal_action_mask))
    sims = 1000
    if kind == "puct":
        policy = functools.partial(policies.alphazero_policy, dirichlet_fraction=0.0, temperature=0.0)
        sel = dict(root_select=search.puct_select, interior_select=search.puct_select)
    else:
        policy = functools.partial(policies.gumbel_policy, gumbel_scale=0.0)
        # The rules gumbel_policy passes (noise off): Sequential Halving at the root over
        # its legal actions, the deterministic Gumbel rule below it.
        schedule = jnp.asarray(search.considered_visits_table(9, sims), jnp.int32)[
            jnp.minimum(9, jnp.sum(root.legal_action_mask, -1))]
        sel = dict(root_select=functools.partial(
            search.gumbel_root_select, gumbel_logits=masked.prior_logits.T, schedule=schedule),
            interior_select=search.gumbel_interior_select)
    tree = jax.jit(lambda k: search.search(None, k, masked, rec, num_simulations=sims, **sel))(
        jax.random.key(0))
    # Judged by the game's own states stored in the tree (not by the tree's masks):
    # every node that exists holds step(parent, action) (test_tree_is_consistent).
    idx = np.asarray(tree.children_index)
    exists = np.zeros(idx.shape[:2], bool)
    exists[:, 0] = True
    exists[np.nonzero(idx >= 0)[0], idx[idx >= 0]] = True
    legal = np.asarray(tree.embeddings.legal_action_mask)
    terminal = np.asarray(tree.embeddings.terminated)
    inner = exists & ~terminal
    inner[:, 0] = False
    assert (idx[:, 1:] >= 0).any() and (~legal[inner]).any()  # something to check below
    assert np.all(idx[np.broadcast_to(exists[..., None], idx.shape) & ~legal]
                  == search.UNVISITED)  # no illegal edge anywhere
    assert (exists & terminal).any()  # the walks reached the end of the game...
    assert np.all(idx[exists & terminal] == search.UNVISITED)  # ... and never went past it
    out = jax.jit(lambda k: policy(None, k, root, rec, sims))(jax.random.key(1))
    # The move chosen is one the exact solver calls winning (the evader starts on the
    # N ray; only some first moves escape both looks).
    optimal = np.asarray(exact.solve(env).optimal_moves(pe.EVADER))[0, 0, 1, 0]
    assert 0 < optimal.sum() < 9
    assert np.all(optimal[np.asarray(out.action)])
    assert np.asarray(out.visit_counts).sum(-1).tolist() == [1000, 1000]


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_visit_counts_equal_mctx(kind):
    # Root noise off: 32 varied positions (either player to move, at different plies)
    # and 32 simulations.
    batch, sims = 32, 32
    graphdef, params = network.init_params(ENV.obs_size, hidden=(32, 32), seed=5)
    state = jax.vmap(lambda k: pe.init(ENV, k))(jax.random.split(jax.random.key(1), batch))
    step = jax.vmap(functools.partial(pe.step, ENV))
    for i in range(8):
        keys = jax.random.split(jax.random.key(30 + i), batch)
        state = step(state, jax.vmap(pe.random_action)(keys, state))
    moved = step(state, jax.vmap(pe.random_action)(jax.random.split(jax.random.key(9), batch),
                                                   state))
    odd = np.arange(batch) % 2 == 1  # one more ply: the defender is to move there
    state = jax.tree.map(lambda a, b: jnp.where(odd.reshape((-1,) + (1,) * (a.ndim - 1)), b, a),
                         state, moved)
    ours, theirs = _ours_and_mctx(graphdef, params, state, kind, sims, jax.random.key(7))
    if kind == "gumbel":
        np.testing.assert_array_equal(ours.action, theirs.action)
        np.testing.assert_allclose(ours.action_weights, theirs.action_weights, atol=1e-5)
    summary = theirs.search_tree.summary()
    np.testing.assert_array_equal(ours.visit_counts, summary.visit_counts)
    np.testing.assert_allclose(ours.value, summary.value, atol=1e-5)
    np.testing.assert_allclose(ours.qvalues, summary.qvalues, atol=1e-5)
    defender = np.asarray(state.current_player) == 1  # the defender cannot stay (action 8)
    assert 0 < defender.sum() < batch
    assert np.all(np.asarray(ours.visit_counts)[defender, 8] == 0)


@pytest.mark.parametrize("read", [None, (True, False, True, False, True, True, False, True)])
def test_embedding_packing_round_trip(read):
    # Every dtype the packer bit-casts, several shapes; the packed arrays stay small
    # enough for single-threaded gathers and there are at most four of them. Leaves the
    # model does not read are stored apart, as they are.
    b = 5
    x = {"b": jnp.array([[True, False, True]] * b), "i8": jnp.full((b, 2), -3, jnp.int8),
         "u8": jnp.full((b,), 250, jnp.uint8), "f16": jnp.full((b, 2), -1.5, jnp.float16),
         "bf16": jnp.full((b, 1, 2), 3.25, jnp.bfloat16), "i32": jnp.arange(b, dtype=jnp.int32),
         "u32": jnp.full((b,), 2**32 - 1, jnp.uint32),
         "f32": jnp.linspace(-1, 1, b * 6, dtype=jnp.float32).reshape(b, 2, 3)}
    plan = packing.plan_packing(x, num_nodes=7, read=read)
    arrays = packing.pack(plan, x)
    chunks = arrays[:len(plan.chunks)]
    assert 1 <= len(chunks) <= 4 and all(c.dtype == jnp.int32 for c in chunks)
    assert len(arrays) - len(chunks) == (0 if read is None else read.count(False))
    y = packing.unpack(plan, arrays)
    for k in x:
        assert y[k].dtype == x[k].dtype and y[k].shape == x[k].shape, k
        np.testing.assert_array_equal(np.asarray(y[k]), np.asarray(x[k]), err_msg=k)
    assert packing.plan_packing({"key": jax.random.split(jax.random.key(0), b)}, 7) is None


def test_leaves_read():
    """The leaves of the embedding the model reads, directly or through a leaf it stores
    that a later step reads: a fixed point over the dependencies."""
    def rec(params, key, action, emb):
        # `a` feeds the output; the next `a` is this `b`, so `b` is read one step later;
        # `c` is stored but never read; `d` is read only through `jnp.where`'s jit.
        out = (emb["a"] * params + jnp.where(action > 0, emb["d"], 0.0), key)
        return out, {"a": emb["b"], "b": emb["b"] + 1, "c": emb["c"] * 2, "d": emb["d"]}
    emb = {k: jnp.zeros((3,)) for k in "abcd"}
    got = packing.leaves_read(rec, jnp.ones(()), jax.random.key(0), jnp.zeros(3, jnp.int32), emb)
    assert got == (True, True, False, True)
    # The game's step reads the position (player, cell, sensor, turn, detections,
    # terminated) and recomputes the observation, the legal mask and the rewards.
    graphdef, params = network.init_params(ENV.obs_size)
    state = jax.vmap(lambda k: pe.init(ENV, k))(jax.random.split(jax.random.key(0), 2))
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    got = packing.leaves_read(rec, params, jax.random.key(0), jnp.zeros(2, jnp.int32), state)
    names = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(state)[0]]
    assert sorted(n for n, r in zip(names, got) if not r) == [
        ".legal_action_mask", ".observation", ".rewards"]


@pytest.mark.parametrize("kind", ["puct", "gumbel", "gumbel_waves"])
def test_tree_is_consistent(net, roots, kind):
    """Node statistics agree with the edges, every stored state is the environment step
    from its parent's, and q = reward + discount * value."""
    graphdef, params = net
    sims = 40
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    legal = root.legal_action_mask
    root = root._replace(prior_logits=selection.masked_logits(root.prior_logits, legal))
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    if kind == "puct":
        sel = dict(root_select=search.puct_select, interior_select=search.puct_select)
    else:
        schedule = jnp.asarray(search.considered_visits_table(9, sims), jnp.int32)[
            jnp.minimum(9, jnp.sum(root.legal_action_mask, -1))]
        sel = dict(root_select=functools.partial(
            search.gumbel_root_select, gumbel_logits=root.prior_logits.T, schedule=schedule),
            interior_select=search.gumbel_interior_select)
        if kind == "gumbel_waves":  # every root here has 8 legal actions
            sel["plan"] = search.gumbel_waves(9, sims, 8)
            assert max(w for w, _ in sel["plan"]) == 8
    tree = jax.jit(lambda p, k: search.search(p, k, root, rec, num_simulations=sims, **sel))(
        params, jax.random.key(3))
    idx = np.asarray(tree.children_index)
    visits, cvisits = np.asarray(tree.node_visits), np.asarray(tree.children_visits)
    assert visits[:, 0].tolist() == [sims + 1] * idx.shape[0]
    expanded = idx >= 0
    for b in range(idx.shape[0]):
        kids = idx[b][expanded[b]]
        assert sorted(kids.tolist()) == list(range(1, sims + 1))  # each node linked once
    # The parent pointers the backup climbs agree with the links; the root's is itself.
    parents = np.asarray(tree.nodes[:, :-1, search.N_PARENT]).astype(int)
    bi, ni, _ = np.nonzero(expanded)
    np.testing.assert_array_equal(parents[bi, idx[expanded]], ni)
    assert (parents[:, 0] == search.ROOT).all()
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
    out = jax.jit(lambda p, k: policies.alphazero_policy(
        p, k, root, rec, 30, dirichlet_fraction=0.0, temperature=0.0, max_depth=1))(
        params, jax.random.key(0))
    tree = jax.jit(lambda p, k: search.search(
        p, k, root, rec, num_simulations=30, root_select=search.puct_select,
        interior_select=search.puct_select, max_depth=1))(params, jax.random.key(0))
    idx = np.asarray(tree.children_index)
    assert np.all(idx[:, 1:] == search.UNVISITED)  # nothing below depth 1
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


def test_gumbel_waves_plan():
    # By hand from Sequential Halving (Karnin et al.; mctx's table) with m = 9 considered
    # actions and 32 simulations: ceil(log2 9) = 4 phases; phase 1 visits all 9 once
    # (9 unvisited actions, 9 simulations: one wave); phase 2 keeps 4 and gives each 2
    # visits: the first round picks 4 of the 9 once-visited actions one by one (each
    # pick sees the values the last backed up), the second round visits those same 4
    # (one wave of 4); then 2 survive: 2 picks out of the 4, then 6 rounds of both
    # (waves of 2) and one last simulation, 9 + 4 + 4 + 2 + 12 + 1 = 32.
    assert search.gumbel_waves(16, 32, 9) == ((9, 1), (1, 4), (4, 1), (1, 2), (2, 6), (1, 1))
    # m = 8: the same, with 7 rounds of pairs.
    assert search.gumbel_waves(16, 32, 8) == ((8, 1), (1, 4), (4, 1), (1, 2), (2, 7))
    # m = 2: every round visits both; m <= 1: one action, one simulation at a time.
    assert search.gumbel_waves(16, 32, 2) == ((2, 16),)
    assert search.gumbel_waves(16, 32, 1) == search.gumbel_waves(16, 32, 0) == ((1, 32),)
    for n in (1, 7, 32, 100):
        for m in range(17):
            plan = search.gumbel_waves(16, n, m)
            assert sum(w * c for w, c in plan) == n
            assert max(w for w, _ in plan) <= max(m, 1)


def _counting(rec, calls):
    """`rec` that records, at run time, the rows of every model call."""
    def counted(params, key, action, state):
        jax.debug.callback(lambda a: calls.append(a.shape[0]), action)
        return rec(params, key, action, state)
    return counted


def test_gumbel_waves_equal_mctx(net, roots):
    # The fixture's roots all consider 8 actions (defender to move): with waves for 8,
    # the model is called 13 times (the plan's waves) instead of 24, and the visit
    # counts, values and q-values are still mctx's.
    graphdef, params = net
    plan = search.gumbel_waves(16, SIMS, 8)
    calls = []
    rec = _counting(functools.partial(selfplay.recurrent_fn, graphdef, ENV), calls)
    policy = jax.jit(lambda p, k, s: policies.gumbel_policy(
        p, k, selfplay.root_fn(graphdef, ENV, p, s), rec, SIMS, gumbel_scale=0.0,
        wave_sizes=(8,)))
    key = jax.random.key(42)
    ours = jax.block_until_ready(policy(params, key, roots))
    assert sorted(calls) == sorted(w * len(roots.cell) for w, c in plan for _ in range(c))
    assert len(calls) == sum(c for _, c in plan) < SIMS
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    mroot = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value, embedding=roots)
    theirs = jax.jit(lambda p, k: mctx.gumbel_muzero_policy(
        p, k, mroot, _mctx_recurrent(graphdef), SIMS, invalid_actions=~root.legal_action_mask,
        gumbel_scale=0.0))(params, key)
    summary = theirs.search_tree.summary()
    np.testing.assert_array_equal(ours.action, theirs.action)
    np.testing.assert_array_equal(ours.visit_counts, summary.visit_counts)
    np.testing.assert_allclose(ours.value, summary.value, atol=1e-5)
    np.testing.assert_allclose(ours.qvalues, summary.qvalues, atol=1e-5)
    # A batch whose roots consider different numbers of actions runs one at a time.
    calls.clear()
    mixed = jax.tree.map(lambda x, y: x.at[0].set(y), roots, pe.init(ENV, key))
    jax.block_until_ready(policy(params, key, mixed))
    assert calls == [len(roots.cell)] * SIMS


def test_gumbel_waves_equal_one_at_a_time_with_noise():
    # 64 varied positions (evader to move, 9 actions), Gumbel noise on and a sharper
    # network: the waves give the same visits and q-values as one simulation at a
    # time. (Running a round of picks as one wave - top-k by the round's first scores -
    # changes 7 of these 64 searches: the scores move as values come back.)
    batch = 64
    graphdef, params = network.init_params(ENV.obs_size, hidden=(32, 32), seed=5)
    params = jax.tree.map(lambda x: 3.0 * x, params)
    state = jax.vmap(lambda k: pe.init(ENV, k))(jax.random.split(jax.random.key(1), batch))
    step = jax.vmap(functools.partial(pe.step, ENV))
    for i in range(6):
        state = step(state, jax.vmap(pe.random_action)(
            jax.random.split(jax.random.key(30 + i), batch), state))
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    root = selfplay.root_fn(graphdef, ENV, params, state)
    legal = root.legal_action_mask
    root = root._replace(prior_logits=selection.masked_logits(root.prior_logits, legal))
    gumbel = jax.random.gumbel(jax.random.key(3), legal.shape) + root.prior_logits
    schedule = jnp.asarray(search.considered_visits_table(16, 32), jnp.int32)[
        jnp.minimum(16, jnp.sum(legal, -1))]
    select = dict(root_select=functools.partial(search.gumbel_root_select, gumbel_logits=gumbel.T,
                                                schedule=schedule),
                  interior_select=search.gumbel_interior_select)

    @jax.jit
    def both(p, k):
        run = lambda plan: search.node_view(search.search(
            p, k, root, rec, num_simulations=32, plan=plan, **select))
        return run(search.gumbel_waves(16, 32, 9)), run(None)

    waves, single = both(params, jax.random.key(4))
    np.testing.assert_array_equal(waves.visits, single.visits)
    np.testing.assert_allclose(waves.qvalues, single.qvalues, atol=1e-6)
    np.testing.assert_allclose(waves.node_value, single.node_value, atol=1e-6)


def test_gumbel_waves_through_terminals():
    # One turn (2 plies): 60 simulations in waves keep ending at terminal states
    # already in the tree, and give the one-at-a-time visit counts.
    env = pe.Params(grid_size=3, max_turns=1, threshold=0.0, turn_rate=1, evader_start=(1, 0))
    state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.key(0), 2))
    root = search.RootFnOutput(jnp.zeros((2, 9)), jnp.zeros(2), state, state.legal_action_mask)
    rec = _uniform_recurrent(env)
    run = lambda sizes: jax.jit(lambda k: policies.gumbel_policy(
        None, k, root, rec, 60, wave_sizes=sizes))(jax.random.key(1))
    waves, single = run("auto"), run(())
    np.testing.assert_array_equal(waves.visit_counts, single.visit_counts)
    np.testing.assert_array_equal(waves.action, single.action)
    np.testing.assert_allclose(waves.qvalues, single.qvalues, atol=1e-6)
    assert np.asarray(waves.visit_counts).sum(-1).tolist() == [60, 60]
    # 1 + 9 + 27 nodes exist at most, so most of the 60 walks ended at a terminal.
    assert np.asarray(waves.visit_counts).max() > 9


def test_wave_arguments_are_checked(net, roots):
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    select = dict(root_select=search.puct_select, interior_select=search.puct_select)
    with pytest.raises(ValueError, match="sum to num_simulations"):
        search.search(params, jax.random.key(0), root, rec, num_simulations=5,
                      plan=((2, 2),), **select)
    with pytest.raises(ValueError, match="wider than the 9 root actions"):
        search.search(params, jax.random.key(0), root, rec, num_simulations=10,
                      plan=((10, 1),), **select)
    with pytest.raises(ValueError, match="wave_sizes"):
        policies.gumbel_policy(params, jax.random.key(0), root, rec, 8, wave_sizes=(12,))


def test_too_large_a_tree_is_refused_before_tracing(net):
    """The flat int32 row ids would overflow: a clear error, found from shapes alone."""
    graphdef, params = net
    b, sims = 2 ** 20, 256
    root = search.RootFnOutput(
        prior_logits=jax.ShapeDtypeStruct((b, 9), jnp.float32),
        value=jax.ShapeDtypeStruct((b,), jnp.float32),
        embedding=jax.ShapeDtypeStruct((b, 4), jnp.float32),
        legal_action_mask=jax.ShapeDtypeStruct((b, 9), jnp.bool_))
    select = dict(root_select=search.puct_select, interior_select=search.puct_select)
    with pytest.raises(ValueError, match="int32 indices"):
        jax.eval_shape(lambda r: search.search(params, jax.random.key(0), r, lambda *a: None,
                                               num_simulations=sims, **select), root)


def _bad_model_output(rec, **fields):
    def model(params, key, action, state):
        out, nxt = rec(params, key, action, state)
        return out._replace(**{k: f(getattr(out, k)) for k, f in fields.items()}), nxt
    return model


@pytest.mark.parametrize("policy", ["gumbel", "puct"])
def test_bad_roots_and_models_are_named_before_searching(net, roots, policy):
    """Shapes are checked when the policy is traced. Without that a [A] prior
    broadcasts against the [B, A] legal mask and searches without complaint, and a
    model's [B, 5] logits fail inside the loop with a broadcasting error."""
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    call = functools.partial(policies.gumbel_policy if policy == "gumbel"
                             else policies.alphazero_policy, params, jax.random.key(0))
    name = "gumbel_policy" if policy == "gumbel" else "alphazero_policy"
    bad_roots = [
        (root._replace(prior_logits=root.prior_logits[0]),
         r"root.prior_logits must be \[B, A\], got shape \(9,\)"),
        (root._replace(value=root.value[:3]), r"root.value must be \[B\] = \(8,\), got shape \(3,\)"),
        (root._replace(legal_action_mask=root.legal_action_mask[:, :5]),
         r"root.legal_action_mask must be \[B, A\] = \(8, 9\), got shape \(8, 5\)"),
        (root._replace(legal_action_mask=root.legal_action_mask.astype(jnp.int32)),
         "root.legal_action_mask must be boolean"),
        (root._replace(embedding=dataclasses.replace(roots, cell=roots.cell[:4])),
         r"root.embedding.cell has shape \(4,\)"),
        (tuple(root), r"root must be a jaxsolve.alphazero.search.RootFnOutput \(prior_logits, "
                      r"value, embedding, legal_action_mask\), got builtins.tuple without "
                      r"prior_logits, value, embedding, legal_action_mask"),
        (root._asdict(), r"root must be a .*RootFnOutput .*, got builtins.dict without"),
        (mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                           embedding=roots),
         r"got mctx\..*RootFnOutput without legal_action_mask \(mctx's has no legal mask"),
        (jax.tree.map(lambda x: x[:0], root), r"root has no position to search \(B = 0\)"),
    ]
    for bad, message in bad_roots:
        with pytest.raises(ValueError, match=f"^{name}: .*{message}"):
            call(bad, rec, 4)
    with pytest.raises(ValueError, match=fr"{name}: num_simulations must be a Python int >= 0 "
                                         fr"\(it sets the tree's size\), got -1"):
        call(root, rec, -1)
    with pytest.raises(ValueError, match="must be a Python int"):
        call(root, rec, 4.0)
    bad_models = [
        (_bad_model_output(rec, prior_logits=lambda x: x[:, :5]),
         r"recurrent_fn's prior_logits must be \(8, 9\), got shape \(8, 5\)"),
        (_bad_model_output(rec, value=lambda x: x[:, None]),
         r"recurrent_fn's value must be \(8,\), got shape \(8, 1\)"),
        (_bad_model_output(rec, legal_action_mask=lambda x: x.astype(jnp.int32)),
         "recurrent_fn's legal_action_mask must be boolean, got int32"),
        (lambda p, k, a, s: rec(p, k, a, s)[0], "must return a pair"),
        (lambda p, k, a, s: (rec(p, k, a, s)[0], rec(p, k, a, s)[1].cell),
         "must return an embedding of the structure it was given"),
        (lambda p, k, a, s: (rec(p, k, a, s)[0], dataclasses.replace(
            rec(p, k, a, s)[1], cell=s.cell.astype(jnp.float32))),
         r"recurrent_fn's embedding.cell must keep shape \(8,\) and dtype int32"),
    ]
    for model, message in bad_models:
        with pytest.raises(ValueError, match=f"^search: .*{message}"):
            call(root, model, 4)


@pytest.mark.parametrize("policy, settings, message", [
    # Unchecked, each of these would search without complaint and return nonsense: a
    # negative temperature favours the least visited action, alpha <= 0 draws NaN
    # noise (every visit on action 0), max_depth <= 0 would be taken as 1.
    ("puct", dict(temperature=-1.0), "temperature must be a finite number >= 0, got -1.0"),
    ("puct", dict(temperature=float("nan")), "temperature must be a finite number >= 0, got nan"),
    ("puct", dict(dirichlet_alpha=0), "dirichlet_alpha must be a finite number > 0, got 0"),
    ("puct", dict(dirichlet_alpha=-1), "dirichlet_alpha must be a finite number > 0, got -1"),
    ("puct", dict(dirichlet_fraction=2), "dirichlet_fraction must lie in [0, 1], got 2"),
    ("puct", dict(max_depth=0), "max_depth must be None or an integer >= 1, got 0"),
    ("puct", dict(max_depth=-3), "max_depth must be None or an integer >= 1, got -3"),
    ("gumbel", dict(max_depth=2.5), "max_depth must be None or an integer >= 1, got 2.5"),
    ("gumbel", dict(gumbel_scale=float("nan")), "gumbel_scale must be a finite number >= 0, got nan"),
    ("gumbel", dict(max_num_considered_actions=2.5),
     "max_num_considered_actions must be an integer >= 1, got 2.5"),
    ("gumbel", dict(wave_sizes=(2.5,)), "wave_sizes must be 'auto', an integer or a sequence "
                                        "of integers in 1..9"),
])
def test_policy_settings_are_checked_before_searching(net, roots, policy, settings, message):
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    name = "gumbel_policy" if policy == "gumbel" else "alphazero_policy"
    call = policies.gumbel_policy if policy == "gumbel" else policies.alphazero_policy
    with pytest.raises(ValueError, match=re.escape(f"{name}: {message}")):
        call(params, jax.random.key(0), root, rec, 4, **settings)
    with pytest.raises(ValueError, match="key must be a jax.random key.*, got int"):
        call(params, 0, root, rec, 4)


def test_traced_settings_pass_and_one_wave_size_is_a_sequence(net, roots):
    """A traced setting cannot be read when the policy is traced, so only concrete
    ones are checked; an int wave size is taken as a one-element sequence."""
    settings = checks.number(0)
    jax.make_jaxpr(lambda t: checks.unless_traced("f", "t", t, settings))(-1.0)  # no error
    with pytest.raises(ValueError, match="f: t must be a finite number >= 0"):
        checks.unless_traced("f", "t", np.float32(-1.0), settings)
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    out = jax.eval_shape(lambda k: policies.gumbel_policy(params, k, root, rec, 8, wave_sizes=8),
                         jax.random.key(0))
    assert out.visit_counts.shape == (8, 9)

    # wave_sizes=8 is the same program as (8,): equal jaxprs (traced only, no
    # compilation). Without waves the program differs, so the comparison can tell.
    def program(sizes):
        return str(jax.make_jaxpr(lambda k: policies.gumbel_policy(
            params, k, root, rec, 8, wave_sizes=sizes))(jax.random.key(0)))
    assert program(8) == program((8,)) != program(())


def test_a_traced_temperature_samples_or_plays_greedily_as_a_concrete_one(net, roots):
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    key = jax.random.key(5)

    def act(t):
        return policies.alphazero_policy(params, key, root, rec, 8, temperature=t).action

    traced = jax.jit(act)
    concrete = {}
    for t in (0.0, 0.5):  # the two concrete branches: greedy, and sampling at any t != 0
        concrete[t] = jax.jit(lambda: policies.alphazero_policy(params, key, root, rec, 8,
                                                                temperature=t))()
        np.testing.assert_array_equal(np.asarray(traced(jnp.float32(t))),
                                      np.asarray(concrete[t].action))
    # Temperature 0 is the most visited action.
    out = concrete[0.0]
    visits = np.asarray(out.visit_counts)
    assert (visits[np.arange(len(visits)), np.asarray(out.action)] == visits.max(1)).all()


def test_alphazero_policy_without_simulations_plays_the_legal_prior(net, roots):
    """With no simulation there is no visit to count: the weights and the sampled
    action follow the root prior over the legal moves, rather than all-zero weights
    and an action uniform over every action, illegal ones included (action 8 here:
    the defender cannot stay)."""
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    play = jax.jit(jax.vmap(lambda k: policies.alphazero_policy(
        params, k, root, rec, 0, dirichlet_fraction=0.0)))
    out = play(jax.random.split(jax.random.key(0), 64))
    logits, legal = np.asarray(root.prior_logits, np.float64), np.asarray(root.legal_action_mask)
    expected = np.where(legal, np.exp(logits - logits.max(-1, keepdims=True)), 0.0)
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(out.action_weights[0]), expected, atol=1e-6)
    assert not legal[:, 8].any() and legal[np.arange(8), np.asarray(out.action)].all()
