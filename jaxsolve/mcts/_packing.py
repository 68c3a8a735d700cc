"""How the search stores the embeddings of its nodes: bit-packed into a few int32 arrays.

The tree keeps one embedding per node (node-major, [N, B, ...] while searching), and
each simulation fetches its parent's. The leaves the model reads are bit-packed into at
most four int32 arrays, so that storing a node is one contiguous block per array and
fetching it one gather each; the arrays are kept small enough that XLA:CPU gathers
from them on one thread (`MAX_OPERAND_BYTES`). Which leaves the model reads is found
once, at trace time, from the jaxpr of `recurrent_fn` (`leaves_read`); the others are
stored apart, one array each, so that XLA drops them when nothing uses them.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

try:  # jaxpr types for `leaves_read`; without them every leaf is stored packed
    from jax.extend.core import Var as _Var, jaxprs_in_params as _jaxprs_in_params
except ImportError:  # pragma: no cover (older JAX)
    _Var = _jaxprs_in_params = None

# Bytes above which XLA:CPU gives a fusion two threads: 2 * 256 KiB, with a margin.
MAX_OPERAND_BYTES = 448 * 1024


class Packing(NamedTuple):
    treedef: Any
    leaves: tuple  # (shape[1:], dtype, width) per packed leaf
    chunks: tuple  # (start, stop) columns of each stored int32 array
    packed: tuple  # per leaf of the embedding: bit-packed (True) or stored apart


def plan_packing(embedding, num_nodes: int, read: Optional[Sequence[bool]] = None
             ) -> Optional[Packing]:
    """How to store the embedding's leaves: those the model reads (`read`, default all)
    bit-packed into int32 columns, split into arrays [N, B, w] small enough for
    single-threaded gathers (at most 4), the others apart, one array each, so that the
    compiler drops them from the loop when the caller does not use the tree's
    embeddings either. None if a leaf cannot be bit-cast (PRNG keys, complex)."""
    leaves, treedef = jax.tree.flatten(embedding)
    read = (True,) * len(leaves) if read is None else tuple(bool(r) for r in read)
    spec = []
    for x, r in zip(leaves, read):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended):  # e.g. PRNG keys
            return None
        dt = jnp.dtype(x.dtype)
        if dt.itemsize not in (1, 2, 4, 8) or dt.kind == "c":
            return None
        if r:
            width = int(np.prod(x.shape[1:], dtype=int)) * (2 if dt.itemsize == 8 else 1)
            spec.append((tuple(x.shape[1:]), dt, width))
    total = sum(w for *_, w in spec)
    batch = leaves[0].shape[0] if leaves else 1
    per = max(1, MAX_OPERAND_BYTES // (4 * batch * num_nodes), -(-total // 4))
    chunks = tuple((i, min(i + per, total)) for i in range(0, total, per))
    if not chunks and all(read):
        return None
    return Packing(treedef, tuple(spec), chunks, read)


def pack(p: Packing, embedding):
    """The stored arrays: the int32 chunks [B, w], then the leaves stored apart."""
    cols, apart = [], []
    for x, packed in zip(jax.tree.leaves(embedding), p.packed):
        if not packed:
            apart.append(x)
            continue
        dt = jnp.dtype(x.dtype)
        x = x.reshape(x.shape[0], -1)
        if dt == jnp.bool_:
            x = x.astype(jnp.int32)
        elif dt.itemsize == 4:
            x = jax.lax.bitcast_convert_type(x, jnp.int32)
        elif dt.itemsize == 8:
            x = jax.lax.bitcast_convert_type(x, jnp.int32).reshape(x.shape[0], -1)
        else:
            x = jax.lax.bitcast_convert_type(x, jnp.int8 if dt.itemsize == 1 else jnp.int16)
            x = x.astype(jnp.int32)
        cols.append(x)
    chunks = ()
    if p.chunks:
        packed = jnp.concatenate(cols, -1)
        chunks = tuple(packed[:, a:b] for a, b in p.chunks)
    return chunks + tuple(apart)


def unpack(p: Packing, arrays):
    """Inverse of `pack`, with any leading dimensions."""
    chunks, apart = arrays[:len(p.chunks)], iter(arrays[len(p.chunks):])
    spec = iter(p.leaves)
    packed = jnp.concatenate(chunks, -1) if chunks else None
    lead = arrays[0].shape[:-1] if chunks else None
    out, at = [], 0
    for is_packed in p.packed:
        if not is_packed:
            out.append(next(apart))
            continue
        shape, dt, width = next(spec)
        x = packed[..., at:at + width]
        at += width
        if dt == jnp.bool_:
            x = x != 0
        elif dt.itemsize == 4:
            x = jax.lax.bitcast_convert_type(x, dt)
        elif dt.itemsize == 8:
            x = jax.lax.bitcast_convert_type(x.reshape(lead + (width // 2, 2)), dt)
        else:
            x = x.astype(jnp.int8 if dt.itemsize == 1 else jnp.int16)
            x = jax.lax.bitcast_convert_type(x, dt)
        out.append(x.reshape(lead + shape))
    return jax.tree.unflatten(p.treedef, out)


def used_inputs(jaxpr, used_outputs):
    """Which of `jaxpr`'s inputs its used outputs depend on (a backward pass over the
    equations; into call-like sub-jaxprs, everything else conservatively)."""
    live = {v for v, u in zip(jaxpr.outvars, used_outputs) if u and isinstance(v, _Var)}
    for eqn in reversed(jaxpr.eqns):
        outs = [o in live for o in eqn.outvars]
        if not any(outs) and not eqn.effects:
            continue
        subs = list(_jaxprs_in_params(eqn.params))
        if (len(subs) == 1 and len(subs[0].invars) == len(eqn.invars)
                and len(subs[0].outvars) == len(eqn.outvars) and not eqn.effects):
            ins = used_inputs(subs[0], outs)
        else:
            ins = [True] * len(eqn.invars)
        live.update(v for v, u in zip(eqn.invars, ins) if u and isinstance(v, _Var))
    return [v in live for v in jaxpr.invars]


def leaves_read(recurrent_fn, params, key, action, embedding) -> Tuple[bool, ...]:
    """Per leaf of the embedding: does the model read it, directly or through a leaf it
    stores that is read later? Only decides how the tree stores the leaves, never
    what the search computes. A fixed point over the jaxpr's dependencies."""
    n_emb = len(jax.tree.leaves(embedding))
    if _Var is None:
        return (True,) * n_emb
    shapes = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), jax.dtypes.result_type(x)),
                          (params, key, action, embedding))
    closed, out = jax.make_jaxpr(recurrent_fn, return_shape=True)(*shapes)
    jaxpr = closed.jaxpr
    n_model = len(jax.tree.leaves(out[0]))
    if len(jax.tree.leaves(out[1])) != n_emb or len(jaxpr.outvars) != n_model + n_emb:
        return (True,) * n_emb
    read = [False] * n_emb
    while True:
        used = used_inputs(jaxpr, [True] * n_model + read)[len(jaxpr.invars) - n_emb:]
        now = [a or b for a, b in zip(read, used)]
        if now == read:
            return tuple(read)
        read = now



__all__ = ["MAX_OPERAND_BYTES", "Packing", "leaves_read", "pack", "plan_packing", "unpack"]
