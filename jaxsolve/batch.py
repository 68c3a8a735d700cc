"""Batches of trees that share a structure: parameter sweeps in one vmapped call.

Two ways to build a batch:

* `stack(trees)`: trees compiled separately (same game, other parameters) stacked
  along a new leading axis; every array is batched. Solve with `jax.vmap(fn)`.
* `sweep(tree, utilities=..., chance_probs=...)`: one tree plus batched utilities
  and/or chance probabilities; only those arrays carry the batch axis, and the
  returned `in_axes` tells `jax.vmap` to share the rest, so a sweep of 10^4 payoff
  tables costs 10^4 payoff tables, not 10^4 trees.

    batch, axes = jaxsolve.sweep(tree, utilities=u)          # u: [B, Z, P]
    solve = jax.vmap(lambda t: jaxsolve.run(s, t, s.init(t), 1000), in_axes=(axes,))
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import numpy as np

from jaxsolve import validate
from jaxsolve.errors import ArgumentTypeError, GameError
from jaxsolve.tree import _ARRAY_FIELDS, GameTree


def stack(trees: Sequence[GameTree]) -> GameTree:
    """Stacks trees of one structure along a new leading axis."""
    if isinstance(trees, GameTree):
        validate.fail("stack", "expected a sequence of trees, e.g. stack([tree_a, tree_b]), "
                               "got one GameTree", ArgumentTypeError)
    trees = [validate.game_tree(t, "stack") for t in trees]
    if not trees:
        raise GameError("stack() needs at least one tree")
    first = trees[0]
    for k, t in enumerate(trees[1:], 1):
        if t.sizes != first.sizes or t.names != first.names:
            raise GameError(f"tree {k} does not share tree 0's structure (sizes or "
                            "infoset names differ); only utilities and chance "
                            "probabilities may vary within a batch")
        for f in ("children", "terminal_sequences", "legal"):
            if not np.array_equal(np.asarray(getattr(t, f)), np.asarray(getattr(first, f))):
                raise GameError(f"tree {k} differs from tree 0 in {f!r}")
    arrays = {f: np.stack([np.asarray(getattr(t, f)) for t in trees]) for f in _ARRAY_FIELDS}
    return dataclasses.replace(first, **arrays)


def sweep(tree: GameTree, *, utilities=None, chance_probs=None) -> tuple[GameTree, GameTree]:
    """A tree whose utilities ([B, Z, P]) and/or chance_probs ([B, C, Ac]) are batched.

    Returns:
      (batched tree, in_axes) where in_axes is a GameTree-shaped prefix with 0 on the
      batched arrays and None elsewhere, for `jax.vmap(..., in_axes=(in_axes,))`.
    """
    validate.game_tree(tree, "sweep")
    if any(isinstance(x, jax.core.Tracer) for x in (tree.utilities, utilities, chance_probs)):
        validate.fail("sweep", "builds the batch on the host, so it runs outside jit: call "
                      "it first and pass the batched tree into the jitted function",
                      ArgumentTypeError)
    changes, axes = {}, {f: None for f in _ARRAY_FIELDS}
    s = tree.sizes
    for field, value, shape in (("utilities", utilities, (s.num_terminals, s.num_players)),
                                ("chance_probs", chance_probs, (s.num_chance, s.num_chance_outcomes))):
        if value is None:
            continue
        value = np.asarray(value)
        if not (np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.floating)):
            validate.fail("sweep", f"{field} must be real numbers, got dtype {value.dtype}",
                          ArgumentTypeError)
        if value.ndim != 3 or value.shape[1:] != shape:
            raise GameError(f"sweep: {field} must have shape [B, {shape[0]}, {shape[1]}], "
                            f"got {list(value.shape)}")
        if field == "chance_probs":
            legal = np.asarray(tree.chance_probs) > 0
            if np.any(value < 0) or np.any(value[:, ~legal] != 0) or not np.allclose(value.sum(-1), 1.0):
                raise GameError("sweep: chance_probs rows must be distributions over the "
                                "outcomes the game allows at each chance node")
        if not np.all(np.isfinite(value)):
            raise GameError(f"sweep: {field} contains NaN or inf")
        changes[field], axes[field] = value, 0
    if not changes:
        raise GameError("sweep: pass utilities and/or chance_probs")
    return dataclasses.replace(tree, **changes), dataclasses.replace(tree, **axes)
