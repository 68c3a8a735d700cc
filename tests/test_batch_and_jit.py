"""A batch of trees solved in one vmapped call equals solving each alone; jitted
calls on trees of one shape compile once."""

import re

import jax
import numpy as np
import pytest

import jaxsolve
from conftest import RUN, builtin_tree
from jaxsolve.tree.sizes import ARRAY_FIELDS

ITERS = 25


def _perturbed_kuhn(rng, count):
    tree = builtin_tree("kuhn_poker")
    u = np.asarray(tree.utilities)
    utilities = np.stack([u * rng.uniform(0.5, 2.0) + rng.normal(0, 0.3, u.shape) for _ in range(count)])
    probs = np.asarray(tree.chance_probs)
    noisy = np.where(probs > 0, probs * rng.uniform(0.5, 1.5, (count,) + probs.shape), 0.0)
    chance = noisy / noisy.sum(-1, keepdims=True)
    return tree, utilities, chance


@pytest.mark.parametrize("solver", [jaxsolve.cfr(), jaxsolve.cfr_plus(), jaxsolve.dcfr()],
                         ids=lambda s: s.name)
def test_sweep_equals_solving_each_tree_alone(solver):
    tree, utilities, chance = _perturbed_kuhn(np.random.default_rng(1), 4)
    batch, axes = jaxsolve.sweep(tree, utilities=utilities, chance_probs=chance)
    solve = jax.jit(jax.vmap(lambda t: jaxsolve.run(solver, t, solver.init(t), ITERS),
                             in_axes=(axes,)))
    batched = solve(batch)
    for b in range(len(utilities)):
        single = tree.replace(utilities=utilities[b], chance_probs=chance[b])
        alone = RUN(solver, single, solver.init(single), ITERS)
        np.testing.assert_allclose(batched.average[b], alone.average, atol=1e-12)
        np.testing.assert_allclose(batched.regrets[b], alone.regrets, atol=1e-12)


def test_stacked_trees_and_vmapped_exploitability():
    tree, utilities, chance = _perturbed_kuhn(np.random.default_rng(2), 3)
    trees = [tree.replace(utilities=utilities[b]) for b in range(3)]
    batch = jaxsolve.stack(trees)
    policy = jaxsolve.uniform_policy(tree)
    batched = jax.vmap(jaxsolve.nash_conv, in_axes=(0, None))(batch, policy)
    for b, t in enumerate(trees):
        assert float(batched[b]) == pytest.approx(float(jaxsolve.nash_conv(t, policy)), abs=1e-12)


def test_batch_inputs_are_validated():
    tree = builtin_tree("kuhn_poker")
    with pytest.raises(jaxsolve.ArgumentError, match=r"utilities must have shape \[B, 30, 2\]"):
        jaxsolve.sweep(tree, utilities=np.zeros((2, 29, 2)))
    with pytest.raises(jaxsolve.ArgumentError, match=r"row \[0, 0\] of 'chance_probs' sums to 3"):
        jaxsolve.sweep(tree, chance_probs=np.ones((2,) + np.shape(tree.chance_probs)))
    u, probs = np.asarray(tree.utilities), np.asarray(tree.chance_probs)
    with pytest.raises(jaxsolve.ArgumentError, match="same batch size B, got 2 and 3"):
        jaxsolve.sweep(tree, utilities=np.stack([u] * 2), chance_probs=np.stack([probs] * 3))
    with pytest.raises(jaxsolve.GameError, match=r"sizes.num_players is 3 against 2"):
        jaxsolve.stack([tree, builtin_tree("kuhn_poker", players=3)])
    # Names: which one differs, and for a game name the ways to batch anyway.
    variant = tree.renamed("kuhn_poker(ante=2)")
    with pytest.raises(jaxsolve.GameError, match=re.escape(
            f"its game is named 'kuhn_poker(ante=2)', tree 0's {tree.names.game!r}; if only payoffs "
            "or chance differ, give them one name (tree.renamed(name))")):
        jaxsolve.stack([tree, variant])
    renamed = jaxsolve.stack([tree.renamed("kuhn variants"), variant.renamed("kuhn variants")])
    assert renamed.names.game == "kuhn variants"
    assert renamed.names.infosets == tree.names.infosets
    with pytest.raises(jaxsolve.ArgumentTypeError, match="game must be a non-empty str"):
        tree.renamed("")


def _kuhn_second_deal(tree):
    """Kuhn's chance rows by their histories: the first deal at the root, then one row per
    card the first player holds."""
    histories = tree.chance_histories()
    first = [r for r, h in enumerate(histories) if h == []]
    second = {h[0]: r for r, h in enumerate(histories) if len(h) == 1}
    assert len(first) == 1 and sorted(second) == [0, 1, 2], histories
    return first[0], second


def test_chance_rows_are_named_by_their_histories_and_keep_to_the_tree():
    tree = builtin_tree("kuhn_poker")
    probs = np.asarray(tree.chance_probs)
    root, second = _kuhn_second_deal(tree)
    np.testing.assert_allclose(probs[root], [1 / 3] * 3)
    for card, row in second.items():  # the card dealt first cannot be dealt again
        expected = np.full(3, 0.5)
        expected[card] = 0.0
        np.testing.assert_allclose(probs[row], expected)
    # That card has no subtree, so no sweep or replace may give it weight.
    bad = probs.copy()
    bad[second[1]] = 1 / 3
    with pytest.raises(jaxsolve.ArgumentError, match=(
            r"sweep: array 'chance_probs' gives outcome 1 of row \[1, %d\] \(the chance node "
            r"after actions \[1\]\) probability 0.333333, but the tree has no subtree"
            % second[1])):
        jaxsolve.sweep(tree, chance_probs=np.stack([probs, bad]))
    with pytest.raises(jaxsolve.ArgumentError, match="GameTree.replace: .*no subtree"):
        tree.replace(chance_probs=bad)


def test_replace_keeps_the_tree_s_shapes_and_checks_the_numbers():
    tree = builtin_tree("kuhn_poker")
    u = np.asarray(tree.utilities)
    with pytest.raises(jaxsolve.ArgumentError, match=r"utilities must have the tree's shape "
                                                     r"\(30, 2\), got \(30, 1\)"):
        tree.replace(utilities=u[:, :1])
    with pytest.raises(jaxsolve.ArgumentError, match="got \\(2, 30, 2\\) \\(build a batch with "
                                                     "jaxsolve.sweep"):
        tree.replace(utilities=np.stack([u, u]))
    with pytest.raises(jaxsolve.ArgumentTypeError, match="legal has dtype int64, expected bool"):
        tree.replace(legal=np.asarray(tree.legal).astype(np.int64))
    with pytest.raises(jaxsolve.ArgumentError, match=r"row \[0\] of 'chance_probs' sums to 1.8"):
        tree.replace(chance_probs=np.where(np.asarray(tree.chance_probs) > 0, 0.6, 0.0))
    with pytest.raises(jaxsolve.ArgumentError, match="holds nan at \\[3, 1\\]"):
        tree.replace(utilities=np.where(np.arange(30)[:, None] * 2 + [0, 1] == 7, np.nan, u))
    with pytest.raises(jaxsolve.ArgumentError, match="sizes cannot be replaced"):
        tree.replace(sizes=tree.sizes)
    # utility_sum follows the payoffs: shifted by one each, Kuhn sums to 2 at every leaf.
    assert tree.replace(utilities=u + 1).sizes.utility_sum == 2.0
    assert tree.replace(utilities=u + 1).summary()["zero_sum"] is False

    # Traced, only shapes can be checked. The value is linear in the utilities, and its
    # gradient is the probability of reaching each leaf: uniform play reaches each of
    # Kuhn's 30 leaves with positive probability, and the probabilities sum to 1.
    policy = jaxsolve.uniform_policy(tree)
    grad = jax.grad(lambda x: jaxsolve.policy_value(tree.replace(utilities=x), policy)[0])(u)
    assert np.all(grad[:, 0] > 0) and np.all(grad[:, 1] == 0)
    # Each of the 30 rounded probabilities is off by at most one rounding.
    assert float(np.sum(grad[:, 0])) == pytest.approx(1.0, abs=30 * float(np.finfo(grad.dtype).eps))


def test_batches_save_load_and_unstack(tmp_path, capsys):
    from jaxsolve import cli
    tree = builtin_tree("kuhn_poker")
    u = np.asarray(tree.utilities)
    batch, axes = jaxsolve.sweep(tree, utilities=np.stack([u, 2 * u, u + 1]))
    # Sums 0, 0 and 2: the batch shares none, its games each their own.
    assert batch.sizes.utility_sum is None
    loaded = jaxsolve.GameTree.load(batch.save(tmp_path / "sweep.npz"))
    found = jaxsolve.batch_axes(loaded)
    assert all(getattr(found, f) == getattr(axes, f) for f in ARRAY_FIELDS)
    games_ = jaxsolve.unstack(loaded)
    assert [g.sizes.utility_sum for g in games_] == [0.0, 0.0, 2.0]
    for g, scale in zip(games_, (u, 2 * u, u + 1)):
        np.testing.assert_array_equal(g.utilities, scale)
        np.testing.assert_array_equal(g.children, tree.children)
    stacked = jaxsolve.stack(games_[:2])
    assert stacked.sizes.utility_sum == 0.0
    assert all(getattr(jaxsolve.batch_axes(stacked), f) == 0 for f in ARRAY_FIELDS)
    np.testing.assert_array_equal(jaxsolve.unstack(stacked)[1].utilities, 2 * u)
    with pytest.raises(jaxsolve.ArgumentError, match="unstack|batch_axes: the tree has no batch"):
        jaxsolve.unstack(tree)
    # The command line solves one game and says so in one line.
    assert cli.main(["solve", str(tmp_path / "sweep.npz")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "sweep.npz holds a batch of 3 games" in err and len(err.strip().splitlines()) == 1


def test_second_call_with_same_shapes_does_not_recompile():
    traces = []

    def run(solver, tree, state, n):
        traces.append(1)  # runs only while tracing
        return jaxsolve.run(solver, tree, state, n)

    jitted = jax.jit(run, static_argnums=(0,))
    tree, utilities, _ = _perturbed_kuhn(np.random.default_rng(3), 2)
    solver = jaxsolve.cfr_plus()
    other = tree.replace(utilities=utilities[0])
    # Perturbed payoffs are general-sum: the listing follows, the program does not.
    assert tree.sizes.utility_sum == 0.0 and other.sizes.utility_sum is None
    state = jitted(solver, tree, solver.init(tree), 5)
    jitted(solver, other, state, 7)  # other utilities, other count: same program
    jitted(jaxsolve.cfr_plus(), tree, state, 3)  # factories are cached: same solver
    assert len(traces) == 1


def test_run_called_directly_compiles_once_for_any_count():
    # `run` is jitted inside: its loop body is a new function on every call, so an
    # unjitted fori_loop traced and compiled the whole loop again each time (3 calls,
    # 3 compiles, ~18x slower per call on Leduc). Any count, of any integer kind,
    # reuses the one compilation, and calls continue one another.
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.lcfr()  # a solver no other test here runs directly
    compiled = jaxsolve.solvers._run_steps
    before = compiled._cache_size()
    a = jaxsolve.run(solver, tree, solver.init(tree), 10)
    first = compiled._cache_size()  # one more, unless another test compiled it already
    b = jaxsolve.run(solver, tree, a, np.int32(5))
    c = jaxsolve.run(solver, tree, b, np.int64(7))
    assert first - before <= 1 and compiled._cache_size() == first
    whole = RUN(solver, tree, solver.init(tree), 22)
    assert int(c.iteration) == 22
    np.testing.assert_allclose(c.average, whole.average, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("make", [jaxsolve.cfr_plus, lambda: jaxsolve.outcome_sampling(8)],
                         ids=["cfr+", "os-mccfr"])
def test_a_fresh_state_can_be_donated(make):
    # init must not return one zeros buffer in several fields: XLA refuses to donate
    # it ("Attempt to donate the same buffer twice"), and benchmarks donate the state.
    tree = builtin_tree("kuhn_poker")
    solver = make()
    state = (solver.init(tree) if solver.name == "cfr+"
             else solver.init(tree, jax.random.PRNGKey(0)))
    buffers = {x.unsafe_buffer_pointer() for x in jax.tree.leaves(state)}
    assert len(buffers) == len(jax.tree.leaves(state))
    kept = jax.tree.map(lambda x: x.copy(), state)  # donation consumes `state`
    donating = jax.jit(jaxsolve.run, static_argnums=0, donate_argnums=2)
    out = donating(solver, tree, state, 3)
    # Donating changes where the result lives, not what it is.
    plain = RUN(solver, tree, kept, 3)
    for x, y in zip(jax.tree.leaves(out), jax.tree.leaves(plain)):
        np.testing.assert_array_equal(x, y)
    assert int(out.iteration) == 3


def test_a_stack_of_trees_whose_infosets_differ_in_width_solves_as_each_alone():
    # Liar's dice with 3 sides: infosets of one own depth have 1 to 6 legal actions,
    # so `run` sorts them into its packed layout, here under vmap with every array
    # of the tree batched (jaxsolve.stack).
    tree = jaxsolve.builders.liars_dice((1, 1), 3)
    assert any(len(set(c)) > 1 for player in tree.layout.block_columns for c in player)
    other = tree.replace(utilities=np.asarray(tree.utilities) * 2.0)
    batch = jaxsolve.stack([tree, other])
    solver = jaxsolve.cfr_plus()
    batched = jax.jit(jax.vmap(lambda t: jaxsolve.run(solver, t, solver.init(t), ITERS)))(batch)
    for b, single in enumerate((tree, other)):
        alone = RUN(solver, single, solver.init(single), ITERS)
        np.testing.assert_allclose(batched.average[b], alone.average, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(batched.regrets[b], alone.regrets, rtol=1e-5, atol=1e-5)
    # CFR+ scales with the payoffs: doubled utilities double every regret (exactly, in
    # binary floating point) and leave the policies, hence the average, as they were.
    np.testing.assert_array_equal(batched.regrets[1], 2 * batched.regrets[0])
    np.testing.assert_array_equal(batched.average[1], batched.average[0])
