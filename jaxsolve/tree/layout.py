"""What the kernels derive from a tree: one value, `KernelLayout`, read off the saved
arrays when a tree is built or loaded and never saved.

The full-width kernels (`jaxsolve.kernel`, `jaxsolve.packing`, the evaluation) work
on each player's legal sequences packed without padding: infosets grouped by own
depth (`depth_groups`), within a depth the most legal actions first, a depth's
entries column by column (`block_columns`, `packed_arrays`); and they add each
player's leaf weights into its sequences by a scatter or in rows of slots
(`leaf_slots`), whichever costs less on the backend (`SlotCosts`). The padded
formulation, for a player who forgets, reads only `infoset_blocks`.

A `KernelLayout` is a pytree: its arrays are leaves, carried through `jit`, `vmap`,
`jaxsolve.stack` and sharding with the tree's own; its static shape (the blocks,
columns and slots) is part of the jit cache key. Everything here is host-side NumPy
on concrete arrays; a batch's games share their structure, so the first is read.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import numpy as np


@dataclasses.dataclass(frozen=True)
class KernelLayout:
    """The kernels' view of one game (or a batch of one structure); see the module
    docstring. Shapes use I infosets, Z terminals, P players, D the longest own
    chain before an infoset, S the legal sequences of all players.

    The arrays are pytree leaves (None where the packing does not apply); the last
    three attributes are static, part of the jit cache key.

    Attributes:
      rows: [I] int32, the infoset id of each packed row, player by player.
      sequences: [S] int32, the tree's sequence id `i * A + a` of each packed entry.
      parent: [I] int32, each packed row's parent sequence in its player's packed
        numbering (entries 0..S_p - 1, S_p the empty sequence).
      ancestors: [I, D] int32, each packed row's earlier own sequences likewise.
      last: P arrays [Z] int32 (a tuple: a kernel reads player p's own buffer,
        where a row of a [P, Z] parameter would be copied before XLA:CPU scatters
        by it), each leaf's last own sequence of each player likewise.
      slot_leaves: [sum_p K_p * R_p] int32, each player's leaves in its rows of
        slots (a [K_p, R_p] array flattened), Z in an empty slot.
      slot_sequences: [sum_p R_p] int32, the packed sequence of each row.
      infoset_blocks: `infoset_blocks[p][d] = (start, stop)`, the ids of player p's
        infosets with d own earlier decisions, when every such group is one
        contiguous range of ids (as the builders and level-by-level numberings
        give); None otherwise. Lets the padded backups work on slices.
      block_columns: `block_columns[p][d][j]`, how many of player p's infosets at
        own depth d have more than j legal actions; None where a player forgets
        (no packing).
      leaf_slots: `leaf_slots[p] = (K, R)`: player p's leaf weights are added in R
        rows of K slots, each row holding leaves of one of its sequences; K = 0
        where they are added by a scatter. None without packing; all K = 0 on a
        tree split over devices (whose devices hold other terminals).
    """

    rows: Any = None
    sequences: Any = None
    parent: Any = None
    ancestors: Any = None
    last: Any = None
    slot_leaves: Any = None
    slot_sequences: Any = None
    infoset_blocks: tuple[tuple[tuple[int, int], ...], ...] | None = None
    block_columns: tuple[tuple[tuple[int, ...], ...], ...] | None = None
    leaf_slots: tuple[tuple[int, int], ...] | None = None

    @property
    def packed(self) -> bool:
        """Whether the packed kernels apply: every player has perfect recall and the
        arrays are derived."""
        return self.block_columns is not None and self.last is not None

    def __repr__(self) -> str:
        # The dataclass repr prints every array; a layout is read by its shape.
        if not self.packed:
            return f"KernelLayout(unpacked, infoset_blocks={self.infoset_blocks is not None})"
        return (f"KernelLayout({packed_size(self.block_columns)} sequences, "
                f"leaf_slots={self.leaf_slots})")


ARRAYS = ("rows", "sequences", "parent", "ancestors", "last", "slot_leaves", "slot_sequences")
jax.tree_util.register_dataclass(
    KernelLayout, data_fields=list(ARRAYS),
    meta_fields=["infoset_blocks", "block_columns", "leaf_slots"])


def derive(legal, infoset_player, infoset_depth, infoset_parent, infoset_ancestors,
           terminal_last, perfect_recall, costs: "SlotCosts | None" = None) -> KernelLayout:
    """The `KernelLayout` of a tree's arrays (host-side; concrete arrays).

    Args:
      legal: [..., I, A] the legal actions; a batch's games share the structure
        arrays, the first game's are read.
      infoset_player: [..., I] the player of each infoset.
      infoset_depth: [..., I] its own depth.
      infoset_parent: [..., I] its own parent sequence.
      infoset_ancestors: [..., I, D] its earlier own sequences.
      terminal_last: [..., P, Z] each leaf's last own sequence per player.
      perfect_recall: per player, whether it remembers (`TreeSizes.perfect_recall`).
      costs: the `SlotCosts` the leaf slots are laid out for; None for the default
        backend's (`slot_costs`).

    Returns:
      The layout: `infoset_blocks` always read; the packed arrays, columns and
      slots where every player has perfect recall, else None.
    """
    num_players = len(perfect_recall)
    blocks = infoset_blocks(infoset_player, infoset_depth, num_players)
    groups = (depth_groups(infoset_player, infoset_depth, num_players)
              if all(perfect_recall) else None)
    columns = block_columns(legal, groups)
    if columns is None:
        return KernelLayout(infoset_blocks=blocks)
    arrays = packed_arrays(legal, infoset_parent, infoset_ancestors, terminal_last, groups,
                           columns)
    slots, slot_arrays = leaf_slots(arrays["last"], columns, costs)
    return KernelLayout(**arrays, **slot_arrays, infoset_blocks=blocks, block_columns=columns,
                        leaf_slots=slots)


def packed_size(columns) -> int:
    """S: the legal sequences of all players.

    Args:
      columns: `KernelLayout.block_columns`.

    Returns:
      Their count, an int.
    """
    return sum(sum(depth) for player in columns for depth in player)


def infoset_blocks(infoset_player, infoset_depth, num_players: int):
    """`KernelLayout.infoset_blocks` of these arrays (host-side; concrete arrays): the
    `depth_groups` where each is one contiguous range of ids.

    Args:
      infoset_player: as in `depth_groups`.
      infoset_depth: as in `depth_groups`.
      num_players: P.

    Returns:
      For each player, the (start, stop) id range of its infosets at own depth 0,
      1, ...; None when some (player, depth) group is not one contiguous range of ids.
    """
    groups = depth_groups(infoset_player, infoset_depth, num_players)
    if groups is None:
        return None
    blocks = []
    for player in groups:
        ranges = []
        for ids in player:
            if ids[-1] - ids[0] + 1 != ids.size:  # not one contiguous range of ids
                return None
            ranges.append((int(ids[0]), int(ids[-1]) + 1))
        blocks.append(tuple(ranges))
    return tuple(blocks)


def depth_groups(infoset_player, infoset_depth, num_players: int):
    """Each player's infoset ids by own depth (host-side; concrete arrays).

    Unlike `infoset_blocks`, the ids of one group need not be contiguous: any
    numbering has its groups (OpenSpiel's Leduc poker numbers infosets in the order
    its walk meets them, the players' interleaved).

    Args:
      infoset_player: [..., I] the player of each infoset; a batch's games share
        them, the first is read.
      infoset_depth: [..., I] the own depth of each infoset, likewise.
      num_players: P.

    Returns:
      For each player, one ascending int64 id array per own depth 0, 1, ...; None
        when some player's depths skip one (no tree of perfect recall does).
    """
    player = np.asarray(infoset_player).reshape(-1, np.shape(infoset_player)[-1])[0]
    depth = np.asarray(infoset_depth).reshape(-1, np.shape(infoset_depth)[-1])[0]
    groups = []
    for p in range(num_players):
        ids = np.flatnonzero(player == p)
        depths = depth[ids]
        own = np.unique(depths)
        if list(own) != list(range(len(own))):
            return None
        groups.append(tuple(ids[depths == d] for d in own))
    return tuple(groups)


def block_columns(legal, groups):
    """`KernelLayout.block_columns` of these arrays (host-side; concrete arrays).

    Args:
      legal: [..., I, A] the legal actions; a batch's games share them, the first is
        read.
      groups: `depth_groups` of the same tree, or None.

    Returns:
      For each player and own depth, the number of its infosets with more than 0,
      1, ... legal actions (a non-increasing tuple as long as the depth's widest
      infoset); None when `groups` is None.
    """
    if groups is None:
        return None
    legal = np.asarray(legal)
    widths = legal.reshape(-1, *legal.shape[-2:])[0].sum(axis=-1)
    return tuple(tuple(tuple(int(c) for c in np.bincount(
        widths[ids], minlength=1)[:0:-1].cumsum()[::-1])
        for ids in player) for player in groups)


def packed_arrays(legal, infoset_parent, infoset_ancestors, terminal_last, groups,
                  columns) -> dict[str, np.ndarray | None]:
    """The packed arrays of a `KernelLayout` (host-side; concrete arrays).

    Player p's legal sequences are numbered 0..S_p - 1 in the packed order of
    `jaxsolve.packing` (its infosets by own depth, within a depth the most legal
    actions first, ties in id order; a depth's entries column by column), and S_p is
    its empty sequence. The players' rows and entries are concatenated in player
    order, the player's own numbering kept.

    Args:
      legal: [..., I, A] the legal actions; a batch's games share the structure
        arrays, the first game's are read.
      infoset_parent: [..., I] the own parent sequences.
      infoset_ancestors: [..., I, D] the own earlier sequences.
      terminal_last: [..., P, Z] each leaf's last own sequence per player.
      groups: `depth_groups` of the tree, or None.
      columns: `KernelLayout.block_columns` of the groups.

    Returns:
      `KernelLayout` field name -> array: rows [I], sequences [S], parent [I],
      ancestors [I, D] and last (a tuple of P [Z] arrays).
    """

    def first(x, ndim):
        x = np.asarray(x)
        return x.reshape(-1, *x.shape[x.ndim - ndim:])[0]

    legal, parent = first(legal, 2), first(infoset_parent, 1)
    ancestors, last = first(infoset_ancestors, 2), first(terminal_last, 2)
    num_infosets, A = legal.shape
    empty = num_infosets * A
    rows, sequences, parents, ancestor_rows, lasts = [], [], [], [], []
    for player, (player_groups, player_columns) in enumerate(zip(groups, columns)):
        size = sum(sum(c) for c in player_columns)
        flat, order, start_entry = np.zeros(size, np.int64), [], 0
        for ids, depth_columns in zip(player_groups, player_columns):
            ids = ids[np.argsort(-legal[ids].sum(axis=1), kind="stable")]
            mine = legal[ids]
            # entry j of the depth's k-th row: column j's start, plus k
            column_start = start_entry + np.cumsum([0, *depth_columns])
            rank = np.maximum(np.cumsum(mine, axis=1) - 1, 0)
            position = column_start[rank] + np.arange(len(ids))[:, None]
            flat[position[mine]] = (ids[:, None] * A + np.arange(A))[mine]
            order.append(ids)
            start_entry += sum(depth_columns)
        order = np.concatenate(order) if order else np.zeros(0, np.int64)
        index = np.full(empty + 1, size, np.int64)  # tree sequence -> packed entry
        index[flat] = np.arange(size)
        rows.append(order)
        sequences.append(flat)
        parents.append(index[parent[order]])
        ancestor_rows.append(index[ancestors[order]])
        lasts.append(index[last[player]])
    as_int32 = lambda parts, axis=0: np.concatenate(parts, axis=axis).astype(np.int32)  # noqa: E731
    return {
        "rows": as_int32(rows),
        "sequences": as_int32(sequences),
        "parent": as_int32(parents),
        "ancestors": as_int32(ancestor_rows).reshape(-1, ancestors.shape[1]),
        "last": tuple(x.astype(np.int32) for x in lasts),
    }


@dataclasses.dataclass(frozen=True)
class SlotCosts:
    """What adding one leaf's weight into its sequence costs, by the two ways the
    kernel can add it: they choose each player's row width in `leaf_slots`.

    Attributes:
      scatter_ns: a leaf added by a scatter (a read-modify-write per leaf).
      slot_ns: a slot of a row (a gather and a dense add), empty slots included.
    """

    scatter_ns: float
    slot_ns: float


SLOT_COSTS = {
    # XLA:CPU runs a scatter as a serial loop: measured on a 2-core x86 machine
    # (Goofspiel 6, liar's dice, Battleship), slots pay from about 3 leaves a row.
    "cpu": SlotCosts(scatter_ns=1.5, slot_ns=0.5),
    # On a GPU a scatter-add is parallel atomics, cheap where few leaves share a
    # sequence; the slots are not measured there, so the scatter is kept.
    "gpu": SlotCosts(scatter_ns=1.0, slot_ns=math.inf),
    "tpu": SlotCosts(scatter_ns=1.0, slot_ns=math.inf),
}
"""The default `SlotCosts` per JAX backend (`jax.default_backend()` when a tree is
built or loaded); `GameTree.with_slot_costs` lays a tree out for other costs."""


def slot_costs(backend: str | None = None) -> SlotCosts:
    """The default `SlotCosts` of a backend.

    Args:
      backend: "cpu", "gpu", "tpu", ...; None reads `jax.default_backend()`.

    Returns:
      `SLOT_COSTS[backend]`, the CPU's for a backend not listed.
    """
    if backend is None:
        backend = jax.default_backend()
    return SLOT_COSTS.get(backend, SLOT_COSTS["cpu"])


def leaf_slots(packed_last, columns, costs: SlotCosts | None = None
               ) -> tuple[tuple, dict[str, np.ndarray]]:
    """`KernelLayout.leaf_slots` and its arrays `slot_leaves` and `slot_sequences`
    (host-side; concrete arrays).

    Player p's sum of leaf weights per sequence is a segment sum of Z leaves, which
    XLA:CPU runs as a serial loop. With the leaves laid out in rows of K slots, a
    row holding up to K leaves of one sequence (the empty slots naming leaf Z), the
    sum is a gather and a dense sum over the slots: R sums of K terms, added into
    their sequences by a segment sum of R rows, or none where every sequence has
    one row (R = S_p + 1, rows in sequence order). K is the width that costs least
    by `costs`; a player whose rows would cost more than 0.8 of
    its scatter keeps the scatter (K = 0, no rows).

    Args:
      packed_last: `KernelLayout.last`, P arrays [..., Z] (a batch's first game
        read).
      columns: `KernelLayout.block_columns`.
      costs: the `SlotCosts`; None for the default backend's (`slot_costs`).

    Returns:
      (`leaf_slots`, {"slot_leaves": [sum_p K_p * R_p] int32, player by player each
        a [K_p, R_p] array flattened, slot k of row r at k * R_p + r;
        "slot_sequences": [sum_p R_p] int32, each row's sequence in its player's
        packed numbering, ascending}).
    """
    costs = slot_costs() if costs is None else costs
    last = np.stack([np.asarray(x).reshape(-1, np.shape(x)[-1])[0] for x in packed_last])
    num_leaves = last.shape[1]
    sizes, leaves, sequences = [], [], []
    for player, player_columns in enumerate(columns):
        empty = sum(sum(c) for c in player_columns)
        counts = np.bincount(last[player], minlength=empty + 1)
        best, best_cost = 0, 0.8 * num_leaves * costs.scatter_ns
        for width in range(1, 33):
            rows = int(np.maximum(1, -(-counts // width)).sum())
            cost = (rows * width * costs.slot_ns
                    + (0 if rows == empty + 1 else rows * costs.scatter_ns))
            if cost < best_cost:
                best, best_cost = width, cost
        if not best:
            sizes.append((0, 0))
            continue
        per_sequence = np.maximum(1, -(-counts // best))
        first_row = np.cumsum(per_sequence) - per_sequence
        order = np.argsort(last[player], kind="stable")
        sequence = last[player][order]
        rank = np.arange(num_leaves) - (np.cumsum(counts) - counts)[sequence]
        slots = np.full((best, int(per_sequence.sum())), num_leaves, np.int64)
        slots[rank % best, first_row[sequence] + rank // best] = order
        sizes.append((best, slots.shape[1]))
        leaves.append(slots.reshape(-1))
        sequences.append(np.repeat(np.arange(empty + 1), per_sequence))
    join = lambda parts: (np.concatenate(parts) if parts else np.zeros(0)).astype(np.int32)  # noqa: E731
    return tuple(sizes), {"slot_leaves": join(leaves), "slot_sequences": join(sequences)}
