"""Checks of the arguments that are trees, players and policies of a tree, where they
enter a public function (`jaxsolve.validate` has the checks of plain settings and
the messages' form; this module adds what needs the tree).

Each reads static information only (types, shapes, dtypes, concrete numbers), so it
costs nothing under jit and never asks a traced value for its value. One exception:
a concrete policy (called outside jit) is also checked to be a distribution over the
legal actions, by one reduction where it lives (`policy`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve.errors import ArgumentTypeError
from jaxsolve.tree import GameTree
from jaxsolve.tree.checks import require_histories
from jaxsolve.validate import fail, integer_rule, kind_of, require, traced


# ---------------------------------------------------------------------- trees and players
# The arrays jaxsolve.stack (all of them) and jaxsolve.sweep (utilities, chance_probs)
# give a leading batch axis; unbatched, each is 2-D.
_BATCHABLE = ("legal", "utilities", "chance_probs")


def batch_size(tree: GameTree) -> int | None:
    """The size of the tree's leading batch axis (from `sweep` or `stack`).

    Args:
      tree: the tree.

    Returns:
      The batch size, or None for a tree without a batch axis.
    """
    for field in _BATCHABLE:
        shape = np.shape(getattr(tree, field))
        if len(shape) > 2:
            return shape[0]
    return None


def game_tree(tree: Any, where: str, *, batch_ok: bool = False,
              histories: bool = False) -> GameTree:
    """`tree`, checked to be a GameTree fit for the function.

    Args:
      tree: the argument.
      where: the public function's name, which starts the error's message.
      batch_ok: whether a leading batch axis is allowed.
      histories: whether the history arrays are needed (not a `without_histories`
        view).

    Returns:
      `tree`.

    Raises:
      ArgumentTypeError: `tree` is not a GameTree.
      ArgumentError: the tree has a batch axis and `batch_ok` is false, or lacks its
        history arrays and `histories` is true.
    """
    if not isinstance(tree, GameTree):
        fail(where, "expected a GameTree (compile the game with jaxsolve.compile_game), "
                    f"got {kind_of(tree)}", ArgumentTypeError)
    if histories:
        require_histories(tree, where)
    size = None if batch_ok else batch_size(tree)
    if size is not None:
        fail(where, f"the tree has a batch axis of {size} (a batch from jaxsolve.sweep or "
                    "jaxsolve.stack): call it through jax.vmap with the tree's in_axes, those "
                    "sweep returned or 0 after stack, e.g. "
                    "jax.vmap(lambda t: ..., in_axes=(axes,))(batch)")
    return tree


def player(tree: GameTree, value: Any, where: str, *, static: bool = False) -> Any:
    """A player of `tree`: a concrete one must be an int in [0, P).

    A traced player passes as it is, unless `static` (the function picks the player's
    arrays in Python): then it is refused with the jit idiom that keeps it static.

    Args:
      tree: the game's tree.
      value: the player.
      where: the public function's name, which starts the error's message.
      static: whether the player must be known when tracing.

    Returns:
      A traced value unchanged, else the Python int.

    Raises:
      ArgumentTypeError: the player is no integer, or traced where `static`.
      ArgumentError: the player is out of range.
    """
    if traced(value):
        if static:
            fail(where, f"player must be known when tracing (a Python int), got a traced "
                        f"value: under jit mark it static, e.g. jax.jit({where}, "
                        "static_argnums=2), or loop over range(tree.sizes.num_players)",
                 ArgumentTypeError)
        return value
    count = tree.sizes.num_players
    return require(f"{where}: player", value,
                   integer_rule(0, count - 1, note=f"{count} players"))


# ---------------------------------------------------------------------- policies
def _as_array(value: Any, name: str, where: str, host: bool = False):
    try:
        return np.asarray(value) if host else jnp.asarray(value)
    except (TypeError, ValueError) as e:
        fail(where, f"{name} must be an array, got {kind_of(value)} ({e})", ArgumentTypeError)


def _shape_hint(shape: tuple, expected: tuple) -> str:
    if shape == expected[::-1]:
        return " (transposed? rows are infosets, columns actions)"
    if shape[1:] == expected:
        return (f": it has a batch axis of {shape[0]}; call through jax.vmap, e.g. "
                "in_axes=(None, 0)")
    return " (a policy from another game?)"


def policy(tree: GameTree, value: Any, where: str, *, what: str = "the tree",
           batch_ok: bool = False, host: bool = False) -> jax.Array | np.ndarray:
    """`value` as a policy of `tree`: floats of shape [I, A] ([..., I, A] if `batch_ok`).

    A concrete policy is also checked to be a distribution over the legal actions at
    every infoset (finite, >= 0, 0 on illegal actions, rows summing to 1).

    Args:
      tree: the game's tree.
      value: the policy, any array-like.
      where: the public function's name, which starts the error's message.
      what: how messages name the tree.
      batch_ok: whether leading batch axes are allowed.
      host: whether to return a NumPy array (keeping float64 without x64).

    Returns:
      The policy as a JAX array, or a NumPy one if `host`.

    Raises:
      ArgumentTypeError: `value` is no array, or not of floats.
      ArgumentError: the shape is wrong, or a concrete policy is no distribution
        over the legal actions.
    """
    array = _as_array(value, "policy", where, host)
    if not jnp.issubdtype(array.dtype, jnp.floating):
        fail(where, f"policy must hold probabilities as floats, got dtype {array.dtype} "
                    "(convert it, e.g. jnp.asarray(policy, float))", ArgumentTypeError)
    expected = (tree.sizes.num_infosets, tree.sizes.num_actions)
    shape = tuple(array.shape)
    if shape[-2:] != expected or (len(shape) != 2 and not batch_ok):
        fail(where, f"policy has shape {shape} but {what} has {expected[0]} infosets x "
                    f"{expected[1]} actions; expected [{expected[0]}, {expected[1]}]"
                    f"{_shape_hint(shape, expected)}")
    _distributions(tree, array, where, what)
    return array


# How far a row's sum may be from 1: float32 averages are normalised to ~1e-6, and the
# mistakes this catches (unnormalised regrets, all-zero rows, a dropped action) are
# off by far more.
ROW_SUM_TOLERANCE = 1e-4


def _distributions(tree: GameTree, array, where: str, what: str) -> None:
    """A concrete policy must be a distribution over the legal actions at every
    infoset: finite, >= 0, 0 on illegal actions, rows summing to 1. The evaluations
    would otherwise give a plausible wrong number (probability on an illegal action is
    dropped; an all-zero policy has exploitability 0). One fused reduction where the
    array lives; traced policies (inside jit, vmap) pass unchecked."""
    legal = tree.legal
    if traced(array) or traced(legal) or np.ndim(legal) != 2:
        return
    xp = np if isinstance(array, np.ndarray) else jnp
    legal = np.asarray(legal) if xp is np else jnp.asarray(legal)
    finite_nonneg = xp.all(xp.isfinite(array) & (array >= 0))
    illegal_zero = xp.all(xp.where(legal, 0, array) == 0)
    sums_one = xp.all(xp.abs(xp.sum(array, -1) - 1) <= ROW_SUM_TOLERANCE)
    if bool(finite_nonneg & illegal_zero & sums_one):
        return
    fail(where, f"policy is not a distribution over the legal actions of {what}: "
                f"{_first_bad_row(tree, np.asarray(array, np.float64))}")


def _first_bad_row(tree: GameTree, policy: np.ndarray) -> str:
    """The first offending row of a policy [..., I, A], described with its infoset."""
    legal = np.asarray(tree.legal)
    rows = policy.reshape(-1, *legal.shape)
    for b, row_block in enumerate(rows):
        for i, row in enumerate(row_block):
            at = (f"infoset {i} ({tree.names.infosets[i]!r})"
                  + (f" of batch element {b}" if rows.shape[0] > 1 else ""))
            values = np.array2string(row, precision=4, separator=", ")
            if not np.all(np.isfinite(row)):
                return f"{at} holds a non-finite value: {values}"
            if np.any(row < 0):
                return f"{at} holds a negative value: {values}"
            if np.any(row[~legal[i]] != 0):
                bad = int(np.flatnonzero((row != 0) & ~legal[i])[0])
                return (f"{at} puts {row[bad]:.4g} on action {bad}, which is illegal there "
                        f"(tree.legal is the mask): {values}")
            if abs(row.sum() - 1) > ROW_SUM_TOLERANCE:
                return (f"{at} sums to {row.sum():.6g}, not 1: {values} (normalise rows, "
                        "e.g. jaxsolve.average_policy for a solver state)")
    return "a row fails the check"  # unreachable: the fused check found one
