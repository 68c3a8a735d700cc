"""Training: checkpoints resume to identical results; evaluation runs and is graded."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from games import pursuit_evasion as pe
from jaxsolve.alphazero import evaluate, exact, selfplay, train

ENV = pe.goal_variant(3)  # 3x3, 4 turns
CFG = train.TrainConfig(env=ENV, search=selfplay.SearchConfig(num_simulations=4),
                        hidden=(8,), games_per_iter=4, train_steps=2, batch_size=16,
                        buffer_size=64)


@pytest.fixture(scope="module")
def compiled():
    graphdef, state = train.init(CFG)
    return graphdef, jax.jit(train.make_iteration(CFG, graphdef))


def test_checkpoint_resume_is_identical(compiled, tmp_path):
    graphdef, step = compiled
    _, s = train.init(CFG)
    for _ in range(3):
        s, metrics = step(s)
    straight = s
    _, s = train.init(CFG)
    s, _ = step(s)
    path = str(tmp_path / "ckpt.npz")
    train.save(path, s)
    s = train.load(path, train.init(CFG)[1])
    for _ in range(2):
        s, _ = step(s)
    for a, b in zip(jax.tree.leaves(straight), jax.tree.leaves(s)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(s.step) == 3 and int(s.buffer.size) == 64  # 3 x 4 games x 8 plies, capped
    assert np.isfinite(float(metrics["loss"]))


def test_buffer_values_are_from_the_movers_side():
    traj = selfplay.Trajectory(jnp.zeros((2, 3, 5)), jnp.ones((2, 3, 9)) / 9,
                               jnp.array([[0, 0, 0], [1, 1, 1]]), jnp.array([1.0, -1.0, 1.0]))
    buf = selfplay.buffer_add(selfplay.buffer_init(4, 5), traj)
    assert int(buf.size) == 4 and int(buf.pos) == 2
    # Values [1, -1, 1 | -1, 1, -1] (evader ply, then defender ply); the last four
    # survive, the final two wrapped onto slots 0 and 1.
    assert np.asarray(buf.value).tolist() == [1.0, -1.0, 1.0, -1.0]


def test_evaluation_against_random_and_exact(compiled):
    graphdef, _ = compiled
    _, s = train.init(CFG)
    sol = exact.solve(ENV)
    res = evaluate.evaluate(ENV, CFG.search, graphdef, s.params, sol, jax.random.PRNGKey(0),
                            batch=8)
    for k in ("win_vs_random_as_evader", "win_vs_random_as_defender", "mistake_rate"):
        assert 0.0 <= res[k] <= 1.0
    best = evaluate.best_rates_vs_random(ENV)
    assert 0.9 < best["best_vs_random_as_evader"] <= 1.0


def test_self_play_and_training_compile_once(compiled):
    """One jitted self-play-and-train iteration serves the whole run: state shapes and
    dtypes are stable across iterations, so JAX never traces it a second time."""
    graphdef, step = compiled
    _, s = train.init(CFG)
    traced = []
    counting = jax.jit(lambda state: (traced.append(1), train.make_iteration(CFG, graphdef)(state))[1])
    for _ in range(3):
        s, _ = counting(s)
    assert len(traced) == 1
    assert counting._cache_size() == 1
