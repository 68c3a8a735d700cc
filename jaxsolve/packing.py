"""One player's legal sequences packed into a flat array, without padding.

A GameTree's per-infoset arrays are `[I, A]`, every row as wide as the widest
infoset: in liar's dice 85% of the entries are illegal, in Battleship 60%. A pass of
CFR over such arrays moves mostly padding. The solvers' loop by player
(`jaxsolve.solvers`) therefore keeps each player's regrets, average and policy
packed:

* the player's infosets in the order of their own depth
  (`jaxsolve.tree.layout.depth_groups`: any numbering of the infosets), and within
  one depth by number of legal actions, the most first (ties in id order);
* each infoset's legal actions packed to the left, in action order: entry j of an
  infoset is its (j+1)-th legal action;
* one depth's entries column by column: entry 0 of each of its infosets, then
  entry 1 of those that have two, and so on.

Column j of depth d then holds the first `columns[d][j]` infosets of that depth
(`KernelLayout.block_columns`), so the sum over each infoset's actions and its
broadcast back to the actions are static slices and pads: streaming operations over
the legal entries alone. A sum over a row adds the same terms in the same order as
the padded row's (the padding adds zeros), so the packed layout changes no value.

`Packing` is the static part (Python ints, known when tracing). The index arrays that
translate between the tree's numbering and the packed one are the tree's own
(`GameTree.layout`, the `jaxsolve.tree.layout.KernelLayout` derived when the tree is
built or loaded); `packed` slices one player's out of them.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxsolve.tree import GameTree
from jaxsolve.validate import fail


class Packing(NamedTuple):
    """The static shape of one player's packed sequences.

    Attributes:
      columns: for each own depth, the lengths of its columns: how many of the
        depth's infosets have more than 0, 1, ... legal actions (non-increasing).
    """

    columns: tuple[tuple[int, ...], ...]

    @property
    def depth_rows(self) -> tuple[int, ...]:
        """The number of infosets at each own depth."""
        return tuple(c[0] if c else 0 for c in self.columns)

    @property
    def num_rows(self) -> int:
        """n: the player's infosets."""
        return sum(self.depth_rows)

    @property
    def size(self) -> int:
        """S: the player's legal sequences (the empty one excluded)."""
        return sum(sum(c) for c in self.columns)

    def rows(self, depth: int) -> slice:
        """Where one own depth's infosets are.

        Args:
          depth: the own depth.

        Returns:
          The slice of `[n]` arrays holding that depth's infosets.
        """
        start = sum(self.depth_rows[:depth])
        return slice(start, start + self.depth_rows[depth])

    def entries(self, depth: int) -> slice:
        """Where the sequences of one own depth's infosets are.

        Args:
          depth: the own depth.

        Returns:
          The slice of `[S]` arrays holding that depth's sequences.
        """
        start = sum(sum(c) for c in self.columns[:depth])
        return slice(start, start + sum(self.columns[depth]))

    def row_sum(self, x: jax.Array, depth: int | None = None) -> jax.Array:
        """The sum of each infoset's entries.

        Args:
          x: `[S]` packed entries (`[S_d]` with `depth`: that depth's alone).
          depth: one own depth, or None for all.

        Returns:
          `[n]` (`[n_d]`) array, infosets in packed order.
        """
        return self._row_reduce(x, depth, jnp.add, 0.0)

    def row_max(self, x: jax.Array, depth: int | None = None) -> jax.Array:
        """The largest of each infoset's entries.

        Args:
          x: `[S]` packed entries (`[S_d]` with `depth`: that depth's alone).
          depth: one own depth, or None for all.

        Returns:
          `[n]` (`[n_d]`) array, infosets in packed order.
        """
        return self._row_reduce(x, depth, jnp.maximum, -jnp.inf)

    def _row_reduce(self, x, depth, combine, fill):
        depths = range(len(self.columns)) if depth is None else [depth]
        out, base = [], 0
        for d in depths:
            rows, total = self.depth_rows[d], None
            for length in self.columns[d]:
                column = x[base:base + length]
                base += length
                if length < rows:
                    column = jnp.pad(column, (0, rows - length), constant_values=fill)
                total = column if total is None else combine(total, column)
            out.append(total if total is not None else x[:0])
        return jnp.concatenate(out) if len(out) > 1 else (out[0] if out else x[:0])

    def spread(self, v: jax.Array, depth: int | None = None) -> jax.Array:
        """Each infoset's value repeated at each of its entries.

        Args:
          v: `[n]` one value per infoset (`[n_d]` with `depth`).
          depth: one own depth, or None for all.

        Returns:
          `[S]` (`[S_d]`) packed array.
        """
        depths = range(len(self.columns)) if depth is None else [depth]
        pieces, base = [], 0
        for d in depths:
            pieces.extend(v[base:base + length] for length in self.columns[d])
            base += self.depth_rows[d]
        return jnp.concatenate(pieces) if pieces else v[:0]


class PackedRows(NamedTuple):
    """`jaxsolve.updates.Rows` of one player's packed sequences: what an update rule
    sees on the kernel's layout.

    Attributes:
      shape: the player's `Packing` (static).
      uniform_entries: `[S]` 1 / the number of legal actions of each entry's infoset.
    """

    shape: Packing
    uniform_entries: jax.Array

    @staticmethod
    def make(shape: Packing, dtype: jax.typing.DTypeLike) -> "PackedRows":
        """The rows of `shape`, with their uniform policy in `dtype`.

        Args:
          shape: the player's `Packing`.
          dtype: the float dtype of the entries.

        Returns:
          The `PackedRows`.
        """
        return PackedRows(shape, shape.spread(1 / shape.row_sum(jnp.ones(shape.size, dtype))))

    def total(self, x: jax.Array) -> jax.Array:
        """Each infoset's sum of `x`, at each of its entries.

        Args:
          x: `[S]` packed entries.

        Returns:
          `[S]` sums.
        """
        return self.shape.spread(self.shape.row_sum(x))

    def max(self, x: jax.Array) -> jax.Array:
        """Each infoset's largest entry of `x`, at each of its entries.

        Args:
          x: `[S]` packed entries.

        Returns:
          `[S]` maxima.
        """
        return self.shape.spread(self.shape.row_max(x))

    def uniform(self, dtype: jax.typing.DTypeLike) -> jax.Array:
        """Uniform over each infoset's legal actions.

        Args:
          dtype: the float dtype of the result.

        Returns:
          `[S]` policy.
        """
        return self.uniform_entries.astype(dtype)

    def restrict(self, x: jax.Array) -> jax.Array:
        """`x` itself: every packed entry is legal.

        Args:
          x: `[S]` packed entries.

        Returns:
          `x`.
        """
        return x


class Packed(NamedTuple):
    """One player's part of the tree's packed index arrays (`GameTree.layout`),
    in the player's own numbering: entries 0..S-1, S the empty
    sequence.

    Attributes:
      rows: `[n]` the infoset id of each packed row.
      sequences: `[S]` the tree's sequence id `i * A + a` of each packed entry.
      parent: `[n]` each row's parent sequence.
      ancestors: `[n, D]` each row's earlier own sequences, nearest first.
      last: `[Z]` each leaf's last sequence of the player.
    """

    rows: jax.Array
    sequences: jax.Array
    parent: jax.Array
    ancestors: jax.Array
    last: jax.Array


def layout(tree: GameTree, player: int) -> Packing:
    """The static shape of one player's packed sequences.

    Args:
      tree: the compiled game, with `layout.block_columns`.
      player: the player, a Python int.

    Returns:
      The `Packing`.

    Raises:
      ArgumentError: the tree holds no packed arrays (`available` is False: a player
        forgets, or a traced `replace` emptied them); checked while tracing, so it
        costs a compiled kernel nothing.
    """
    if not available(tree):
        forgetful = [p for p, recalls in enumerate(tree.sizes.perfect_recall) if not recalls]
        why = (f"player(s) {forgetful} forget (imperfect recall)" if forgetful
               else "a traced GameTree.replace emptied them")
        fail("packing", f"this tree has no packed sequences: {why}; its policies and "
             "regrets are [I, A] rows (jaxsolve.sequences works on them)")
    return Packing(tree.layout.block_columns[player])


def available(tree: GameTree) -> bool:
    """Whether `tree` holds its packed index arrays.

    They are derived for every tree where each player has perfect recall, unless a
    traced `GameTree.replace` changed what they are read off.

    Args:
      tree: the compiled game.

    Returns:
      A Python bool.
    """
    return tree.layout.packed


def packed(tree: GameTree, player: int) -> Packed:
    """One player's slices of the tree's packed index arrays.

    Args:
      tree: the compiled game (one game, no batch axis), `available`.
      player: the player, a Python int.

    Returns:
      The `Packed` arrays.
    """
    shapes = [layout(tree, p) for p in range(player + 1)]
    row = sum(shape.num_rows for shape in shapes[:-1])
    entry = sum(shape.size for shape in shapes[:-1])
    rows = slice(row, row + shapes[-1].num_rows)
    arrays = tree.layout
    return Packed(arrays.rows[rows], arrays.sequences[entry:entry + shapes[-1].size],
                  arrays.parent[rows], arrays.ancestors[rows], arrays.last[player])


def realization_plan(shape: Packing, policy: jax.Array,
                     ancestors: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One player's own reach and realization plan, packed.

    Args:
      shape: the player's `Packing`.
      policy: `[S]` the player's packed policy.
      ancestors: `[n, D]` `Packed.ancestors`.

    Returns:
      (own reach `[n]` of each packed row, plan `[S + 1]`: each entry's own reach
        times its probability, then 1 for the empty sequence).
    """
    one = jnp.ones((1,), policy.dtype)
    own = jnp.prod(jnp.concatenate([policy, one])[ancestors], axis=-1)
    return own, jnp.concatenate([shape.spread(own) * policy, one])


def backup(shape: Packing, sums: jax.Array, parent: jax.Array,
           reduce: Callable[[jax.Array, int], jax.Array],
           root: bool = False) -> tuple[jax.Array, jax.Array | None]:
    """Values of one player's packed sequences from the leaf sums at them.

    The value of a sequence is its leaf sum plus, for each own infoset whose parent
    it is, `reduce` of that infoset's values: deepest depth first, each depth's
    reduced values added to their parent sequences in the depth above
    (`sequences.value_blocks` on the padded layout).

    Args:
      shape: the player's `Packing`.
      sums: `[S]` the leaf sums at each packed sequence (the empty one excluded).
      parent: `[n]` `Packed.parent`.
      reduce: `(values [S_d], depth) -> [n_d]`, e.g. the policy-weighted sum of
        each infoset's values (counterfactual values) or their maximum (a best
        response).
      root: whether to reduce the depth-0 infosets too.

    Returns:
      (`[S]` the values, and with `root` `[]` the sum of the depth-0 infosets'
        reduced values, else None).
    """
    levels, child, top = [], None, None
    for depth in reversed(range(len(shape.columns))):
        entries = shape.entries(depth)
        level = sums[entries] if child is None else sums[entries] + child
        levels.append(level)
        if depth:
            above = shape.entries(depth - 1)
            child = jax.ops.segment_sum(reduce(level, depth),
                                        parent[shape.rows(depth)] - above.start,
                                        num_segments=above.stop - above.start)
        elif root:
            top = reduce(level, depth).sum()
    if root and top is None:  # a player who never acts
        top = jnp.zeros((), sums.dtype)
    return (jnp.concatenate(levels[::-1]) if levels else sums), top


class Slots(NamedTuple):
    """One player's leaves in rows of slots (`KernelLayout.slot_leaves`).

    Attributes:
      leaves: `[K, R]` the leaf in slot k of row r, Z where the slot is empty.
      sequences: `[R]` the packed sequence each row adds into (ascending), or None
        where every sequence has one row, in order.
    """

    leaves: jax.Array
    sequences: jax.Array | None


def slots(tree: GameTree, player: int) -> Slots | None:
    """One player's leaf slots, or None where its leaf sums scatter.

    Args:
      tree: the compiled game (one game, no batch axis).
      player: the player, a Python int.

    Returns:
      The `Slots`, or None (`KernelLayout.leaf_slots`).
    """
    kernel_layout = tree.layout
    if kernel_layout.leaf_slots is None or kernel_layout.slot_leaves is None:
        return None
    width, rows = kernel_layout.leaf_slots[player]
    if not width:
        return None
    first = sum(k * r for k, r in kernel_layout.leaf_slots[:player])
    first_row = sum(r for k, r in kernel_layout.leaf_slots[:player] if k)
    leaves = kernel_layout.slot_leaves[first:first + width * rows].reshape(width, rows)
    direct = rows == layout(tree, player).size + 1
    return Slots(leaves, None if direct
                 else kernel_layout.slot_sequences[first_row:first_row + rows])


def slot_sums(shape: Packing, slots: Slots, weights: jax.Array) -> jax.Array:
    """Each of a player's sequences' sum of the weights of its leaves.

    Args:
      shape: the player's `Packing`.
      slots: the player's `Slots`.
      weights: `[K, R]` the weight of the leaf in each slot (0 in empty ones).

    Returns:
      `[S + 1]` the sums, the empty sequence's last.
    """
    total = weights[0]
    for k in range(1, weights.shape[0]):  # slot by slot: dense adds over the rows
        total = total + weights[k]
    if slots.sequences is None:
        return total
    return jax.ops.segment_sum(total, slots.sequences, num_segments=shape.size + 1,
                               indices_are_sorted=True)
