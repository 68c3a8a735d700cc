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

A game solved in a batch equals the game solved alone up to round-off, not bit for
bit: XLA fuses the batched program differently for each batch size, and where two
actions' regrets are equal up to round-off, CFR's regret matching can break the tie
the other way. The iterates then drift apart (Leduc CFR+ in float64, batches of 1
and 3: regrets 4e-3 apart after 300 iterations, out of hundreds); both are runs of
the algorithm, of similar exploitability. Compare a batch's games with each other,
not bit for bit with separate runs.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import numpy as np

from jaxsolve import validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.errors import ArgumentError, ArgumentTypeError, GameError
from jaxsolve.tree.game_tree import GameTree, with_observed_utility_sum
from jaxsolve.tree.checks import validate_numbers
from jaxsolve.tree.sizes import ARRAY_FIELDS, array_shapes


# Beyond sizes and names, the arrays the games of one batch must share: the shape of
# the game itself (the rest follows from these or may vary: payoffs, chance).
STRUCTURE_ARRAYS = ("children", "terminal_sequences", "legal")


def stack(trees: Sequence[GameTree]) -> GameTree:
    """Stacks trees of one structure along a new leading axis.

    Args:
      trees: GameTrees of one game structure (same sizes, names and shape arrays);
        only utilities and chance probabilities may differ.

    Returns:
      One GameTree whose every array has a leading batch axis `[B, ...]`; solve it
        with `jax.vmap(fn)` (in_axes 0 everywhere).

    Raises:
      ArgumentTypeError: `trees` is one GameTree, not a sequence of them.
      GameError: no tree, or trees that do not share a structure (the message names
        the first difference).
    """
    if isinstance(trees, GameTree):
        validate.fail("stack", "expected a sequence of trees, e.g. stack([tree_a, tree_b]), "
                               "got one GameTree", ArgumentTypeError)
    trees = [tree_arguments.game_tree(t, "stack") for t in trees]
    if not trees:
        raise GameError("stack() needs at least one tree")
    first = trees[0]
    for k, t in enumerate(trees[1:], 1):
        differ = [f.name for f in dataclasses.fields(first.sizes) if f.compare
                  and getattr(t.sizes, f.name) != getattr(first.sizes, f.name)]
        if differ or t.names != first.names:
            what = (f"sizes.{differ[0]} is {getattr(t.sizes, differ[0])!r} against "
                    f"{getattr(first.sizes, differ[0])!r}" if differ else
                    _names_differ(t.names, first.names))
            raise GameError(f"stack: tree {k} does not share tree 0's structure ({what}); "
                            "only utilities and chance probabilities may vary within a "
                            "batch")
        if t.has_histories != first.has_histories:
            raise GameError(f"stack: tree {k} {'has' if t.has_histories else 'lacks'} the "
                            "history arrays tree 0 "
                            f"{'lacks' if t.has_histories else 'has'} (without_histories)")
        for f in STRUCTURE_ARRAYS:
            if not np.array_equal(np.asarray(getattr(t, f)), np.asarray(getattr(first, f))):
                raise GameError(f"stack: tree {k} differs from tree 0 in {f!r}")
    arrays = {f: None if getattr(first, f) is None else
              _stacked([getattr(t, f) for t in trees]) for f in ARRAY_FIELDS}
    return with_observed_utility_sum(dataclasses.replace(first, **arrays))


def _stacked(values: list):
    """One field of several trees (an array, or the layout's arrays) stacked along a
    new leading axis."""
    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *values)


def _names_differ(names, first) -> str:
    """Which of a tree's names differ from tree 0's, with the first difference."""
    if names.game != first.game:
        # Parameters in the name (OpenSpiel's names list them): one structure, renamed.
        return (f"its game is named {names.game!r}, tree 0's {first.game!r}; if only "
                "payoffs or chance differ, give them one name (tree.renamed(name)) or use "
                "jaxsolve.sweep(tree, utilities=..., chance_probs=...)")
    if names.infosets != first.infosets:
        i = next((i for i, (a, b) in enumerate(zip(names.infosets, first.infosets)) if a != b),
                 min(len(names.infosets), len(first.infosets)))
        mine = names.infosets[i] if i < len(names.infosets) else "(none)"
        theirs = first.infosets[i] if i < len(first.infosets) else "(none)"
        return f"infoset {i} is named {mine!r}, tree 0's {theirs!r}"
    i = next(i for i, (a, b) in enumerate(zip(names.actions, first.actions)) if a != b)
    return (f"the actions of infoset {i} ({names.infosets[i]!r}) are named "
            f"{list(names.actions[i])}, tree 0's {list(first.actions[i])}")


def batch_axes(batch: GameTree) -> GameTree:
    """The `in_axes` of a batch for `jax.vmap`, read from its shapes.

    What `sweep` returns beside its batch (0 everywhere after `stack`), e.g. for a batch
    read back by `GameTree.load`.

    Args:
      batch: a batched GameTree (from `stack` or `sweep`).

    Returns:
      A GameTree-shaped prefix: 0 on each array with a leading batch axis, None on the
        shared ones.

    Raises:
      ArgumentError: `batch` is not a GameTree, or has no batch axis.
    """
    tree_arguments.game_tree(batch, "batch_axes", batch_ok=True)
    if tree_arguments.batch_size(batch) is None:
        validate.fail("batch_axes", "the tree has no batch axis (it is one game)")
    one_game = array_shapes(batch.sizes)
    axes = {f: 0 if getattr(batch, f) is not None and
            np.ndim(getattr(batch, f)) > len(one_game[f]) else None for f in one_game}
    rows = batch.layout.rows  # [B, I] after stack, [I] where derived from one game
    return dataclasses.replace(batch, **axes,
                               layout=0 if rows is not None and np.ndim(rows) > 1 else None)


def unstack(batch: GameTree) -> list[GameTree]:
    """The games of a batch, one tree each, e.g. to inspect or save point k of a sweep.
    Host-side.

    Args:
      batch: a batched GameTree (`stack`, `sweep`, or either read back by
        `GameTree.load`).

    Returns:
      A list of B GameTrees, one game each.

    Raises:
      ArgumentError: `batch` is not a GameTree, or has no batch axis.
    """
    axes = batch_axes(batch)
    trees = []
    for k in range(tree_arguments.batch_size(batch)):
        arrays = {f: jax.tree_util.tree_map(lambda x: np.asarray(x)[k], getattr(batch, f))
                  if getattr(axes, f) == 0 else getattr(batch, f) for f in ARRAY_FIELDS}
        trees.append(with_observed_utility_sum(dataclasses.replace(batch, **arrays)))
    return trees


def sweep(tree: GameTree, *, utilities: jax.typing.ArrayLike | None = None,
          chance_probs: jax.typing.ArrayLike | None = None) -> tuple[GameTree, GameTree]:
    """A tree whose utilities and/or chance probabilities are batched; only those arrays
    carry the batch axis.

    Row c of `chance_probs` is the chance node `tree.chance_histories()[c]` reaches;
    columns are its outcome ids, padded to the widest chance node (Ac) with zeros. Each
    row must be a distribution over the outcomes the tree has: those the game listed in
    `chance_outcomes()` when compiled, probability 0 included (an outcome it did not
    list has no subtree, so list it with probability 0 to sweep weight onto it).
    `sizes.utility_sum` is the sum all the batch's games share (None if they differ);
    `unstack(batch)` gives the games back one by one.

    Args:
      tree: one compiled game.
      utilities: `[B, Z, P]` payoffs of every game of the batch, or None.
      chance_probs: `[B, C, Ac]` chance distributions of every game, or None.

    Returns:
      (batched tree, in_axes) where in_axes is a GameTree-shaped prefix with 0 on the
        batched arrays and None elsewhere, for `jax.vmap(..., in_axes=(in_axes,))`.

    Raises:
      ArgumentError: neither array given, a misshapen or non-real array, batch sizes
        that differ, or an entry that is not finite or not a distribution (the message
        names the array and entry). Called under `jit` (the batch is built on the host),
        `ArgumentTypeError`.

    Examples:
      >>> import jax
      >>> import numpy as np
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> scales = np.array([1.0, 2.0, 4.0])[:, None, None]
      >>> batch, axes = jaxsolve.sweep(tree, utilities=scales * tree.utilities)
      >>> batch.utilities.shape
      (3, 30, 2)
      >>> solver = jaxsolve.cfr_plus()
      >>> def value(t):
      ...     state = jaxsolve.run(solver, t, solver.init(t), 200)
      ...     return jaxsolve.policy_value(t, jaxsolve.average_policy(t, state))
      >>> values = jax.vmap(value, in_axes=(axes,))(batch)   # [B, P]
      >>> [round(float(v), 3) for v in values[:, 0]]
      [-0.056, -0.111, -0.222]
    """
    tree_arguments.game_tree(tree, "sweep")
    if any(isinstance(x, jax.core.Tracer) for x in (tree.utilities, utilities, chance_probs)):
        validate.fail("sweep", "builds the batch on the host, so it runs outside jit: call "
                      "it first and pass the batched tree into the jitted function",
                      ArgumentTypeError)
    changes, axes = {}, {f: None for f in ARRAY_FIELDS}
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
            validate.fail("sweep", f"{field} must have shape [B, {shape[0]}, {shape[1]}], "
                                   f"got {list(value.shape)}")
        changes[field], axes[field] = value, 0
    if not changes:
        validate.fail("sweep", "pass utilities and/or chance_probs")
    sizes = {f: len(v) for f, v in changes.items()}
    if len(set(sizes.values())) > 1:
        validate.fail("sweep", "utilities and chance_probs must have the same batch size B, "
                               f"got {sizes['utilities']} and {sizes['chance_probs']}")
    batch = dataclasses.replace(tree, **changes)
    try:  # each row a distribution over the outcomes the tree has, finite payoffs
        validate_numbers(batch, "sweep")
    except GameError as e:
        raise ArgumentError(str(e)) from None
    return with_observed_utility_sum(batch), dataclasses.replace(tree, **axes)
