"""Writing your own solver: `cfr_variant` with a rule of your own, and the building
blocks it is made of (`counterfactual_values`, `jaxsolve.sequences`).

The references are OpenSpiel's: its Python `CFRSolver` and `CFRPlusSolver` call one
module-level function, `cfr._regret_matching`, to turn cumulative regrets into the
next policy. Swapping in Hedge (exponential weights) there gives OpenSpiel's own
CFR-with-Hedge iterates, which our `cfr_variant` with the same rule must reproduce
in float64. Counterfactual values are checked against OpenSpiel's
`action_value.TreeWalkCalculator` (`sum_cfr_reach_by_action_value`), a history walk.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsolve
from conftest import AVERAGE, RUN, pyspiel_game, pyspiel_tree
from jaxsolve import kernel
from jaxsolve import sequences as seq

# OpenSpiel's iterates and values to 1e-10 and finer, and a float32 state under x64.
pytestmark = pytest.mark.float64

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python import policy as os_policy  # noqa: E402
from open_spiel.python.algorithms import action_value, cfr as os_cfr  # noqa: E402

ETA = 0.7


def hedge(regrets, rows, eta=ETA):
    """The policy proportional to exp(eta * regret) over each infoset's legal actions,
    on whatever layout `rows` describes (`jaxsolve.Rows`)."""
    z = jnp.exp(eta * (regrets - rows.max(regrets)))
    return z / rows.total(z)


def openspiel_hedge(cumulative_regrets, legal_actions):
    """The same rule in OpenSpiel's `_regret_matching` signature (dict in, dict out)."""
    z = np.array([ETA * cumulative_regrets[a] for a in legal_actions])
    w = np.exp(z - z.max())
    return dict(zip(legal_actions, w / w.sum()))


# Built once: jit compares solvers by their functions (see Solver's docstring).
HEDGE_CFR = jaxsolve.cfr_variant("cfr-hedge", hedge, gamma=0.0)  # OpenSpiel's CFRSolver
HEDGE_CFR_PLUS = jaxsolve.cfr_variant("cfr+-hedge", hedge, floor=True, gamma=1.0)  # CFRPlusSolver
VARIANTS = {"CFRSolver": HEDGE_CFR, "CFRPlusSolver": HEDGE_CFR_PLUS}


def _rows(tree, tabular):
    """An OpenSpiel TabularPolicy as our [I, A] array, rows matched by infoset string."""
    return np.stack([tabular.policy_for_key(name)[:tree.sizes.num_actions]
                     for name in tree.names.infosets])


@pytest.mark.parametrize("kind", sorted(VARIANTS))
@pytest.mark.parametrize("name,params,iters", [("kuhn_poker", {}, 40),
                                               ("kuhn_poker", {"players": 3}, 20),
                                               ("leduc_poker", {}, 3)],
                         ids=["kuhn", "kuhn3", "leduc"])
def test_hedge_variant_equals_openspiel_with_hedge_swapped_in(monkeypatch, kind, name, params,
                                                              iters):
    game, tree = pyspiel_game(name, **params), pyspiel_tree(name, **params)
    monkeypatch.setattr(os_cfr, "_regret_matching", openspiel_hedge)
    theirs = getattr(os_cfr, kind)(game)
    for _ in range(iters):
        theirs.evaluate_and_update_policy()
    solver = VARIANTS[kind]
    state = RUN(solver, tree, solver.init(tree), iters)
    np.testing.assert_allclose(np.asarray(AVERAGE(tree, state)),
                               _rows(tree, theirs.average_policy()), atol=1e-10)
    # The next iterate: the variant's own rule, and only with the solver given.
    current = np.asarray(jaxsolve.current_policy(tree, state, solver))
    np.testing.assert_allclose(current, _rows(tree, theirs.current_policy()), atol=1e-10)
    np.testing.assert_array_equal(
        np.asarray(jaxsolve.final_policy(tree, state, "current", solver=solver)), current)
    assert not np.allclose(np.asarray(jaxsolve.current_policy(tree, state)), current)


def test_hedge_differs_from_regret_matching():
    """The rule reaches the step: Hedge's iterates are not CFR's (both alternating,
    uniform averaging), yet both approach equilibrium on Kuhn."""
    tree = pyspiel_tree("kuhn_poker")
    hedge_avg = AVERAGE(tree, RUN(HEDGE_CFR, tree, HEDGE_CFR.init(tree), 200))
    cfr = jaxsolve.cfr(alternating=True)
    cfr_avg = AVERAGE(tree, RUN(cfr, tree, cfr.init(tree), 200))
    assert np.max(np.abs(np.asarray(hedge_avg) - np.asarray(cfr_avg))) > 1e-3
    for policy in (hedge_avg, cfr_avg):
        assert float(jaxsolve.exploitability(tree, policy)) < 0.05  # uniform: 0.458


@pytest.mark.parametrize("name,params", [("kuhn_poker", {}), ("kuhn_poker", {"players": 3}),
                                         ("leduc_poker", {})], ids=["kuhn", "kuhn3", "leduc"])
def test_counterfactual_values_equal_openspiel_tree_walk(name, params):
    game, tree = pyspiel_game(name, **params), pyspiel_tree(name, **params)
    rng = np.random.default_rng(7)
    legal = np.asarray(tree.legal)
    policy = rng.random(legal.shape) * legal
    policy /= policy.sum(axis=1, keepdims=True)
    tabular = os_policy.TabularPolicy(game)
    for i, infoset in enumerate(tree.names.infosets):
        tabular.policy_for_key(infoset)[:legal.shape[1]] = policy[i]
    walk = action_value.TreeWalkCalculator(game)([tabular] * game.num_players(), tabular)
    keys = [(p, s) for p, states in enumerate(tabular.states_per_player) for s in states]
    row = {s: k for k, (_, s) in enumerate(keys)}
    owner = np.asarray(tree.infoset_player)
    for player in range(game.num_players()):
        q, v = jaxsolve.counterfactual_values(tree, jnp.asarray(policy), player)
        q, v = np.asarray(q), np.asarray(v)
        mine = owner == player
        theirs = np.stack([walk.sum_cfr_reach_by_action_value[row[s]][:legal.shape[1]]
                           for s in np.asarray(tree.names.infosets)[mine]])
        np.testing.assert_allclose(q[mine], theirs, atol=1e-12)
        np.testing.assert_allclose(v[mine], (policy[mine] * theirs).sum(axis=1), atol=1e-12)
        assert not q[~mine].any() and not q[~legal].any()


def test_a_rules_parameter_sweeps_under_vmap():
    """Built inside the vmapped function, the rule's eta is traced: one call for all."""
    tree = pyspiel_tree("kuhn_poker")
    etas = jnp.array([0.2, 2.0])

    def average(eta):
        solver = jaxsolve.cfr_variant("h", functools.partial(hedge, eta=eta), gamma=0.0)
        return jaxsolve.average_policy(tree, jaxsolve.run(solver, tree, solver.init(tree), 15))

    swept = jax.jit(jax.vmap(average))(etas)
    for k, eta in enumerate([0.2, 2.0]):
        one = jaxsolve.cfr_variant("h", functools.partial(hedge, eta=eta), gamma=0.0)
        alone = jaxsolve.average_policy(tree, jaxsolve.run(one, tree, one.init(tree), 15))
        np.testing.assert_allclose(np.asarray(swept[k]), np.asarray(alone), atol=1e-12)
    assert not np.allclose(np.asarray(swept[0]), np.asarray(swept[1]))


def test_the_knobs_sweep_under_vmap():
    """DCFR's alpha and gamma traced: one compiled call solves every setting, each as
    the solver built from Python numbers does."""
    tree = pyspiel_tree("kuhn_poker")
    settings = [(1.0, 1.0), (1.5, 2.0), (3.0, 0.5)]

    def average(alpha, gamma):
        solver = jaxsolve.dcfr(alpha, 0.0, gamma)
        return jaxsolve.average_policy(tree, jaxsolve.run(solver, tree, solver.init(tree), 12))

    alphas, gammas = (jnp.array(x) for x in zip(*settings))
    swept = jax.jit(jax.vmap(average))(alphas, gammas)
    for k, (alpha, gamma) in enumerate(settings):
        np.testing.assert_allclose(np.asarray(swept[k]), np.asarray(average(alpha, gamma)),
                                   atol=1e-12)
    assert not np.allclose(np.asarray(swept[0]), np.asarray(swept[1]))

    def variant_regrets(beta):  # a variant's knobs likewise
        solver = jaxsolve.cfr_variant("v", alpha=1.5, beta=beta, gamma=2.0)
        return jaxsolve.run(solver, tree, solver.init(tree), 5).regrets

    swept = jax.vmap(variant_regrets)(jnp.array([0.0, 1.0]))
    np.testing.assert_allclose(np.asarray(swept[1]), np.asarray(variant_regrets(1.0)),
                               atol=1e-12)


def test_a_rule_runs_alike_on_packed_and_padded_rows():
    """Written on `Rows`, Hedge gives the same iterates in the kernel's packed layout
    and in its padded formulation (the one a tree where a player forgets takes)."""
    tree = pyspiel_tree("leduc_poker")
    rule = HEDGE_CFR_PLUS.steps.keywords["rule"]
    packed = RUN(HEDGE_CFR_PLUS, tree, HEDGE_CFR_PLUS.init(tree), 4)
    padded = HEDGE_CFR_PLUS.init(tree)
    for _ in range(4):
        padded = kernel.padded_step(tree, padded, rule)
    for field in ("regrets", "average"):
        np.testing.assert_allclose(np.asarray(getattr(packed, field)),
                                   np.asarray(getattr(padded, field)), rtol=0, atol=1e-12)


def test_a_built_ins_settings_are_the_built_in():
    """`cfr_variant` with CFR+'s settings runs CFR+'s code: the same iterates, bit
    for bit, on a tree whose infosets the packing reorders."""
    tree = pyspiel_tree("liars_dice", dice_sides=3)
    mine = jaxsolve.cfr_variant("my-cfr+", jaxsolve.regret_matching, floor=True)
    ours, theirs = (RUN(s, tree, s.init(tree), 9) for s in (mine, jaxsolve.cfr_plus()))
    np.testing.assert_array_equal(np.asarray(ours.average), np.asarray(theirs.average))
    np.testing.assert_array_equal(np.asarray(ours.regrets), np.asarray(theirs.regrets))


class PlainState(NamedTuple):
    regrets: jax.Array
    average: jax.Array


def _plain_init(tree):
    zeros = jnp.zeros((tree.sizes.num_infosets, tree.sizes.num_actions))
    return PlainState(zeros, zeros)


def _plain_step(tree, state):
    """Vanilla CFR, simultaneous updates, from `jaxsolve.sequences` alone."""
    legal, owner = jnp.asarray(tree.legal), jnp.asarray(tree.infoset_player)
    policy = jaxsolve.regret_matching(state.regrets, legal)
    flat = seq.flatten(tree, policy)
    # Chance in the state's precision, so that a float32 state stays float32 under x64.
    reach, chance = seq.player_reach(tree, flat), seq.chance_reach(tree, policy.dtype)
    own = seq.own_reach(tree, flat)
    regrets, average = state.regrets, state.average
    for p in range(tree.sizes.num_players):
        q = seq.counterfactual_values(tree, flat, seq.leaf_weights(tree, reach, chance, p), p)
        mine = (owner == p)[:, None] & legal
        v = (policy * q).sum(axis=-1, keepdims=True)
        regrets = jnp.where(mine, regrets + q - v, regrets)
        average = jnp.where(mine, average + own[:, None] * policy, average)
    return PlainState(regrets, average)


PLAIN_CFR = jaxsolve.Solver(_plain_init, _plain_step, "plain-cfr", PlainState)


def test_a_solver_written_from_the_building_blocks_equals_openspiel():
    """The README's recipe for an update outside the family: a state of one's own
    (`average_policy` needs only `.average`), the `sequences` building blocks. Vanilla
    CFR with simultaneous updates is OpenSpiel's `_CFRSolver` with
    alternating_updates=False."""
    game, tree = pyspiel_game("kuhn_poker"), pyspiel_tree("kuhn_poker")
    theirs = os_cfr._CFRSolver(game, regret_matching_plus=False, alternating_updates=False,
                               linear_averaging=False)
    for _ in range(20):
        theirs.evaluate_and_update_policy()
    state = RUN(PLAIN_CFR, tree, PLAIN_CFR.init(tree), 20)
    np.testing.assert_allclose(np.asarray(AVERAGE(tree, state)),
                               _rows(tree, theirs.average_policy()), atol=1e-12)
    average_only = NamedTuple("AverageOnly", [("average", jax.Array)])(state.average)
    np.testing.assert_array_equal(np.asarray(jaxsolve.average_policy(tree, average_only)),
                                  np.asarray(AVERAGE(tree, state)))


def test_a_float32_state_of_ones_own_runs_on_in_float32_under_x64():
    """regret_matching's uniform fallback keeps the state's dtype under x64 (legal /
    legal.sum() would be float64), so the building blocks keep a float32 state float32
    and `run`'s loop carries one type. The float32 run follows the float64 one, which the
    test above checks against OpenSpiel, to float32 round-off."""
    tree = pyspiel_tree("kuhn_poker")
    legal = jnp.asarray(tree.legal)
    assert jaxsolve.regret_matching(jnp.zeros(legal.shape, jnp.float32), legal).dtype == jnp.float32
    wide = PLAIN_CFR.init(tree)
    narrow = jax.tree.map(lambda x: x.astype(jnp.float32), wide)
    state = RUN(PLAIN_CFR, tree, narrow, 20)
    assert state.regrets.dtype == state.average.dtype == jnp.float32
    policy = jaxsolve.average_policy(tree, state)
    assert policy.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(policy),
                               np.asarray(AVERAGE(tree, RUN(PLAIN_CFR, tree, wide, 20))),
                               atol=1e-5)
    # current_policy needs only .regrets of a state of one's own (it also read .prediction).
    np.testing.assert_array_equal(np.asarray(jaxsolve.current_policy(tree, state)),
                                  np.asarray(jaxsolve.regret_matching(state.regrets, legal)))


class OwnNames(NamedTuple):
    regrets: jax.Array  # [P, I, A]: per player, not CFRState's [I, A]
    prediction: jax.Array  # [I]: not CFRState's [I, A]
    total_weight: jax.Array  # int32: not CFRState's float


def test_a_state_of_ones_own_may_use_cfrstates_field_names():
    """run does not read fields named like CFRState's as CFRState's: a per-player
    `regrets` [P, I, A] is not "a batch axis of 2", an [I] `prediction` not "another
    game", an int `total_weight` not "must share one float dtype". A state of one's own
    is checked only for what a function needs (average_policy: `.average` [I, A])."""
    tree = pyspiel_tree("kuhn_poker")
    shape = (tree.sizes.num_infosets, tree.sizes.num_actions)
    counting = jaxsolve.Solver(
        lambda t: OwnNames(jnp.zeros((2,) + shape), jnp.zeros(shape[:1]), jnp.zeros((), jnp.int32)),
        lambda t, s: OwnNames(s.regrets + 1.0, s.prediction + 2.0, s.total_weight + 1), "own")
    state = jaxsolve.run(counting, tree, counting.init(tree), 3)
    assert int(state.total_weight) == 3 and float(state.prediction[0]) == 6.0
    # The library's own states are still checked field by field.
    with pytest.raises(jaxsolve.ArgumentError, match=r"state\.regrets is \[2, 12, 2\].*batch axis"):
        jaxsolve.average_policy(tree, jaxsolve.cfr_plus().init(tree)._replace(
            regrets=jnp.zeros((2,) + shape)))


class CountedAverage(NamedTuple):
    average: jax.Array
    steps: jax.Array


def test_run_takes_a_state_of_ones_own_without_regrets():
    """The Solver docstring: any state works with `run`. This one has no `.regrets`
    (run takes it as run_until does): it averages the uniform policy,
    whose NashConv in Kuhn poker is the published 11/12."""
    tree = pyspiel_tree("kuhn_poker")
    legal = jnp.asarray(tree.legal, jnp.float64)
    uniform = jaxsolve.Solver(
        lambda t: CountedAverage(jnp.zeros_like(legal), jnp.zeros((), jnp.int32)),
        lambda t, s: CountedAverage(s.average + legal, s.steps + 1), "uniform")
    state = jaxsolve.run(uniform, tree, uniform.init(tree), 3)
    assert int(state.steps) == 3
    assert float(jaxsolve.nash_conv(tree, jaxsolve.average_policy(tree, state))) == \
        pytest.approx(11 / 12, abs=1e-12)
    with pytest.raises(TypeError, match=r"^run: expected a solver state \(a pytree of arrays\)"):
        jaxsolve.run(uniform, tree, None, 3)


def test_bad_variants_and_rules_are_refused():
    tree = pyspiel_tree("kuhn_poker")
    with pytest.raises(jaxsolve.ArgumentError, match="alpha and beta go together"):
        jaxsolve.cfr_variant("x", alpha=1.5)
    with pytest.raises(jaxsolve.ArgumentError, match="gamma must"):
        jaxsolve.cfr_variant("x", gamma=-1.0)
    with pytest.raises(jaxsolve.ArgumentError, match="policy_rule must be a function"):
        jaxsolve.cfr_variant("x", "hedge")
    with pytest.raises(jaxsolve.ArgumentTypeError, match="floor must be True or False"):
        jaxsolve.cfr_variant("x", floor="yes")
    rows_only = jaxsolve.cfr_variant("rows", lambda r, rows: jnp.sum(r, axis=-1))
    with pytest.raises(jaxsolve.ArgumentError,
                       match=r"rows: policy_rule.* shaped like regrets \[12\], got \(\)"):
        jaxsolve.run(rows_only, tree, rows_only.init(tree), 1)
    # A rule of the [I, A] signature (regrets, legal mask) is told what rows is.
    masked = jaxsolve.cfr_variant("masked", lambda r, legal: jax.nn.softmax(
        jnp.where(legal, r, -jnp.inf), axis=-1))
    with pytest.raises(jaxsolve.ArgumentError, match=r"masked: .*rows is a jaxsolve\.Rows"):
        jaxsolve.run(masked, tree, masked.init(tree), 1)


def test_sequences_refuse_misshapen_inputs():
    """The building blocks index with the tree's arrays: a policy in the wrong layout
    would give a wrong answer silently (own_reach of an [I, A] policy) or fail deep
    inside JAX."""
    tree = pyspiel_tree("kuhn_poker")
    policy = jaxsolve.uniform_policy(tree)
    flat = seq.flatten(tree, policy)
    reach, chance = seq.player_reach(tree, flat), seq.chance_reach(tree)
    weights = seq.leaf_weights(tree, reach, chance, 0)
    batch, _ = jaxsolve.sweep(tree, utilities=np.asarray(tree.utilities)[None] * np.ones((3, 1, 1)))
    cases = [
        (lambda: seq.own_reach(tree, policy), r"own_reach: flat_policy .* \[25\], got \[12, 2\]"),
        (lambda: seq.player_reach(tree, policy), r"player_reach: flat_policy"),
        (lambda: seq.flatten(tree, flat), r"flatten: policy must have shape \[12, 2\], got \[25\]"),
        (lambda: seq.leaf_weights(tree, reach[0], chance, 0), r"leaf_weights: reach .* \[2, 30\]"),
        (lambda: seq.counterfactual_values(tree, policy, weights, 0),
         r"counterfactual_values: flat_policy"),
        (lambda: seq.best_response(tree, reach, 0), r"best_response: weights .* \[30\]"),
        # A player out of range read the last player's arrays (-1) or gave a product
        # of every player's reach (2) without a word.
        (lambda: seq.leaf_weights(tree, reach, chance, 2),
         r"^sequences\.leaf_weights: player must be an integer in \[0, 1\] \(2 players\), got 2$"),
        (lambda: seq.counterfactual_values(tree, flat, weights, -1),
         r"^sequences\.counterfactual_values: player must be an integer in \[0, 1\]"),
        (lambda: seq.best_response(tree, weights, 5), r"^sequences\.best_response: player must"),
        (lambda: seq.others_reach(reach, chance, 2),
         r"^sequences\.others_reach: player must be an integer in \[0, 1\] \(a Python int"),
        # A sweep's batch outside vmap is refused, not read as its first game.
        (lambda: seq.chance_reach(batch), r"^sequences\.chance_reach: the tree has a batch axis "
                                          r"of 3 .*jax\.vmap"),
        (lambda: seq.player_reach(batch, flat), r"^sequences\.player_reach: the tree has a batch"),
    ]
    for call, message in cases:
        with pytest.raises(jaxsolve.ArgumentError, match=message):
            call()


def test_a_traced_player_is_refused_with_the_static_idiom():
    """best_response and counterfactual_values pick the player's arrays in Python: a
    traced player would fail inside JAX (TracerBoolConversionError)."""
    tree = pyspiel_tree("kuhn_poker")
    policy = jaxsolve.uniform_policy(tree)
    for f in (jaxsolve.counterfactual_values, jaxsolve.best_response):
        with pytest.raises(jaxsolve.ArgumentTypeError, match=r"static_argnums=2"):
            jax.jit(f)(tree, policy, 1)
        np.testing.assert_array_equal(np.asarray(jax.jit(f, static_argnums=2)(tree, policy, 1)[0]),
                                      np.asarray(f(tree, policy, 1)[0]))
