"""Gumbel(0, 1) noise for the root of a Gumbel search, bit-identical to
`jax.random.gumbel`, and key splits bit-identical to `jax.random.split`, written as
straight-line Threefry-2x32.

Why not JAX's own: on CPU, JAX lowers Threefry-2x32 as a rolled loop of five
iterations of four rounds, so a draw of [256, 9] is a while loop of small kernels, and
XLA:CPU splits each round's kernel over two threads and waits for the second one to
wake, once per round. Written out, the same 20 rounds fuse into one elementwise
kernel. The policies draw their noise and split their key once per search, outside
the simulation loop, so this is a fixed cost per search, not per simulation.

The numbers are the ones `jax.random.gumbel(key, shape, dtype)` returns, whenever JAX
draws them the way this module does: a Threefry key, the partitionable counters
(`jax_threefry_partitionable`, JAX's default), "low" mode (the default) and float32.
Otherwise `gumbel` simply calls `jax.random.gumbel`. `split` does the same for
`jax.random.split`. tests/mcts/test_noise.py checks both against JAX, bit for bit, for
raw and typed keys.

Reference: Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC 2011),
for Threefry-2x32 with 20 rounds.
"""

from __future__ import annotations

import math
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import validate

_U32 = jnp.uint32
# Threefry-2x32's rotation constants, alternating by group of four rounds, and the
# parity constant of its key schedule (Salmon et al. 2011; Random123).
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def threefry2x32(key0, key1, x0, x1):
    """Threefry-2x32, 20 rounds: the key words (uint32 scalars) and two uint32 counter
    arrays -> two uint32 arrays of the same shape."""
    schedule = (key0, key1, key0 ^ key1 ^ _U32(_PARITY))
    x0, x1 = x0 + schedule[0], x1 + schedule[1]
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = (x1 << _U32(r)) | (x1 >> _U32(32 - r))
            x1 = x1 ^ x0
        x0 = x0 + schedule[(group + 1) % 3]
        x1 = x1 + schedule[(group + 2) % 3] + _U32(group + 1)
    return x0, x1


def _typed(key) -> bool:
    """A new-style key (`jax.random.key`) rather than a raw uint32[2] array."""
    return jnp.issubdtype(key.dtype, jax.dtypes.prng_key)


def _words(key) -> jax.Array:
    """The key's two uint32 Threefry words, from a raw or a typed key."""
    return jax.random.key_data(key) if _typed(key) else key


def _threefry_partitionable(key) -> bool:
    """Whether JAX derives bits from `key` with Threefry-2x32 and partitionable
    counters, the way this module reproduces."""
    # Options this JAX may name differently count as "not JAX's default": fall back.
    if getattr(jax.config, "jax_threefry_partitionable", None) is not True:
        return False
    if _typed(key):
        return key.shape == () and str(jax.random.key_impl(key)) == "threefry2x32"
    return (getattr(jax.config, "jax_default_prng_impl", None) == "threefry2x32"
            and key.shape == (2,) and key.dtype == jnp.uint32)


def _fast_path(key, size, dtype) -> bool:
    """Whether JAX would draw these numbers the way `gumbel` does."""
    if jnp.dtype(dtype) != jnp.float32 or size >= 2 ** 32:
        return False
    if getattr(jax.config, "jax_high_dynamic_range_gumbel", None) is not False:
        return False
    return _threefry_partitionable(key)


def split(key: jax.Array, num: int = 2) -> jax.Array:
    """`jax.random.split(key, num)`, as straight-line code where JAX splits the way
    this module reproduces (a single Threefry key, partitionable counters): key i is
    Threefry-2x32 of counter (0, i); elsewhere JAX's own split."""
    validate.prng_key(key, "noise.split")
    if not _threefry_partitionable(key) or not 0 < num < 2 ** 32:
        return jax.random.split(key, num)
    words = _words(key)
    bits0, bits1 = threefry2x32(words[0], words[1], jnp.zeros((num,), _U32),
                                jax.lax.iota(_U32, num))
    keys = jnp.stack([bits0, bits1], -1)
    return jax.random.wrap_key_data(keys, impl=jax.random.key_impl(key)) if _typed(key) else keys


def gumbel(key: jax.Array, shape: Sequence[int], dtype=jnp.float32) -> jax.Array:
    """Gumbel(0, 1) noise of `shape`: `jax.random.gumbel(key, shape, dtype)`, drawn as
    straight-line code where JAX's draw is the one reproduced here (see the module
    docstring), else by JAX."""
    validate.prng_key(key, "noise.gumbel")
    shape = tuple(shape)
    size = math.prod(shape)
    if not _fast_path(key, size, dtype):
        return jax.random.gumbel(key, shape, dtype)
    words = _words(key)
    # The partitionable counter of element i is the 64-bit flat index, as (high, low)
    # words; below 2**32 elements the high word is 0.
    index = jax.lax.iota(_U32, size)
    bits0, bits1 = threefry2x32(words[0], words[1], jnp.zeros_like(index), index)
    bits = bits0 ^ bits1
    # A uniform in [1, 2) from the 23 high bits, then [0, 1), then JAX's affine map
    # onto [tiny, 1) (the scale 1 - tiny rounds to 1 in float32, as in JAX).
    unit = jax.lax.bitcast_convert_type((bits >> _U32(9)) | _U32(0x3F800000), jnp.float32)
    tiny = jnp.float32(np.finfo(np.float32).tiny)
    uniform = jnp.maximum(tiny, (unit - jnp.float32(1)) * (jnp.float32(1) - tiny) + tiny)
    return (-jnp.log(-jnp.log(uniform))).reshape(shape)


__all__ = ["gumbel", "split", "threefry2x32"]
