"""How the tree stores embeddings: bit-packing round trips, and which leaves the model
reads."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsolve.alphazero import network, selfplay
from jaxsolve.mcts import _packing as packing
from jaxsolve.games import pursuit_evasion as pe
from pursuit_models import ENV


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
