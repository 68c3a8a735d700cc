"""The search policies against mctx (same game, same network, fixed keys, root noise off
and on), the behaviour mctx does not have (masking at every node, terminal handling,
waves), and the checks of their arguments."""

import dataclasses
import functools
import re

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from jaxsolve import mcts, validate
from jaxsolve.alphazero import exact, network, selfplay
from jaxsolve.games import pursuit_evasion as pe
from pursuit_models import ENV, SIMS, mctx_recurrent, uniform_recurrent
from pursuit_models import net, roots  # noqa: F401 (fixtures)


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
        ours = jax.jit(lambda p, k: mcts.alphazero_policy(
            p, k, root, ours_rec, sims, **off, **({} if noise else {"temperature": 0.0})))(
            params, key)
        theirs = jax.jit(lambda p, k: mctx.muzero_policy(
            p, k, mroot, mctx_recurrent(graphdef), sims, invalid_actions=invalid,
            **off))(params, key)
    else:
        off = {} if noise else {"gumbel_scale": 0.0}
        ours = jax.jit(lambda p, k: mcts.gumbel_policy(
            p, k, root, ours_rec, sims, **off))(params, key)
        theirs = jax.jit(lambda p, k: mctx.gumbel_muzero_policy(
            p, k, mroot, mctx_recurrent(graphdef), sims, invalid_actions=invalid,
            **off))(params, key)
    return ours, theirs


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_visit_counts_equal_mctx_with_root_noise(net, roots, kind):
    # The same key gives both searches the same Dirichlet or Gumbel noise (and PUCT the
    # same sampled action at temperature 1): the keys are split in mctx's order, and the
    # Gumbel noise drawn from the same half of the split as mctx's.
    graphdef, params = net
    for seed in (42, 7):
        ours, theirs = _ours_and_mctx(graphdef, params, roots, kind, SIMS,
                                      jax.random.key(seed), noise=True)
        summary = theirs.search_tree.summary()
        np.testing.assert_array_equal(ours.visit_counts, summary.visit_counts)
        np.testing.assert_array_equal(ours.action, theirs.action)


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_masks_every_node_and_stops_at_terminals(kind):
    # 3x3 with 2 turns: the whole game has 4 plies and 1 + 9 + 27 + 243 + 729 = 1009
    # positions, so 1000 simulations reach terminal ones (200 did not, with PUCT's
    # breadth-first start under uniform priors); the defender's stay (8) and
    # out-of-turn-rate moves are illegal.
    env = pe.Params(grid_size=3, max_turns=2, threshold=0.0, turn_rate=1, evader_start=(1, 0))
    state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.key(0), 2))
    root = mcts.RootFnOutput(jnp.zeros((2, 9)), jnp.zeros(2), state, state.legal_action_mask)
    rec = uniform_recurrent(env)
    masked = root._replace(prior_logits=mcts.masked_logits(root.prior_logits,
                                                           root.legal_action_mask))
    sims = 1000
    if kind == "puct":
        policy = functools.partial(mcts.alphazero_policy, dirichlet_fraction=0.0, temperature=0.0)
        sel = dict(root_select=mcts.puct_select, interior_select=mcts.puct_select)
    else:
        policy = functools.partial(mcts.gumbel_policy, gumbel_scale=0.0)
        # The rules gumbel_policy passes (noise off): Sequential Halving at the root over
        # its legal actions, the deterministic Gumbel rule below it.
        schedule = jnp.asarray(mcts.considered_visits_table(9, sims), jnp.int32)[
            jnp.minimum(9, jnp.sum(root.legal_action_mask, -1))]
        sel = dict(root_select=functools.partial(
            mcts.gumbel_root_select, gumbel_logits=masked.prior_logits.T, schedule=schedule),
            interior_select=mcts.gumbel_interior_select)
    tree = jax.jit(lambda k: mcts.search(None, k, masked, rec, num_simulations=sims, **sel))(
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
                  == mcts.Tree.UNVISITED)  # no illegal edge anywhere
    assert (exists & terminal).any()  # the walks reached the end of the game...
    assert np.all(idx[exists & terminal] == mcts.Tree.UNVISITED)  # ... and never went past it
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
    plan = mcts.gumbel_waves(16, SIMS, 8)
    calls = []
    rec = _counting(functools.partial(selfplay.recurrent_fn, graphdef, ENV), calls)
    policy = jax.jit(lambda p, k, s: mcts.gumbel_policy(
        p, k, selfplay.root_fn(graphdef, ENV, p, s), rec, SIMS, gumbel_scale=0.0,
        wave_sizes=(8,)))
    key = jax.random.key(42)
    ours = jax.block_until_ready(policy(params, key, roots))
    assert sorted(calls) == sorted(w * len(roots.cell) for w, c in plan for _ in range(c))
    assert len(calls) == sum(c for _, c in plan) < SIMS
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    mroot = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value, embedding=roots)
    theirs = jax.jit(lambda p, k: mctx.gumbel_muzero_policy(
        p, k, mroot, mctx_recurrent(graphdef), SIMS, invalid_actions=~root.legal_action_mask,
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
    root = root._replace(prior_logits=mcts.masked_logits(root.prior_logits, legal))
    gumbel = jax.random.gumbel(jax.random.key(3), legal.shape) + root.prior_logits
    schedule = jnp.asarray(mcts.considered_visits_table(16, 32), jnp.int32)[
        jnp.minimum(16, jnp.sum(legal, -1))]
    select = dict(root_select=functools.partial(mcts.gumbel_root_select, gumbel_logits=gumbel.T,
                                                schedule=schedule),
                  interior_select=mcts.gumbel_interior_select)

    @jax.jit
    def both(p, k):
        run = lambda plan: mcts.node_view(mcts.search(
            p, k, root, rec, num_simulations=32, plan=plan, **select))
        return run(mcts.gumbel_waves(16, 32, 9)), run(None)

    waves, single = both(params, jax.random.key(4))
    np.testing.assert_array_equal(waves.visits, single.visits)
    np.testing.assert_allclose(waves.qvalues, single.qvalues, atol=1e-6)
    np.testing.assert_allclose(waves.node_value, single.node_value, atol=1e-6)


def test_gumbel_waves_through_terminals():
    # One turn (2 plies): 60 simulations in waves keep ending at terminal states
    # already in the tree, and give the one-at-a-time visit counts.
    env = pe.Params(grid_size=3, max_turns=1, threshold=0.0, turn_rate=1, evader_start=(1, 0))
    state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.key(0), 2))
    root = mcts.RootFnOutput(jnp.zeros((2, 9)), jnp.zeros(2), state, state.legal_action_mask)
    rec = uniform_recurrent(env)
    run = lambda sizes: jax.jit(lambda k: mcts.gumbel_policy(
        None, k, root, rec, 60, wave_sizes=sizes))(jax.random.key(1))
    waves, single = run("auto"), run(())
    np.testing.assert_array_equal(waves.visit_counts, single.visit_counts)
    np.testing.assert_array_equal(waves.action, single.action)
    np.testing.assert_allclose(waves.qvalues, single.qvalues, atol=1e-6)
    assert np.asarray(waves.visit_counts).sum(-1).tolist() == [60, 60]
    # 1 + 9 + 27 nodes exist at most, so most of the 60 walks ended at a terminal.
    assert np.asarray(waves.visit_counts).max() > 9


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
    call = functools.partial(mcts.gumbel_policy if policy == "gumbel"
                             else mcts.alphazero_policy, params, jax.random.key(0))
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
        (tuple(root), r"root must be a jaxsolve.mcts.RootFnOutput \(prior_logits, "
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
    with pytest.raises(ValueError, match=fr"{name}: num_simulations must be an integer >= 0 "
                                         fr"\(a Python int: it sets the tree's size\), got -1"):
        call(root, rec, -1)
    with pytest.raises(ValueError, match="must be an integer >= 0 \\(a Python int"):
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
    ("puct", dict(dirichlet_fraction=2), "dirichlet_fraction must be a number in [0, 1], got 2"),
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
    call = mcts.gumbel_policy if policy == "gumbel" else mcts.alphazero_policy
    with pytest.raises(ValueError, match=re.escape(f"{name}: {message}")):
        call(params, jax.random.key(0), root, rec, 4, **settings)
    with pytest.raises(ValueError, match="key must be a jax.random key.*, got int"):
        call(params, 0, root, rec, 4)


def test_traced_settings_pass_and_one_wave_size_is_a_sequence(net, roots):
    """A traced setting cannot be read when the policy is traced, so only concrete
    ones are checked; an int wave size is taken as a one-element sequence."""
    settings = validate.number_rule(0)
    jax.make_jaxpr(lambda t: validate.unless_traced("f", "t", t, settings))(-1.0)  # no error
    with pytest.raises(ValueError, match="f: t must be a finite number >= 0"):
        validate.unless_traced("f", "t", np.float32(-1.0), settings)
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    out = jax.eval_shape(lambda k: mcts.gumbel_policy(params, k, root, rec, 8, wave_sizes=8),
                         jax.random.key(0))
    assert out.visit_counts.shape == (8, 9)

    # wave_sizes=8 is the same program as (8,): equal jaxprs (traced only, no
    # compilation). Without waves the program differs, so the comparison can tell.
    def program(sizes):
        return str(jax.make_jaxpr(lambda k: mcts.gumbel_policy(
            params, k, root, rec, 8, wave_sizes=sizes))(jax.random.key(0)))
    assert program(8) == program((8,)) != program(())


def test_a_traced_temperature_samples_or_plays_greedily_as_a_concrete_one(net, roots):
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    key = jax.random.key(5)

    def act(t):
        return mcts.alphazero_policy(params, key, root, rec, 8, temperature=t).action

    traced = jax.jit(act)
    concrete = {}
    for t in (0.0, 0.5):  # the two concrete branches: greedy, and sampling at any t != 0
        concrete[t] = jax.jit(lambda: mcts.alphazero_policy(params, key, root, rec, 8,
                                                            temperature=t))()
        np.testing.assert_array_equal(np.asarray(traced(jnp.float32(t))),
                                      np.asarray(concrete[t].action))
    # Temperature 0 is the most visited action.
    out = concrete[0.0]
    visits = np.asarray(out.visit_counts)
    assert (visits[np.arange(len(visits)), np.asarray(out.action)] == visits.max(1)).all()


def test_alphazero_policy_without_simulations_plays_the_legal_prior(net, roots):
    """With no simulation there is no visit to count: the weights and the sampled
    action follow the root prior over the legal moves, not a uniform draw over every
    action, illegal ones included (action 8 here: the defender cannot stay)."""
    graphdef, params = net
    root = selfplay.root_fn(graphdef, ENV, params, roots)
    rec = functools.partial(selfplay.recurrent_fn, graphdef, ENV)
    play = jax.jit(jax.vmap(lambda k: mcts.alphazero_policy(
        params, k, root, rec, 0, dirichlet_fraction=0.0)))
    out = play(jax.random.split(jax.random.key(0), 64))
    logits, legal = np.asarray(root.prior_logits, np.float64), np.asarray(root.legal_action_mask)
    expected = np.where(legal, np.exp(logits - logits.max(-1, keepdims=True)), 0.0)
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(out.action_weights[0]), expected, atol=1e-6)
    assert not legal[:, 8].any() and legal[np.arange(8), np.asarray(out.action)].all()
