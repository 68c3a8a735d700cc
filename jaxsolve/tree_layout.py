"""What a GameTree is made of: the names, kinds and shapes of its arrays, and the
static sizes and names that describe one game.

`TreeSizes` and `TreeNames` are the static part of a `jaxsolve.GameTree` (the part of
the jit cache key); `array_shapes` gives the shape of every array from the sizes,
and `infoset_blocks`, `depth_groups`, `block_columns`, `observed_utility_sum` and
`packed_arrays` derive the sizes and arrays that follow from the saved arrays' contents. The tree type itself (`jaxsolve.tree`), its checks
(`jaxsolve.tree_checks`) and its file format (`jaxsolve.tree_file`) build on these.
"""

from __future__ import annotations

import dataclasses
import math
import hashlib
from typing import Any, Sequence

import jax
import numpy as np


@dataclasses.dataclass(frozen=True)
class TreeSizes:
    """Static sizes: part of the compiled program, identical across a sweep.

    `utility_sum` is the exception: a fact about the utilities, not the shapes, which
    no array computation reads (listings, saved files and the OpenSpiel view do). It
    is left out of equality and hashing, so a tree whose payoffs turn general-sum
    shares its compiled programs, and its batch, with the zero-sum original; a tree
    returned *out of* a jitted function keeps the one traced first.

    Attributes:
      num_players: P, the number of players.
      num_nodes: N, the number of histories.
      num_infosets: I, the number of infosets.
      num_actions: A, the width of policies: the largest decision action id + 1.
      num_chance_outcomes: Ac, the width of `chance_probs`: the largest chance
        outcome id + 1.
      num_chance: C, the number of chance nodes.
      num_terminals: Z, the number of terminals.
      level_offsets: the nodes of depth d are [offsets[d], offsets[d+1]).
      max_sequence_length: L, the longest own-sequence path of any player to a leaf.
      max_chance_length: Lc, the most chance events on a path to a leaf.
      max_infoset_depth: D, the most own earlier decisions before any infoset.
      perfect_recall: per player, whether the player remembers all it knew and did.
      utility_sum: the constant sum of the returns, None if general-sum; not
        compared.
      infoset_blocks: `infoset_blocks[p][d] = (start, stop)`, the ids of player p's
        infosets with d own earlier decisions, when every such group is one
        contiguous range (as the builders and level-by-level numberings give);
        None otherwise. Derived from the arrays, never saved; lets the
        sequence-form backups work level by level on slices.
      block_columns: `block_columns[p][d][j]`, how many of player p's infosets at
        own depth d have more than j legal actions, for a tree where every player
        has perfect recall (whatever its infoset numbering), else None. Derived
        from the arrays, never saved; the static shape of the packed layout the
        solvers and the evaluation work in (`jaxsolve.packing`).
      leaf_slots: `leaf_slots[p] = (K, R)`: the loop adds up player p's leaf
        weights in R rows of K slots, each row holding leaves of one of its
        sequences (`GameTree.slot_leaves`); K = 0 where it adds them with a
        scatter instead. With the packed arrays, else None; derived, never saved.
    """

    num_players: int
    num_nodes: int
    num_infosets: int
    num_actions: int  # width of policies: largest decision action id + 1
    num_chance_outcomes: int  # width of chance_probs: largest chance outcome id + 1
    num_chance: int  # chance nodes
    num_terminals: int
    level_offsets: tuple[int, ...]  # nodes of depth d are [offsets[d], offsets[d+1])
    max_sequence_length: int  # longest own-sequence path of any player to a leaf
    max_chance_length: int  # most chance events on a path to a leaf
    max_infoset_depth: int  # most own earlier decisions before any infoset
    perfect_recall: tuple[bool, ...]  # per player
    # constant sum of returns, None if general-sum; not compared (see the docstring)
    utility_sum: float | None = dataclasses.field(compare=False)
    # infoset_blocks[p][d] = (start, stop): the ids of player p's infosets with d own
    # earlier decisions, when every such group is one contiguous range (as the
    # builders and level-by-level numberings give); None otherwise. Derived from
    # the arrays (`infoset_blocks`), never saved; lets the sequence-form backups
    # work level by level on slices instead of passing over every infoset per level.
    infoset_blocks: tuple[tuple[tuple[int, int], ...], ...] | None = None
    # block_columns[p][d][j]: how many of player p's infosets at own depth d have
    # more than j legal actions; derived for perfect recall, never saved.
    block_columns: tuple[tuple[tuple[int, ...], ...], ...] | None = None
    # leaf_slots[p] = (K, R): player p's leaves in R rows of K slots, each row one
    # sequence's (`leaf_slots`); K = 0 where p's leaf sums scatter. Derived with
    # the packed arrays, never saved.
    leaf_slots: tuple[tuple[int, int], ...] | None = None

    @property
    def empty_sequence(self) -> int:
        return self.num_infosets * self.num_actions

    @property
    def constant_sum(self) -> bool:
        return self.utility_sum is not None


@dataclasses.dataclass(frozen=True, eq=False)
class TreeNames:
    """Human-readable names; compared by a content digest so jit caches stay cheap.

    Attributes:
      game: the game's name.
      infosets: [I] the infoset strings.
      actions: `[I][A]` the action names, '' where the slot is illegal.
      digest: the SHA-1 of the names, by which trees' names compare and hash.
    """

    game: str
    infosets: tuple[str, ...]  # [I]
    actions: tuple[tuple[str, ...], ...]  # [I][A], '' where the slot is illegal
    digest: str = ""

    @staticmethod
    def make(game: str, infosets: Sequence[str], actions: Sequence[Sequence[str]]
             ) -> "TreeNames":
        """Names with their digest computed.

        Args:
          game: the game's name.
          infosets: [I] the infoset strings.
          actions: `[I][A]` the action names, '' where the slot is illegal.

        Returns:
          The `TreeNames`.
        """
        infosets = tuple(infosets)
        actions = tuple(tuple(a) for a in actions)
        h = hashlib.sha1(game.encode())
        h.update("\x00".join(infosets).encode())
        h.update("\x01".join("\x00".join(a) for a in actions).encode())
        return TreeNames(game, infosets, actions, h.hexdigest())

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TreeNames) and self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest)


# The sizes read off a tree's arrays when it is built or loaded, never saved.
DERIVED_SIZES = ("infoset_blocks", "block_columns", "leaf_slots")

# The arrays a tree file holds (and `GameTree.replace` replaces).
SAVED_FIELDS = (
    "node_player", "node_index", "children", "parent", "parent_action",
    "infoset_player", "legal", "infoset_parent", "infoset_ancestors", "infoset_depth",
    "chance_probs", "utilities", "terminal_node", "terminal_sequences", "terminal_last",
    "terminal_chance",
)
# The arrays derived from those when a tree is built or loaded, never saved: each
# player's legal sequences packed without padding (`packed_arrays`,
# `jaxsolve.packing`). None where the layout does not apply.
PACKED_FIELDS = ("packed_rows", "packed_sequences", "packed_parent", "packed_ancestors",
                 "packed_last")
SLOT_FIELDS = ("slot_leaves", "slot_sequences")  # and its leaves in rows (`leaf_slots`)
DERIVED_FIELDS = PACKED_FIELDS + SLOT_FIELDS
# The fields that hold a tuple of P arrays, one per player, rather than one [P, ...]
# array: a kernel reads player p's own buffer, where a row of a [P, ...] parameter
# would be copied out before XLA:CPU scatters by it. `array_shapes` gives each
# array's shape; `arrays_of` and `map_arrays` reach every array of any field.
TUPLE_FIELDS = ("packed_last",)
# The arrays of a GameTree, in the order of its pytree leaves.
ARRAY_FIELDS = SAVED_FIELDS + DERIVED_FIELDS
# Their kinds: `legal` is bool, these two hold numbers, every other array indices.
BOOL_FIELDS = ("legal",)
NUMBER_FIELDS = ("chance_probs", "utilities")

# What only the history view and the per-leaf paths use (environments, samplers,
# the structure check, saved files). A full-width solve or evaluation of a game with
# perfect recall reads none of them: `GameTree.without_histories` drops them.
HISTORY_FIELDS = ("node_player", "node_index", "children", "parent", "parent_action",
                  "terminal_node", "terminal_sequences")

# The per-terminal arrays and the axis of one tree's array that runs over terminals
# (`distributed.shard_tree` pads and splits these; `GameTree.save` strips its padding).
TERMINAL_DIM = {"utilities": 0, "terminal_node": 0, "terminal_sequences": 1,
                "terminal_last": 1, "terminal_chance": 0, "packed_last": 0}


def array_shapes(s: TreeSizes) -> dict[str, tuple[int, ...]]:
    """The shape of every array of one game of sizes `s` (a batch adds leading axes).

    Args:
      s: the game's sizes.

    Returns:
      Array name -> shape.
    """
    n, i, a, c, z, p = (s.num_nodes, s.num_infosets, s.num_actions, s.num_chance,
                        s.num_terminals, s.num_players)
    return {
        "node_player": (n,), "node_index": (n,), "parent": (n,),
        "parent_action": (n,), "infoset_player": (i,), "legal": (i, a),
        "children": (n, max(a, s.num_chance_outcomes)),
        "infoset_parent": (i,), "infoset_depth": (i,), "chance_probs": (c, s.num_chance_outcomes),
        "utilities": (z, p), "terminal_node": (z,),
        "terminal_sequences": (p, z, s.max_sequence_length), "terminal_last": (p, z),
        "terminal_chance": (z, s.max_chance_length),
        "infoset_ancestors": (i, s.max_infoset_depth),
        **({} if s.block_columns is None else {
            "packed_rows": (i,), "packed_sequences": (packed_size(s.block_columns),),
            "packed_parent": (i,), "packed_ancestors": (i, s.max_infoset_depth),
            "packed_last": (z,)}),  # each of its P arrays
        **({} if s.leaf_slots is None else {
            "slot_leaves": (sum(k * r for k, r in s.leaf_slots),),
            "slot_sequences": (sum(r for k, r in s.leaf_slots if k),)}),
    }


def arrays_of(field: str, value) -> list:
    """The arrays a tree's field holds: the P of a `TUPLE_FIELDS` field, else the one.

    Args:
      field: the field's name.
      value: its value (not None).

    Returns:
      A list of arrays.
    """
    return list(value) if field in TUPLE_FIELDS else [value]


def map_arrays(field: str, value, fn):
    """`fn` applied to each array of a tree's field, the field's form kept.

    Args:
      field: the field's name.
      value: its value; None stays None.
      fn: array -> array.

    Returns:
      A tuple for a `TUPLE_FIELDS` field, else one array (or None).
    """
    if value is None:
        return None
    return tuple(fn(x) for x in value) if field in TUPLE_FIELDS else fn(value)


def packed_size(columns) -> int:
    """S: the legal sequences of all players.

    Args:
      columns: `TreeSizes.block_columns`.

    Returns:
      Their count, an int.
    """
    return sum(sum(depth) for player in columns for depth in player)


def infoset_blocks(infoset_player, infoset_depth, num_players: int):
    """`TreeSizes.infoset_blocks` of these arrays (host-side; concrete arrays): the
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
    """`TreeSizes.block_columns` of these arrays (host-side; concrete arrays).

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


def observed_utility_sum(utilities) -> float | None:
    """The sum every terminal's returns share (host-side; concrete arrays).

    Args:
      utilities: [..., Z, P] the returns, over any leading batch axes.

    Returns:
      The sum where all terminals share it (to 1e-9), None where they differ: a
      general-sum game.
    """
    sums = np.asarray(utilities, np.float64).sum(axis=-1).reshape(-1)
    if sums.size and np.allclose(sums, sums[0], atol=1e-9):
        return float(sums[0])
    return None


def packed_arrays(legal, infoset_parent, infoset_ancestors, terminal_last, groups,
                  columns) -> dict[str, np.ndarray | None]:
    """The `PACKED_FIELDS` of these arrays (host-side; concrete arrays).

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
      columns: `TreeSizes.block_columns`, or None.

    Returns:
      Field name -> array, all None without `groups`:
        packed_rows [I], the infoset id of each packed row;
        packed_sequences [S], the tree's sequence id `i * A + a` of each entry;
        packed_parent [I], each packed row's parent sequence, in its player's
          numbering;
        packed_ancestors [I, D], its earlier own sequences likewise;
        packed_last, a tuple of P [Z] arrays: each leaf's last sequence of each
          player likewise.
    """
    if groups is None:
        return {f: None for f in PACKED_FIELDS}

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
        "packed_rows": as_int32(rows),
        "packed_sequences": as_int32(sequences),
        "packed_parent": as_int32(parents),
        "packed_ancestors": as_int32(ancestor_rows).reshape(-1, ancestors.shape[1]),
        "packed_last": tuple(x.astype(np.int32) for x in lasts),
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
    """`TreeSizes.leaf_slots` and the arrays `slot_leaves` and `slot_sequences`
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
      packed_last: `GameTree.packed_last`, P arrays [..., Z] (a batch's first game
        read).
      columns: `TreeSizes.block_columns`.
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
