"""One player's legal sequences packed into a flat array, without padding.

A GameTree's per-infoset arrays are `[I, A]`, every row as wide as the widest
infoset: in liar's dice 85% of the entries are illegal, in Battleship 60%. A pass of
CFR over such arrays moves mostly padding. The solvers' loop by player
(`jaxsolve.solvers`) therefore keeps each player's regrets, average and policy
packed:

* the player's infosets in the order of their own depth (the blocks of
  `TreeSizes.infoset_blocks`), and within one depth by number of legal actions,
  the most first (ties in id order);
* each infoset's legal actions packed to the left, in action order: entry j of an
  infoset is its (j+1)-th legal action;
* one depth's entries column by column: entry 0 of each of its infosets, then
  entry 1 of those that have two, and so on.

Column j of depth d then holds the first `columns[d][j]` infosets of that depth
(`TreeSizes.block_columns`), so the sum over each infoset's actions and its
broadcast back to the actions are static slices and pads: streaming operations over
the legal entries alone. A sum over a row adds the same terms in the same order as
the padded row's (the padding adds zeros), so the packed layout changes no value.

`Packing` is the static part (Python ints, known when tracing); `pack` builds the
index arrays that translate between the tree's numbering and the packed one.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve.tree import GameTree


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
        depths = range(len(self.columns)) if depth is None else [depth]
        sums, base = [], 0
        for d in depths:
            rows, total = self.depth_rows[d], None
            for length in self.columns[d]:
                column = x[base:base + length]
                base += length
                if length < rows:
                    column = jnp.pad(column, (0, rows - length))
                total = column if total is None else total + column
            sums.append(total if total is not None else x[:0])
        return jnp.concatenate(sums) if len(sums) > 1 else (sums[0] if sums else x[:0])

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


class Packed(NamedTuple):
    """Index arrays between a tree's numbering and one player's packed sequences.

    Attributes:
      rows: `[n]` the infoset id of each packed row.
      flat: `[S]` the tree's sequence id `i * A + a` of each packed entry.
      index: `[I*A + 1]` the packed entry of each of the tree's sequence ids, S for
        the empty sequence and for other players' sequences.
    """

    rows: jax.Array
    flat: jax.Array
    index: jax.Array


def layout(tree: GameTree, player: int) -> Packing:
    """The static shape of one player's packed sequences.

    Args:
      tree: the compiled game, with `sizes.block_columns`.
      player: the player, a Python int.

    Returns:
      The `Packing`.
    """
    return Packing(tree.sizes.block_columns[player])


def pack(tree: GameTree, player: int) -> Packed:
    """The index arrays of `player`'s packed sequences, from the tree's arrays.

    Traceable, built once before a loop of iterations: one sort of the player's
    infosets where some depth mixes numbers of legal actions, then array arithmetic
    for all depths at once. Needs `sizes.infoset_blocks` and `sizes.block_columns`,
    which `tree.legal` must match.

    Args:
      tree: the compiled game (one game, no batch axis).
      player: the player, a Python int.

    Returns:
      The `Packed` index arrays.
    """
    sizes = tree.sizes
    shape = layout(tree, player)
    A, n, size = sizes.num_actions, shape.num_rows, shape.size
    blocks = sizes.infoset_blocks[player]
    # Per row of the packing (static): its depth, its place within the depth, and
    # the infoset id it holds before any sort.
    depth = np.repeat(np.arange(len(blocks), dtype=np.int32), shape.depth_rows)
    first_row = np.cumsum([0, *shape.depth_rows], dtype=np.int32)[:-1]
    local = np.arange(n, dtype=np.int32) - first_row[depth]
    ids = jnp.asarray(np.asarray([a for a, _ in blocks], np.int32)[depth] + local
                      if n else np.zeros(0, np.int32))
    legal = jnp.asarray(tree.legal)[ids]
    count = _running_count(legal)  # legal actions up to each action
    if any(len(set(c)) > 1 for c in shape.columns):  # most legal actions first
        order = _most_first(depth, count[:, -1], A)
        ids, legal, count = ids[order], legal[order], count[order]
    # Entry j of depth d's rows starts at column_start[d, j] (static).
    column_start = np.zeros((max(len(blocks), 1), A + 1), np.int32)
    for d, columns in enumerate(shape.columns):
        column_start[d, :len(columns) + 1] = shape.entries(d).start + np.cumsum([0, *columns])
    entry = jnp.maximum(count - 1, 0)  # rank of each legal action in its row
    position = (jnp.asarray(column_start)[jnp.asarray(depth)[:, None], entry]
                + jnp.asarray(local)[:, None])
    grid = jnp.where(legal, position, size)
    sequence = ids[:, None] * A + jnp.arange(A, dtype=jnp.int32)[None, :]
    flat = jnp.zeros(size + 1, jnp.int32).at[grid.reshape(-1)].set(sequence.reshape(-1))[:-1]
    index = jnp.full(sizes.empty_sequence + 1, size, jnp.int32).at[flat].set(
        jnp.arange(size, dtype=jnp.int32))
    return Packed(ids, flat, index)


def _most_first(depth: np.ndarray, width: jax.Array, A: int) -> jax.Array:
    """The order of rows (depth `[n]` static, width `[n]`) by depth, then most legal
    actions first, ties in row order. (One sort of unique int32 keys: XLA:CPU sorts
    those several times faster than a key with an index beside it, as argsort
    does.)"""
    n = len(depth)
    row = jnp.arange(n, dtype=jnp.int32)
    if (int(depth.max(initial=0)) + 1) * (A + 1) * n >= 2**31:  # keys beyond int32
        return jnp.lexsort((row, -width, jnp.asarray(depth)))
    key = (jnp.asarray(depth) * (A + 1) + A - width) * n + row
    return jax.lax.sort(key) % n


def _running_count(legal: jax.Array) -> jax.Array:
    """`[n, A]` int32: how many of each row's first a+1 entries are True. (Column by
    column: XLA:CPU runs a cumulative sum as a reduce-window, several times slower.)"""
    counts = [legal[:, 0].astype(jnp.int32)]
    for a in range(1, legal.shape[1]):
        counts.append(counts[-1] + legal[:, a])
    return jnp.stack(counts, axis=1)
