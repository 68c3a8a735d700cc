"""What the search accepts, checked where it enters: the root's fields and the model's
outputs must have the shapes `RootFnOutput` / `RecurrentFnOutput` document (checked
when the search is traced), and every setting of the policies must be of its kind and
in its range (`Rule`; `static` and `unless_traced` apply one).

Every check looks at static information only - types, shapes, concrete Python and
NumPy numbers - so it costs nothing at run time and never forces a traced value.
Without them a root with a [A] prior instead of [B, A] broadcasts against the [B, A]
legal mask and searches without complaint, a model returning [B, 5] logits for 9
actions fails deep inside the simulation loop with a broadcasting error that names
neither, and a negative temperature quietly picks an unvisited action.

The rules (`Rule`, `integer`, `number`, ...) are shared with the AlphaZero trainer's
configs (`jaxsolve.alphazero.checks`), so that a setting the two share obeys one rule.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import jax
import numpy as np

from jaxsolve.validate import as_finite as as_number, as_int  # noqa: F401 (re-exported)


def _shape(x) -> tuple:
    return tuple(np.shape(x))


def _fail(where: str, message: str):
    raise ValueError(f"{where}: {message}")


# ------------------------------------------------------------------------ settings
class Rule(NamedTuple):
    """What one setting must be. `convert` returns the value in its canonical form (a
    Python int, float or tuple) and raises TypeError or ValueError for a value of the
    wrong kind; `ok` then says whether the canonical value is in range; `text`
    completes "<name> ...", e.g. "must be an integer >= 1"."""

    convert: Callable[[Any], Any]
    ok: Callable[[Any], bool]
    text: str


def as_ints(value) -> tuple:
    """A tuple, list, range or 1-D array of integers as a tuple of Python ints."""
    if not isinstance(value, (tuple, list, range, np.ndarray)):
        raise TypeError("not a sequence of integers")
    return tuple(as_int(v) for v in value)


def integer(low: int, high: Optional[int] = None, text: Optional[str] = None) -> Rule:
    """An integer in [low, high) (unbounded above when `high` is None)."""
    default = (f"must be an integer >= {low}" if high is None
               else f"must be an integer in [{low}, {high})")
    return Rule(as_int, lambda v: v >= low and (high is None or v < high), text or default)


def number(low: float, *, strict: bool = False) -> Rule:
    """A finite number >= `low` (> `low` when `strict`)."""
    ok = (lambda v: v > low) if strict else (lambda v: v >= low)
    return Rule(as_number, ok, f"must be a finite number {'>' if strict else '>='} {low:g}")


def interval(low: float, high: float) -> Rule:
    """A number in the closed interval [low, high]."""
    return Rule(as_number, lambda v: low <= v <= high, f"must lie in [{low:g}, {high:g}]")


def optional(rule: Rule) -> Rule:
    """None, or what `rule` accepts."""
    return Rule(lambda v: None if v is None else rule.convert(v),
                lambda v: v is None or rule.ok(v),
                "must be None or " + rule.text.removeprefix("must be "))


def require(label: str, value, rule: Rule):
    """`value` in its canonical form if it obeys `rule`, else ValueError
    "{label} {rule.text}, got {value!r}"."""
    try:
        canonical = rule.convert(value)
        good = bool(rule.ok(canonical))
    except (TypeError, ValueError):
        good = False
    if not good:
        raise ValueError(f"{label} {rule.text}, got {value!r}")
    return canonical


def static(where: str, name: str, value, rule: Rule):
    """A setting that must be a concrete value (a size, a count, a name): returned in
    its canonical form, or ValueError "{where}: {name} {rule}, got {value!r}"."""
    return require(f"{where}: {name}", value, rule)


def unless_traced(where: str, name: str, value, rule: Rule):
    """A numeric setting that may also be an array - traced under jit, or concrete:
    an array is returned unchecked (its value is not known when the function is
    traced, and reading it would force it), anything else is checked as by `static`."""
    if isinstance(value, (jax.Array, np.ndarray)):
        return value
    return static(where, name, value, rule)


# ---------------------------------------------------------------- search arguments
def num_simulations(n: Any, where: str) -> int:
    """`n` as a Python int >= 0 (it sets the tree's size, so it must be static)."""
    return static(where, "num_simulations", n, integer(
        0, text="must be a Python int >= 0 (it sets the tree's size)"))


_ROOT_FIELDS = ("prior_logits", "value", "embedding", "legal_action_mask")


def root(r, where: str) -> tuple:
    """Checks a `RootFnOutput`; returns (B, A)."""
    if not all(hasattr(r, field) for field in _ROOT_FIELDS):
        missing = [f for f in _ROOT_FIELDS if not hasattr(r, f)]
        _fail(where, f"root must be a jaxsolve.mcts.RootFnOutput "
                     f"({', '.join(_ROOT_FIELDS)}), got {type(r).__module__}."
                     f"{type(r).__name__} without {', '.join(missing)}"
                     + (" (mctx's has no legal mask: give ours the same fields and "
                        "legal_action_mask)" if "mctx" in type(r).__module__ else ""))
    logits = _shape(r.prior_logits)
    if len(logits) != 2:
        _fail(where, f"root.prior_logits must be [B, A], got shape {logits}")
    b, a = logits
    if b < 1:
        _fail(where, "root has no position to search (B = 0); give at least one")
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
    mask_dtype = np.dtype(out.legal_action_mask.dtype)
    if mask_dtype != np.bool_:  # as the root's: an int mask would be read as "nonzero"
        _fail(where, f"recurrent_fn's legal_action_mask must be boolean, got {mask_dtype}")
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


__all__ = ["Rule", "as_int", "as_ints", "as_number", "integer", "interval", "model",
           "num_simulations", "number", "optional", "require", "root", "static",
           "unless_traced"]
