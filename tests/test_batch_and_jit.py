"""A batch of trees solved in one vmapped call equals solving each alone; jitted
calls on trees of one shape compile once."""

import jax
import numpy as np
import pytest

import jaxsolve
from conftest import RUN, builtin_tree

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
    with pytest.raises(jaxsolve.GameError, match=r"utilities must have shape \[B, 30, 2\]"):
        jaxsolve.sweep(tree, utilities=np.zeros((2, 29, 2)))
    with pytest.raises(jaxsolve.GameError, match="distributions"):
        jaxsolve.sweep(tree, chance_probs=np.ones((2,) + np.shape(tree.chance_probs)))
    with pytest.raises(jaxsolve.GameError, match="structure"):
        jaxsolve.stack([tree, builtin_tree("kuhn_poker", players=3)])


def test_second_call_with_same_shapes_does_not_recompile():
    traces = []

    def run(solver, tree, state, n):
        traces.append(1)  # runs only while tracing
        return jaxsolve.run(solver, tree, state, n)

    jitted = jax.jit(run, static_argnums=(0,))
    tree, utilities, _ = _perturbed_kuhn(np.random.default_rng(3), 2)
    solver = jaxsolve.cfr_plus()
    other = tree.replace(utilities=utilities[0])
    state = jitted(solver, tree, solver.init(tree), 5)
    jitted(solver, other, state, 7)  # other utilities, other count: same program
    jitted(jaxsolve.cfr_plus(), tree, state, 3)  # factories are cached: same solver
    assert len(traces) == 1
