"""What the search accepts, checked where it enters: the root's fields and the model's
outputs must have the shapes `RootFnOutput` / `RecurrentFnOutput` document (checked
when the search is traced), and `num_simulations` must be a Python int. The policies'
settings are checked by the rules of `jaxsolve.validate` (`Rule`, `static`,
`unless_traced`), which the AlphaZero trainer's configs share.

Every check looks at static information only - types, shapes, concrete Python and
NumPy numbers - so it costs nothing at run time and never forces a traced value.
Without them a root with a [A] prior instead of [B, A] broadcasts against the [B, A]
legal mask and searches without complaint, a model returning [B, 5] logits for 9
actions fails deep inside the simulation loop with a broadcasting error that names
neither. Each raises an `ArgumentError` whose message starts with the function's name.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import numpy as np

from jaxsolve.validate import fail, integer_rule, static


def _shape(x) -> tuple:
    return tuple(np.shape(x))


# ---------------------------------------------------------------- search arguments
def num_simulations(n: Any, where: str) -> int:
    """`n` as a Python int >= 0 (it sets the tree's size, so it must be static)."""
    return static(where, "num_simulations", n, integer_rule(
        0, note="a Python int: it sets the tree's size"))


_ROOT_FIELDS = ("prior_logits", "value", "embedding", "legal_action_mask")


def root(r, where: str) -> tuple:
    """Checks a `RootFnOutput`; returns (B, A)."""
    if not all(hasattr(r, field) for field in _ROOT_FIELDS):
        missing = [f for f in _ROOT_FIELDS if not hasattr(r, f)]
        fail(where, f"root must be a jaxsolve.mcts.RootFnOutput "
                     f"({', '.join(_ROOT_FIELDS)}), got {type(r).__module__}."
                     f"{type(r).__name__} without {', '.join(missing)}"
                     + (" (mctx's has no legal mask: give ours the same fields and "
                        "legal_action_mask)" if "mctx" in type(r).__module__ else ""))
    logits = _shape(r.prior_logits)
    if len(logits) != 2:
        fail(where, f"root.prior_logits must be [B, A], got shape {logits}")
    b, a = logits
    if b < 1:
        fail(where, "root has no position to search (B = 0); give at least one")
    if a < 1:
        fail(where, "root.prior_logits has no action (A = 0)")
    if _shape(r.value) != (b,):
        fail(where, f"root.value must be [B] = ({b},), got shape {_shape(r.value)}")
    mask = _shape(r.legal_action_mask)
    if mask != (b, a):
        fail(where, f"root.legal_action_mask must be [B, A] = ({b}, {a}), got shape {mask}")
    if np.dtype(jax.dtypes.result_type(r.legal_action_mask)) != np.bool_:
        fail(where, "root.legal_action_mask must be boolean, got "
                     f"{jax.dtypes.result_type(r.legal_action_mask)}")
    _embedding_batch(r.embedding, b, where, "root.embedding")
    return b, a


def _embedding_batch(embedding, b: int, where: str, name: str):
    for path, leaf in jax.tree_util.tree_leaves_with_path(embedding):
        shape = _shape(leaf)
        if not shape or shape[0] != b:
            fail(where, f"every leaf of {name} must have the batch B = {b} as its first "
                         f"axis; {name}{jax.tree_util.keystr(path)} has shape {shape}")


def model(recurrent_fn: Callable, params, key, action, embedding, b: int, a: int,
          where: str) -> None:
    """Traces `recurrent_fn` abstractly (no computation) and checks its outputs: each
    field of the `RecurrentFnOutput` [B] or [B, A], and the new embedding with the
    structure, shapes and dtypes of the one it was given (the tree stores both)."""
    result = jax.eval_shape(recurrent_fn, params, key, action, embedding)
    if not (isinstance(result, tuple) and len(result) == 2):
        fail(where, "recurrent_fn(params, key, action [B], embedding) must return a pair "
                     f"(RecurrentFnOutput, embedding), got {type(result).__name__}")
    out, new = result
    expect = {"reward": (b,), "discount": (b,), "prior_logits": (b, a), "value": (b,),
              "legal_action_mask": (b, a)}
    for field, shape in expect.items():
        if not hasattr(out, field):
            fail(where, f"recurrent_fn's first output has no field {field!r} "
                         f"(expected a RecurrentFnOutput)")
        got = _shape(getattr(out, field))
        if got != shape:
            fail(where, f"recurrent_fn's {field} must be {shape}, got shape {got}")
    mask_dtype = np.dtype(out.legal_action_mask.dtype)
    if mask_dtype != np.bool_:  # as the root's: an int mask would be read as "nonzero"
        fail(where, f"recurrent_fn's legal_action_mask must be boolean, got {mask_dtype}")
    given = jax.tree.structure(embedding)
    if jax.tree.structure(new) != given:
        fail(where, f"recurrent_fn must return an embedding of the structure it was given "
                     f"({given}), got {jax.tree.structure(new)}")
    for path, old_leaf, new_leaf in zip(
            (p for p, _ in jax.tree_util.tree_leaves_with_path(embedding)),
            jax.tree.leaves(embedding), jax.tree.leaves(new)):
        old = (_shape(old_leaf), np.dtype(jax.dtypes.result_type(old_leaf)))
        got = (_shape(new_leaf), np.dtype(new_leaf.dtype))
        if old != got:
            fail(where, f"recurrent_fn's embedding{jax.tree_util.keystr(path)} must keep "
                         f"shape {old[0]} and dtype {old[1]}, got {got[0]} and {got[1]}")


__all__ = ["model", "num_simulations", "root"]
