"""The Gumbel search's root noise (`jaxsolve.mcts._noise`) against JAX's own sampler:
the same numbers, bit for bit, from raw and typed keys, and JAX's draw itself wherever
the straight-line path does not apply."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.random import threefry_2x32

from jaxsolve.mcts import _noise as noise


def test_threefry_matches_jax():
    """Our 20-round Threefry-2x32 against JAX's primitive on arbitrary counters."""
    rng = np.random.default_rng(0)
    key = jnp.asarray(rng.integers(0, 2 ** 32, 2, dtype=np.uint32))
    count = jnp.asarray(rng.integers(0, 2 ** 32, 64, dtype=np.uint32))
    expected = threefry_2x32(key, count)
    x0, x1 = noise.threefry2x32(key[0], key[1], count[:32], count[32:])
    np.testing.assert_array_equal(np.concatenate([x0, x1]), expected)


@pytest.mark.parametrize("shape", [(256, 9), (3, 7), (1,), (2, 3, 5)])
def test_gumbel_is_jax_gumbel_bit_for_bit(shape):
    for key in (jax.random.PRNGKey(11), jax.random.key(5)):
        ours = jax.jit(noise.gumbel, static_argnums=1)(key, shape)
        np.testing.assert_array_equal(ours, jax.random.gumbel(key, shape, jnp.float32))
        assert ours.shape == shape and ours.dtype == jnp.float32


def test_other_keys_and_dtypes_fall_back_to_jax():
    rbg = jax.random.key(2, impl="rbg")
    np.testing.assert_array_equal(noise.gumbel(rbg, (4, 3)),
                                  jax.random.gumbel(rbg, (4, 3), jnp.float32))
    key = jax.random.PRNGKey(1)
    for dtype, x64 in ((jnp.bfloat16, False), (jnp.float64, True)):  # float64 needs x64
        with jax.enable_x64(x64):
            drawn = noise.gumbel(key, (4, 3), dtype)
            assert drawn.dtype == dtype
            np.testing.assert_array_equal(drawn, jax.random.gumbel(key, (4, 3), dtype))


@pytest.mark.parametrize("num", [1, 2, 3, 7])
def test_split_is_jax_split_bit_for_bit(num):
    """Straight-line key splits equal `jax.random.split`, for raw and typed keys,
    eagerly and under jit."""
    for seed in (0, 11, 2 ** 31 + 5):
        raw = jax.random.PRNGKey(seed)
        np.testing.assert_array_equal(noise.split(raw, num), jax.random.split(raw, num))
        np.testing.assert_array_equal(jax.jit(noise.split, static_argnums=1)(raw, num),
                                      jax.random.split(raw, num))
        typed = jax.random.key(seed)
        ours = noise.split(typed, num)
        assert jnp.issubdtype(ours.dtype, jax.dtypes.prng_key) and ours.shape == (num,)
        np.testing.assert_array_equal(jax.random.key_data(ours),
                                      jax.random.key_data(jax.random.split(typed, num)))


def test_split_falls_back_to_jax_for_other_keys():
    rbg = jax.random.key(3, impl="rbg")
    np.testing.assert_array_equal(jax.random.key_data(noise.split(rbg, 2)),
                                  jax.random.key_data(jax.random.split(rbg, 2)))


@pytest.mark.parametrize("key, got", [(0, "int"), (np.zeros(2, np.float32), "float32 array"),
                                      (jnp.zeros(2, jnp.int32), "int32 array"),
                                      (jnp.zeros((3, 2), jnp.uint32), r"uint32 array of shape \(3, 2\)")])
def test_what_is_not_a_key_is_named(key, got):
    # Named at the edge, not "'int' object has no attribute 'dtype'" from deep inside.
    for draw in (lambda: noise.split(key), lambda: noise.gumbel(key, (3,))):
        with pytest.raises(ValueError, match=f"key must be a jax.random key.*, got {got}"):
            draw()
