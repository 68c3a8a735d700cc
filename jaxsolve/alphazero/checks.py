"""What the search accepts, checked when it is traced: the root's fields and the
model's outputs must have the shapes `RootFnOutput` / `RecurrentFnOutput` document;
and `config_fields`, with which the search and training configs check their settings
when built.

Every check looks at static shapes only, so it costs nothing at run time. Without
them a root with a [A] prior instead of [B, A] broadcasts against the [B, A] legal
mask and searches without complaint, and a model returning [B, 5] logits for 9
actions fails deep inside the simulation loop with a broadcasting error that names
neither.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import jax
import numpy as np


def _shape(x) -> tuple:
    return tuple(np.shape(x))


def _fail(where: str, message: str):
    raise ValueError(f"{where}: {message}")


def num_simulations(n: Any, where: str) -> int:
    """`n` as a Python int >= 0 (it sets the tree's size, so it must be static)."""
    try:
        n = operator.index(n)
    except TypeError:
        _fail(where, f"num_simulations must be a Python int (it sets the tree's size), "
                     f"got {n!r}")
    if n < 0:
        _fail(where, f"num_simulations must be at least 0, got {n}")
    return n


def root(r, where: str) -> tuple:
    """Checks a `RootFnOutput`; returns (B, A)."""
    logits = _shape(r.prior_logits)
    if len(logits) != 2:
        _fail(where, f"root.prior_logits must be [B, A], got shape {logits}")
    b, a = logits
    if a < 1:
        _fail(where, "root.prior_logits has no action (A = 0)")
    if _shape(r.value) != (b,):
        _fail(where, f"root.value must be [B] = ({b},), got shape {_shape(r.value)}")
    mask = _shape(r.legal_action_mask)
    if mask != (b, a):
        _fail(where, f"root.legal_action_mask must be [B, A] = ({b}, {a}), got shape {mask}")
    if np.dtype(jax.dtypes.result_type(r.legal_action_mask)) != np.bool_:
        _fail(where, "root.legal_action_mask must be boolean, got "
                     f"{jax.dtypes.result_type(r.legal_action_mask)}")
    _embedding_batch(r.embedding, b, where, "root.embedding")
    return b, a


def _embedding_batch(embedding, b: int, where: str, name: str):
    for path, leaf in jax.tree_util.tree_leaves_with_path(embedding):
        shape = _shape(leaf)
        if not shape or shape[0] != b:
            _fail(where, f"every leaf of {name} must have the batch B = {b} as its first "
                         f"axis; {name}{jax.tree_util.keystr(path)} has shape {shape}")


def model(recurrent_fn: Callable, params, key, action, embedding, b: int, a: int,
          where: str) -> None:
    """Traces `recurrent_fn` abstractly (no computation) and checks its outputs: each
    field of the `RecurrentFnOutput` [B] or [B, A], and the new embedding with the
    structure, shapes and dtypes of the one it was given (the tree stores both)."""
    result = jax.eval_shape(recurrent_fn, params, key, action, embedding)
    if not (isinstance(result, tuple) and len(result) == 2):
        _fail(where, "recurrent_fn(params, key, action [B], embedding) must return a pair "
                     f"(RecurrentFnOutput, embedding), got {type(result).__name__}")
    out, new = result
    expect = {"reward": (b,), "discount": (b,), "prior_logits": (b, a), "value": (b,),
              "legal_action_mask": (b, a)}
    for field, shape in expect.items():
        if not hasattr(out, field):
            _fail(where, f"recurrent_fn's first output has no field {field!r} "
                         f"(expected a RecurrentFnOutput)")
        got = _shape(getattr(out, field))
        if got != shape:
            _fail(where, f"recurrent_fn's {field} must be {shape}, got shape {got}")
    given = jax.tree.structure(embedding)
    if jax.tree.structure(new) != given:
        _fail(where, f"recurrent_fn must return an embedding of the structure it was given "
                     f"({given}), got {jax.tree.structure(new)}")
    for path, old_leaf, new_leaf in zip(
            (p for p, _ in jax.tree_util.tree_leaves_with_path(embedding)),
            jax.tree.leaves(embedding), jax.tree.leaves(new)):
        old = (_shape(old_leaf), np.dtype(jax.dtypes.result_type(old_leaf)))
        got = (_shape(new_leaf), np.dtype(new_leaf.dtype))
        if old != got:
            _fail(where, f"recurrent_fn's embedding{jax.tree_util.keystr(path)} must keep "
                         f"shape {old[0]} and dtype {old[1]}, got {got[0]} and {got[1]}")


def config_fields(name: str, rules, config) -> None:
    """Raises ValueError naming the first field of `config` whose rule fails; `rules`
    is (field, ok, rule text) triples. A bad setting stops at construction instead of
    deep inside a jitted function."""
    for field, ok, rule in rules:
        if not ok:
            raise ValueError(f"{name}.{field} {rule}, got {getattr(config, field)!r}")


__all__ = ["config_fields", "model", "num_simulations", "root"]
