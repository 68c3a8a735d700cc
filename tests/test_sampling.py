"""Monte-Carlo CFR (jaxsolve.sampling): unbiased estimates, the special cases of the
general scheme, determinism, convergence and clear errors."""

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsolve
from conftest import EXPLOITABILITY, RUN, builtin_tree
from jaxsolve import sampling
from jaxsolve import sequences as seq
from jaxsolve.sampling._iteration import _compensated_rows_add, _dense_step
from toy_games import SpecGame, chance, decision, leaf


def chance_in_the_middle():
    """Chance after player 0's first move; player 1's infosets x and y each hold
    histories after both of player 0's actions (it does not see them)."""
    return SpecGame(decision(
        0, "a",
        chance((0.3, decision(1, "x", leaf(2, -2), decision(0, "b", leaf(-1, 1), leaf(3, -3)))),
               (0.7, decision(1, "y", leaf(0, 0), leaf(1, -1), leaf(-2, 2)))),
        chance((0.5, decision(1, "x", leaf(-1, 1), leaf(0, 0))),
               (0.5, decision(1, "y", leaf(4, -4), leaf(-3, 3), leaf(1, -1))))),
        name="chance_in_the_middle")


@functools.cache
def tree_named(name):
    if name == "chance_in_the_middle":
        return jaxsolve.compile_game(chance_in_the_middle())
    if name == "kuhn3":
        return builtin_tree("kuhn_poker", players=3)
    return builtin_tree(name)


def mixed_policy(tree, seed=0):
    """A fixed random policy with every legal probability >= 0.1 / A."""
    legal = np.asarray(tree.legal)
    raw = np.random.default_rng(seed).uniform(0.1, 1.0, legal.shape) * legal
    return jnp.asarray(raw / raw.sum(-1, keepdims=True))


SCHEMES = {  # name -> (make_scheme keywords, exploration)
    "outcome": (dict(expand_own=False, expand_opponents=False, expand_chance=False), 0.6),
    "external": (dict(expand_own=True, expand_opponents=False, expand_chance=False), 0.0),
    "chance": (dict(expand_own=True, expand_opponents=True, expand_chance=False), 0.0),
    "random mask": (None, 0.3),
}


def scheme_on(tree, name):
    keywords, exploration = SCHEMES[name]
    if keywords is None:  # a user's own per-(traverser, infoset) and per-chance-node mask
        rng = np.random.default_rng(1)
        P, I, C = tree.sizes.num_players, tree.sizes.num_infosets, tree.sizes.num_chance
        keywords = dict(mask=rng.random((P, I)) < 0.5, chance_mask=rng.random((P, C)) < 0.5)
    expand, expand_chance, capacity = sampling.make_scheme(tree, **keywords)
    return jnp.asarray(expand), jnp.asarray(expand_chance), capacity, exploration


@functools.partial(jax.jit, static_argnames=("traverser", "capacity", "exploration", "samples",
                                             "drawn"))
def many_estimates(tree, policy, expand, expand_chance, key, *, traverser, capacity,
                   exploration, samples, drawn="frontier"):
    """[M] independent estimates (values [M, I, A], reach weights [M, I]): one sample
    each by a frontier walk, or (`drawn` = "counts-systematic" / "counts-multinomial")
    a batch of 4 drawn as visit counts, so that the split has counts to divide."""
    traversal, _, split = drawn.partition("-")
    one = lambda k: sampling.estimate(  # noqa: E731
        tree, policy, traverser, k, expand=expand, expand_chance=expand_chance,
        capacity_=capacity, batch_size=1 if traversal == "frontier" else 4,
        exploration=exploration, traversal=traversal, split=split or "systematic")
    est = jax.vmap(one)(jax.random.split(key, samples))
    return est.values, est.reach_weights


def regrets_of(values, policy, owner, player):
    """Instantaneous regrets v(I, a) - sum_b sigma(I, b) v(I, b) at player's infosets."""
    expected = (policy * values).sum(-1, keepdims=True)
    return jnp.where((owner == player)[:, None], values - expected, 0.0)


def round_off(reference, roundings):
    """An absolute tolerance of `roundings` roundings of `reference`'s largest entry, in
    its dtype: what two orders of summing the same terms may differ by."""
    reference = np.asarray(reference)
    return roundings * np.finfo(reference.dtype).eps * np.abs(reference).max()


# Two implementations of the same step, two steps or 15 iterations on trees up to
# Leduc's: measured at most 20 roundings (Leduc's average policy after 15 iterations),
# so 64: about 1e-5 relative in float32.
ROUNDINGS = 64


def assert_unbiased(samples, exact, what):
    """The mean of M iid estimates has standard error s / sqrt(M) (s: their sample
    standard deviation), so by the central limit theorem it lies within 6 standard
    errors of the true mean except with probability ~2e-9 per entry. The policies
    keep every probability >= 0.1 / A and M = 20000, so the rarest sampled leaf
    (q >= ~1e-3) is drawn ~20+ times and s is a sound estimate of the spread.
    Entries that never vary are deterministic and must match to rounding."""
    samples, exact = np.asarray(samples), np.asarray(exact)
    mean, err = samples.mean(0), samples.std(0) / np.sqrt(len(samples))
    bad = np.abs(mean - exact) > 6 * err + 1e-10
    assert not bad.any(), (f"{what}: biased at {np.argwhere(bad)[:5].tolist()}: "
                           f"mean {mean[bad][:5]}, exact {exact[bad][:5]}, se {err[bad][:5]}")


@pytest.mark.parametrize("game,scheme,drawn", [
    *((g, s, "frontier") for g in ("kuhn_poker", "chance_in_the_middle") for s in SCHEMES),
    ("kuhn3", "outcome", "frontier"),  # two opponents
    # The same three-player reach products; random masks are covered on the others.
    pytest.param("kuhn3", "random mask", "frontier", marks=pytest.mark.slow),
    # Counts: the estimator of the frontier with leaves weighted by n / (q B); the
    # multinomial split's counts are checked to have mean B q in test_visit_counts.
    *(("kuhn_poker", s, "counts-systematic") for s in ("outcome", "external", "random mask")),
    ("chance_in_the_middle", "random mask", "counts-systematic")])
@pytest.mark.float64  # 6 standard errors resolve below float32 round-off of the estimates
def test_sampled_values_regrets_and_average_weights_are_unbiased(game, scheme, drawn):
    tree = tree_named(game)
    policy = mixed_policy(tree)
    expand, expand_chance, capacity, exploration = scheme_on(tree, scheme)
    flat = seq.flatten(tree, policy)
    reach, chance_reach = seq.player_reach(tree, flat), seq.chance_reach(tree)
    owner = jnp.asarray(tree.infoset_player)
    # Histories per infoset: with perfect recall each has its player's own reach, so
    # the average-strategy weight pi_r(h) / q(h) summed over visited h has mean
    # |I| * own_reach(I).
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    histories = np.bincount(index[player >= 0], minlength=tree.sizes.num_infosets)
    exact_weights = histories * np.asarray(seq.own_reach(tree, flat))
    for p in range(tree.sizes.num_players):
        exact = seq.counterfactual_values(tree, flat, seq.leaf_weights(tree, reach, chance_reach, p), p)
        values, weights = many_estimates(
            tree, policy, expand, expand_chance, jax.random.PRNGKey(10 + p), traverser=p,
            capacity=capacity, exploration=exploration, samples=20000, drawn=drawn)
        assert_unbiased(values, exact, f"{game}/{scheme} values of player {p}")
        sampled_regrets = jax.vmap(lambda v: regrets_of(v, policy, owner, p))(values)
        assert_unbiased(sampled_regrets, regrets_of(exact, policy, owner, p),
                        f"{game}/{scheme} regrets of player {p}")
        assert_unbiased(weights, exact_weights, f"{game}/{scheme} average weights")
        assert np.asarray(values).std(0).max() > 0  # the estimates are really random


@pytest.mark.float64  # the test above's precision
def test_a_biased_estimator_would_be_caught():
    """The tolerance sees a 15% bias in the noisiest scheme (outcome sampling; 20000
    samples resolve ~10% on Kuhn). Real mistakes are far larger: leaving the
    exploration out of q, or chance out of the weights, is off by a factor 2 or more."""
    tree = tree_named("kuhn_poker")
    policy = mixed_policy(tree)
    expand, expand_chance, capacity, exploration = scheme_on(tree, "outcome")
    flat = seq.flatten(tree, policy)
    exact = seq.counterfactual_values(
        tree, flat, seq.leaf_weights(tree, seq.player_reach(tree, flat), seq.chance_reach(tree), 0), 0)
    values, _ = many_estimates(tree, policy, expand, expand_chance, jax.random.PRNGKey(10),
                               traverser=0, capacity=capacity, exploration=exploration,
                               samples=20000)
    with pytest.raises(AssertionError, match="biased"):
        assert_unbiased(np.asarray(values) * 1.15, exact, "scaled")


@pytest.mark.parametrize("traversal", ["frontier", "counts"])
@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker", "chance_in_the_middle"])
def test_expanding_everything_is_alternating_cfr(game, traversal):
    """The all-expand scheme visits every leaf with q = 1, so it is CFR with
    alternating updates (OpenSpiel's CFRSolver, checked in test_openspiel_parity)
    iterate for iterate, drawn either way; every traversal touches every history."""
    tree = tree_named(game)
    full = jaxsolve.sampled_cfr(1, expand_chance=True, traversal=traversal)
    state = RUN(full, tree, full.init(tree), 15)
    cfr = jaxsolve.cfr(alternating=True)
    reference = RUN(cfr, tree, cfr.init(tree), 15)
    # The same sums in another order: 15 iterations of round-off of the largest regret.
    np.testing.assert_allclose(state.regrets, reference.regrets,
                               atol=round_off(reference.regrets, ROUNDINGS))
    np.testing.assert_allclose(jaxsolve.average_policy(tree, state),
                               jaxsolve.average_policy(tree, reference), 
                               atol=round_off(jaxsolve.average_policy(tree, reference), ROUNDINGS))
    assert state.frontier.shape == (tree.sizes.num_terminals,)
    assert float(jaxsolve.sampling.histories_touched(state)) == 15 * tree.sizes.num_players * tree.sizes.num_nodes


def test_capacity_is_the_largest_sampled_subtree():
    """Kuhn, player 0 traversing with external sampling: bet -> one reply of player 1
    (1 leaf); pass -> player 1 passes (1 leaf) or bets and player 0 expands fold
    and call (2 leaves): at most 1 + 2 = 3 leaves. Outcome sampling: 1."""
    tree = tree_named("kuhn_poker")
    assert sampling.make_scheme(tree, expand_own=True, expand_opponents=False)[2] == 3
    assert sampling.make_scheme(tree, expand_own=False, expand_opponents=False)[2] == 1
    assert sampling.make_scheme(tree, expand_chance=True)[2] == tree.sizes.num_terminals


@pytest.mark.parametrize("traversal", ["frontier", "counts"])
def test_same_key_same_run_other_key_other_run(traversal):
    tree = tree_named("kuhn_poker")
    solver = jaxsolve.outcome_sampling(batch_size=8, traversal=traversal)
    a = RUN(solver, tree, solver.init(tree, jax.random.PRNGKey(3)), 20)
    b = RUN(solver, tree, solver.init(tree, jax.random.PRNGKey(3)), 20)
    c = RUN(solver, tree, solver.init(tree, jax.random.PRNGKey(4)), 20)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a.regrets, c.regrets)


@pytest.mark.parametrize("make,steps,bound", [
    (lambda: jaxsolve.external_sampling(batch_size=32, traversal="frontier"), 300, 0.015),
    (lambda: jaxsolve.external_sampling(batch_size=32, traversal="counts"), 300, 0.015),
    (lambda: jaxsolve.outcome_sampling(batch_size=128, traversal="frontier"), 300, 0.03),
    (lambda: jaxsolve.outcome_sampling(batch_size=128, traversal="counts"), 300, 0.03),
])
def test_sampling_solvers_approach_the_kuhn_equilibrium(make, steps, bound):
    """Uniform play is 0.458 exploitable (NashConv 11/12 over 2); the bounds are
    what ~10^4 samples reach (OpenSpiel's solvers need as many iterations): measured
    0.0104, 0.0054, 0.0195 and 0.0030 in float32 (0.0090, 0.0046, 0.0177, 0.0030 in
    float64: another rounding is another sample path)."""
    tree = tree_named("kuhn_poker")
    solver = make()
    state = RUN(solver, tree, solver.init(tree, jax.random.PRNGKey(0)), steps)
    assert float(EXPLOITABILITY(tree, jaxsolve.average_policy(tree, state))) < bound


@pytest.mark.parametrize("traversal", ["frontier", "counts"])
def test_external_sampling_averages_a_one_player_game(traversal):
    """External sampling averages the opponents' infosets; a one-player game has none,
    and its average must still learn, not stay uniform (exploitability that of uniform
    play) while the regrets learn. Chance deals 0 or 1 (0.3, 0.7), the player sees it
    and picks: after 0, action 0 pays 1 and action 1 pays 0; after 1, 0 and 2. By hand,
    the best policy plays 0 then 1, worth 0.3 + 1.4 = 1.7, and uniform play is worth
    0.85."""
    game = SpecGame(chance((0.3, decision(0, "saw 0", leaf(1.0), leaf(0.0))),
                           (0.7, decision(0, "saw 1", leaf(0.0), leaf(2.0)))), players=1)
    tree = jaxsolve.compile_game(game)
    solver = jaxsolve.external_sampling(batch_size=4, traversal=traversal)
    state = RUN(solver, tree, solver.init(tree, jax.random.PRNGKey(0)), 200)
    average = np.asarray(jaxsolve.average_policy(tree, state))
    row = {name: i for i, name in enumerate(tree.names.infosets)}
    assert average[row["saw 0"], 0] > 0.95 and average[row["saw 1"], 1] > 0.95
    value = float(jaxsolve.policy_value(tree, average)[0])
    assert 1.7 - 0.05 < value <= 1.7 + 1e-6


def test_bad_input_is_refused_with_a_clear_message():
    tree = tree_named("kuhn_poker")
    with pytest.raises(ValueError, match="batch_size"):
        jaxsolve.outcome_sampling(batch_size=0)
    with pytest.raises(ValueError, match="exploration"):
        jaxsolve.outcome_sampling(exploration=1.5)
    # Bad settings, the mask's included, are ArgumentErrors, as the README says.
    with pytest.raises(jaxsolve.ArgumentError, match="exploration=0"):
        jaxsolve.outcome_sampling(exploration=0.0).init(tree)
    with pytest.raises(jaxsolve.ArgumentError, match="mask has shape"):
        jaxsolve.sampled_cfr(mask=np.ones(5, bool)).init(tree)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="mask must be a boolean array"):
        jaxsolve.sampled_cfr(mask=np.ones(12, int)).init(tree)
    with pytest.raises(jaxsolve.ArgumentError, match="outside jax.jit"):
        jax.jit(jaxsolve.external_sampling().init)(tree)
    with pytest.raises(jaxsolve.GameError, match="PRNGKey"):
        jaxsolve.external_sampling().init(tree, 7)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="threefry.*rbg"):
        jaxsolve.external_sampling().init(tree, jax.random.key(0, impl="rbg"))
    # The wrappers' schemes are theirs: a knob that would change it is refused by name.
    with pytest.raises(jaxsolve.ArgumentError, match="external_sampling fixes averaging"):
        jaxsolve.external_sampling(8, averaging="traverser")
    with pytest.raises(jaxsolve.ArgumentError, match="outcome_sampling fixes expand_own"):
        jaxsolve.outcome_sampling(8, expand_own=True)
    with pytest.raises(jaxsolve.ArgumentError, match="chance_sampling fixes exploration"):
        jaxsolve.chance_sampling(8, exploration=0.5)
    with pytest.raises(jaxsolve.ArgumentError, match="traversal must be"):
        sampling.estimate(tree, tree.legal / tree.legal.sum(-1, keepdims=True), 0,
                          jax.random.PRNGKey(0), expand=np.ones((2, tree.sizes.num_infosets), bool),
                          expand_chance=np.ones((2, tree.sizes.num_chance), bool), capacity_=1,
                          traversal="auto")


def test_a_state_of_another_sampling_scheme_is_refused():
    """The expand masks live in the state: an external-sampling state continued by the
    outcome-sampling solver would run ES's scheme under OS's name (and exploration)."""
    tree = tree_named("kuhn_poker")
    es_state = jaxsolve.external_sampling(8).init(tree)
    with pytest.raises(jaxsolve.ArgumentError, match="run: the state samples other nodes "
                                                     "than os-mccfr"):
        jaxsolve.run(jaxsolve.outcome_sampling(8), tree, es_state, 1)
    with pytest.raises(jaxsolve.ArgumentError, match="run_until: .*other nodes"):
        jaxsolve.run_until(jaxsolve.chance_sampling(8), tree, es_state, 0.1, 10)
    # Same scheme, other knobs (batch size, rule): the state continues.
    more = jaxsolve.run(jaxsolve.external_sampling(4, rule="cfr+"), tree, es_state, 1)
    assert int(more.iteration) == 1


@pytest.mark.parametrize("game", ["leduc_poker", "kuhn3"])
@pytest.mark.parametrize("make", [
    lambda: jaxsolve.outcome_sampling(batch_size=16),
    lambda: jaxsolve.external_sampling(batch_size=8),
    lambda: jaxsolve.sampled_cfr(4, expand_opponents=False, averaging="opponents", rule="cfr+"),
], ids=["outcome", "external", "floored"])
def test_sparse_step_equals_the_full_width_reference(game, make):
    """The solver touches only the rows its samples visit; `_dense_step` computes the
    same update with [I, A] arrays from `estimate` (whose unbiasedness is tested
    above). From a state with random regrets (no exact ties, where regret matching
    is discontinuous and rounding could flip a sample) two steps agree to rounding."""
    tree = tree_named(game)
    solver = make()
    state = solver.init(tree, jax.random.PRNGKey(5))
    rng = np.random.default_rng(0)
    regrets = rng.normal(size=state.regrets.shape)
    if solver.step.keywords["floor"]:  # floored regrets are never negative
        regrets = np.abs(regrets)
    state = state._replace(regrets=jnp.asarray(regrets) * tree.legal,
                           average=jnp.asarray(rng.uniform(size=state.regrets.shape)) * tree.legal)
    # "auto" picks the frontier here (B times the sampled subtree is below the tree).
    assert sampling.choose_traversal(tree, solver.step.keywords["batch_size"],
                                     state.frontier.shape[0]) == "frontier"
    dense = functools.partial(_dense_step,
                              **{**solver.step.keywords, "traversal": "frontier"})
    sparse_state = jax.jit(solver.step)(tree, jax.jit(solver.step)(tree, state))
    dense_state = jax.jit(dense)(tree, jax.jit(dense)(tree, state))
    np.testing.assert_allclose(sparse_state.regrets, dense_state.regrets,
                               atol=round_off(dense_state.regrets, ROUNDINGS))
    np.testing.assert_allclose(sparse_state.average, dense_state.average,
                               atol=round_off(dense_state.average, ROUNDINGS))
    np.testing.assert_allclose(sparse_state.average_carry, dense_state.average_carry,
                               atol=round_off(dense_state.average, ROUNDINGS))
    assert float(jaxsolve.sampling.histories_touched(sparse_state)) == float(
        jaxsolve.sampling.histories_touched(dense_state)) > 0
    assert not np.allclose(sparse_state.regrets, state.regrets)  # the step did something


def test_the_sparse_average_is_compensated_as_the_dense_one():
    """The sampled step adds the average's increments to the rows it touches with the
    dense step's compensation: each touched row's increments summed, then one
    `kahan_add`. In float32 a running sum of 2**24 loses every +1 added alone; the
    compensated sum keeps them in its carry (average - carry is the true sum)."""
    legal = jnp.array([[True, True], [True, False], [True, True]])
    average = jnp.full((3, 2), 2.0**24, jnp.float32) * legal
    carry = jnp.zeros((3, 2), jnp.float32)
    rows = jnp.array([0, 2, 0, 3, 0])  # row 0 three times; 3 = I, dropped
    increments = jnp.ones((5, 2), jnp.float32) * legal[jnp.minimum(rows, 2)]
    add = jax.jit(_compensated_rows_add)
    for _ in range(10):
        average, carry = add(average, carry, rows, increments, legal)
    exact = np.array([[2**24 + 30, 2**24 + 30], [2**24, 0], [2**24 + 10, 2**24 + 10]])
    np.testing.assert_array_equal(np.asarray(average, np.float64) - np.asarray(carry), exact)
    assert float(average[1, 0]) == 2.0**24 and float(carry[1, 0]) == 0.0  # untouched row
    # The same as the dense update of each row's summed increments.
    dense_average = jnp.full((3, 2), 2.0**24, jnp.float32) * legal
    dense_carry = jnp.zeros((3, 2), jnp.float32)
    summed = jnp.array([[3.0, 3.0], [0.0, 0.0], [1.0, 1.0]], jnp.float32)
    for _ in range(10):
        dense_average, dense_carry = jaxsolve.updates.kahan_add(
            dense_average, dense_carry, summed, legal & jnp.array([[True], [False], [True]]))
    np.testing.assert_array_equal(average, dense_average)
    np.testing.assert_array_equal(carry, dense_carry)


@pytest.mark.parametrize("traversal", ["frontier", "counts"])
def test_seeds_and_trees_vmap_and_split_runs_agree(traversal):
    """Many seeds and trees in one vmapped call (a parameter sweep vmaps the tree too;
    here Kuhn with doubled payoffs): each run is exactly the run it gets alone with
    the same key, and 10 + 10 steps equal 20 (the key is in the state)."""
    tree = tree_named("kuhn_poker")
    doubled = tree.replace(utilities=jnp.asarray(tree.utilities) * 2.0)
    trees = [tree, tree, doubled]
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    keys = [keys[0], keys[1], keys[1]]
    solver = jaxsolve.external_sampling(batch_size=4, traversal=traversal)
    states = [solver.init(t, k) for t, k in zip(trees, keys)]  # init: outside jit
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
    runs = jax.jit(jax.vmap(lambda t, s: jaxsolve.run(solver, t, s, 20)))(
        jaxsolve.batch.stack(trees), stacked)
    for i in (1, 2):
        alone = RUN(solver, trees[i], states[i], 20)
        np.testing.assert_array_equal(runs.regrets[i], alone.regrets)
        np.testing.assert_array_equal(runs.average[i], alone.average)
    halves = RUN(solver, tree, RUN(solver, tree, states[1], 10), 10)
    np.testing.assert_array_equal(halves.average, runs.average[1])
    np.testing.assert_array_equal(halves.regrets, runs.regrets[1])
    assert not np.array_equal(runs.regrets[0], runs.regrets[1])  # other seed, other run
    assert not np.array_equal(runs.regrets[1], runs.regrets[2])  # other payoffs


def test_the_touched_count_keeps_counting_in_float32():
    """A plain float32 sum stalls once its increments fall below half an ulp: at 2^28
    (ulp 32) a step adding 1..15 histories adds nothing. The compensated count against
    the exact integer sum of the same increments."""
    from jaxsolve.sampling._iteration import _count, histories_touched
    increments = np.random.default_rng(0).integers(1, 16, 3000)
    steps = jnp.asarray(increments, jnp.float32)
    final = jax.lax.fori_loop(0, len(increments), lambda i, t: _count(t, steps[i]),
                              jnp.array([2.0**28, 0.0], jnp.float32))
    counted = float(histories_touched(types.SimpleNamespace(touched=final)))
    exact = 2**28 + int(increments.sum())  # ~24000 more
    assert abs(counted - exact) <= 32  # one float32 ulp at 2^28, not the whole sum
    # The plain sum this replaced never moves.
    plain = jax.lax.fori_loop(0, len(increments), lambda i, t: t + steps[i],
                              jnp.float32(2.0**28))
    assert float(plain) == 2.0**28
