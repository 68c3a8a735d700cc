"""Assembling a GameTree level by level from per-node NumPy arrays.

A builder describes its game as a stream of `Level`s, one per depth, each listing
that depth's histories in breadth-first order: the order `compile_game` produces,
in which the nodes of depth d+1 are the children of the nodes of depth d, parent by
parent, each parent's children by ascending action. A level is a few flat arrays
(who acts, how many children and by which actions, an integer key naming the
information state, chance probabilities, returns), and `assemble` turns the stream
into a `GameTree` without visiting a single history in Python:

* parents, parent actions and the children table follow from the child counts;
* the information sets of a level are its distinct (player, key) pairs, numbered in
  order of first appearance, so the ids are the ones `compile_game` assigns;
* every node of the level being processed carries, per player, its last own
  sequence (flat `infoset * A + action`, -1 before any) and its last chance outcome
  (`row * Ac + outcome`): one gather per level. From them come the infosets'
  sequence-form parents, the perfect-recall check and each terminal's last
  sequences;
* at the end `jaxsolve.assemble.tree_from_parts`, which `compile_game` shares,
  derives the rest: the terminal paths unrolled from each terminal's last sequence
  along the infoset-parent chain (and likewise for chance), the infosets'
  ancestors, the sizes.

Only two levels' work arrays are alive at once. The tree's own arrays are allocated
once, from the sizes the builder declares in its `Spec`, so a builder checks
`estimate_bytes` against its `max_bytes` before anything big is allocated.

Assumption (true for every builder here, whose information states include the move
number): all histories of an information set lie at the same depth.

Index arrays are int32, as the GameTree documents. JAX would gather with narrower
integers, but node ids, flat sequences `I * A` and utility rows of the games this is
for exceed int16, and int32 trees built here stay interchangeable (`jaxsolve.stack`,
shared jit caches) with compiled ones. Per history that costs 4 * (4 + W) bytes for
the node arrays (W = max(A, Ac) children slots) plus, per terminal,
4 * (1 + P + P * L + Lc) + P * sizeof(float) for the terminal view.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

import jax
import numpy as np

from jaxsolve import progress, validate
from jaxsolve.assemble import TreeParts, tree_from_parts
from jaxsolve.errors import ArgumentTypeError, GameError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import GameTree

DEFAULT_MAX_BYTES = 8 * 2**30
# Work arrays per history of the widest level (gathers, the key sort of
# `np.unique`, per-level builder state). Measured: goofspiel(7) peaks at 4.45 GiB
# resident for a 3.67 GiB tree, ~0.6 GiB (names included) over 25.4M histories at
# its widest level, so 25-30 bytes; the margin covers smaller, less regular games.
_WORK_BYTES_PER_NODE = 64
# Python strings for one infoset name and its action-label tuple, roughly.
_NAME_BYTES_PER_INFOSET = 256
_INT32_MAX = 2**31 - 1
_BLOCK = 1 << 21  # nodes per block for per-child work, bounding its temporaries


@dataclasses.dataclass(frozen=True)
class Spec:
    """What a builder declares before building: sizes (exact) and names (functions).

    The sizes let `estimate_bytes` refuse oversize requests and `assemble` allocate
    every tree array once; `assemble` checks the levels against them.

    Attributes:
      name: the game's name, recorded as `TreeNames.game`.
      num_players: P.
      num_actions: A, the largest decision action + 1.
      num_chance_outcomes: Ac, the largest chance outcome + 1; 1 without chance.
      level_sizes: the number of histories per depth.
      num_chance: C, the number of chance nodes.
      num_terminals: Z, the number of terminals.
      max_sequence_length: a bound on one player's decisions on a path (estimate
        only).
      max_chance_length: a bound on chance events on a path (estimate only).
      num_infosets: a bound on the number of infosets (estimate only).
      utility_sum: the declared constant sum; None: checked on the utilities.
      infoset_name: (player, action path) -> the infoset's name.
      action_name: (player, action) -> the action's label.
    """

    name: str  # recorded as TreeNames.game
    num_players: int
    num_actions: int  # A: largest decision action + 1
    num_chance_outcomes: int  # Ac: largest chance outcome + 1; 1 without chance
    level_sizes: tuple[int, ...]  # nodes per depth
    num_chance: int  # C
    num_terminals: int  # Z
    max_sequence_length: int  # bound on one player's decisions on a path (estimate only)
    max_chance_length: int  # bound on chance events on a path (estimate only)
    num_infosets: int  # bound on the number of infosets (estimate only)
    utility_sum: float | None  # declared constant sum; None: checked on the utilities
    infoset_name: Callable[[int, list[int]], str]  # (player, action path) -> name
    action_name: Callable[[int, int], str]  # (player, action) -> label

    @property
    def num_nodes(self) -> int:
        return int(sum(self.level_sizes))


@dataclasses.dataclass
class Level:
    """The n histories of one depth, in breadth-first order.

    Attributes:
      player: [n] int: acting player, CHANCE (-1) or TERMINAL (-4).
      num_children: [n] int: number of children (0 exactly at terminals).
      child_action: [sum(num_children)] int: each node's actions, ascending, node
        after node (so the children of the level are the next level, in order).
      key: [n] int64 or None: at decision nodes, equal (player, key) <=> same
        information set within this level; ignored at other nodes. None when the
        level has no decision node.
      chance_probs: [number of chance nodes, Ac] float, or None without chance nodes.
      utilities: [number of terminals, P] float, or None without terminals.
    """

    player: np.ndarray
    num_children: np.ndarray
    child_action: np.ndarray
    key: np.ndarray | None = None
    chance_probs: np.ndarray | None = None
    utilities: np.ndarray | None = None


# ---------------------------------------------------------------- settings
def float_dtype(dtype, where: str) -> np.dtype:
    """`dtype` as np.float32 or np.float64.

    Others are refused: chance probabilities and utilities cast to integers or booleans
    are another game (1/6 becomes 0).

    Args:
      dtype: the dtype asked for.
      where: the builder's name, which starts the message.

    Returns:
      The NumPy dtype.

    Raises:
      ArgumentTypeError: `dtype` is no dtype.
      ArgumentError: `dtype` is not float32 or float64.
    """
    try:
        checked = np.dtype(dtype)
    except TypeError:
        validate.fail(where, f"dtype must be np.float32 or np.float64, got {dtype!r}",
                      ArgumentTypeError)
    if checked not in (np.float32, np.float64):
        validate.fail(where, f"dtype must be np.float32 or np.float64, got {checked}: the "
                             "tree's chance probabilities and utilities are stored in it")
    return checked


def byte_budget(max_bytes, where: str) -> float:
    """`max_bytes` as a positive finite number of bytes (16e9 as well as 2**34).

    Args:
      max_bytes: the budget.
      where: the builder's name, which starts the message.

    Returns:
      The budget as a float.

    Raises:
      ArgumentTypeError: `max_bytes` is no number.
      ArgumentError: `max_bytes` is not finite or not positive.
    """
    return validate.static(where, "max_bytes", max_bytes, validate.number_rule(above=0))


# ---------------------------------------------------------------- memory estimate
def estimate_bytes(spec: Spec, dtype: np.dtype | type = np.float32) -> int:
    """The memory a build needs: the tree arrays, the largest level's work arrays and the
    names.

    Args:
      spec: the builder's `Spec`.
      dtype: the float dtype of chance probabilities and utilities.

    Returns:
      The estimate in bytes.

    Raises:
      ArgumentError: `dtype` is not float32 or float64.
    """
    f = float_dtype(dtype, "estimate_bytes").itemsize
    P, A, Ac = spec.num_players, spec.num_actions, spec.num_chance_outcomes
    N, Z, C, I = spec.num_nodes, spec.num_terminals, spec.num_chance, spec.num_infosets
    L, Lc = max(spec.max_sequence_length, 1), max(spec.max_chance_length, 1)
    nodes = N * 4 * (4 + max(A, Ac))  # player, index, parent, parent_action, children
    # per leaf: node, last sequences (the tree's and packed), paths, chance, payoffs
    terminals = Z * (4 * (1 + 2 * P + P * L + Lc) + P * f)
    # per infoset: player, parent, depth, ancestors, legal, and packed: row, parent,
    # ancestors and at most A entries
    infosets = I * (4 * (3 + L) + A + 4 * (2 + L + A) + _NAME_BYTES_PER_INFOSET)
    work = max(spec.level_sizes) * _WORK_BYTES_PER_NODE
    return nodes + terminals + C * Ac * f + infosets + work


def format_bytes(n: float) -> str:
    """A number of bytes for messages and reports: '5.55 GiB', '118.6 MiB', '3.1 KiB'.

    Args:
      n: the number of bytes.

    Returns:
      The text, in the largest binary unit (up to PiB) that n reaches.
    """
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                       ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.{2 if unit == 'GiB' else 1}f} {unit}"
    return f"{int(n)} B"


def check_budget(spec: Spec, max_bytes: int, dtype=np.float32, where: str = "builders") -> int:
    """Refuses a build that would exceed `max_bytes`.

    Args:
      spec: the builder's `Spec`.
      max_bytes: the budget in bytes.
      dtype: the float dtype of chance probabilities and utilities.
      where: the builder's name, which starts messages about the arguments.

    Returns:
      The estimate in bytes (`estimate_bytes`).

    Raises:
      GameError: the estimate exceeds `max_bytes` (the message names it), or the
        sequence ids would overflow int32.
      ArgumentError: `max_bytes` is no budget or `dtype` no float dtype.
    """
    max_bytes = byte_budget(max_bytes, where)
    need = estimate_bytes(spec, float_dtype(dtype, where))
    if need > max_bytes:
        per = need / max(spec.num_nodes, 1)
        raise GameError(
            f"{spec.name} has {spec.num_nodes:,} histories ({spec.num_terminals:,} "
            f"terminals); at about {per:.0f} bytes per history building its tree needs "
            f"about {format_bytes(need)}, more than max_bytes={format_bytes(max_bytes)}. "
            f"Raise max_bytes if that fits, or choose smaller game parameters.")
    if spec.num_infosets * spec.num_actions + 1 > _INT32_MAX:
        raise GameError(f"{spec.name}: {spec.num_infosets:,} infosets x "
                        f"{spec.num_actions} actions overflow int32 sequence ids")
    return need


# ---------------------------------------------------------------- small helpers
def ragged_arange(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenation of arange(starts[i], starts[i] + counts[i]) over i.

    Args:
      starts: [R] each segment's first value.
      counts: [R] each segment's length.

    Returns:
      [sum(counts)] int64.
    """
    counts = np.asarray(counts, np.int64)
    begin = np.cumsum(counts) - counts  # where each segment begins in the output
    shift = np.repeat(np.asarray(starts, np.int64) - begin, counts)
    return np.arange(int(counts.sum()), dtype=np.int64) + shift


def node_paths(parent: np.ndarray, parent_action: np.ndarray, nodes: np.ndarray,
               depth: int) -> np.ndarray:
    """The action paths root -> node of histories all at one depth.

    Args:
      parent: [N] the parent of each history.
      parent_action: [N] the action from the parent.
      nodes: [M] history ids, all at `depth`.
      depth: their depth.

    Returns:
      [M, depth] int32, the actions, root first.
    """
    paths = np.empty((len(nodes), depth), np.int32)
    cur = np.asarray(nodes, np.int64)
    for j in range(depth - 1, -1, -1):
        paths[:, j] = parent_action[cur]
        cur = parent[cur]
    return paths


def _members(mask: np.ndarray):
    """Indices where `mask` holds: a slice (a view, no index array) when it holds
    everywhere, as it does on most levels of the games here."""
    if mask.all():
        return slice(0, len(mask))
    return np.flatnonzero(mask)


def _size(sel) -> int:
    return sel.stop - sel.start if isinstance(sel, slice) else len(sel)


def _positions(sel) -> np.ndarray:
    return np.arange(sel.start, sel.stop) if isinstance(sel, slice) else sel


def _number_infosets(player: np.ndarray, key: np.ndarray):
    """Infoset ids of decision nodes, numbered by first appearance.

    Args:
      player: [m] the decision nodes' players; key: [m] their keys.
    Returns:
      ids: [m] int64 in 0..k-1; first: [k] position (in 0..m-1) of each infoset's
      first node, ascending.
    """
    players = np.unique(player)
    if len(players) == 1:  # the usual case: one player acts at this depth
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty(len(first), np.int64)
        order = np.argsort(first)
        rank[order] = np.arange(len(first))
        return rank[inverse.reshape(-1)], first[order]
    ids = np.empty(len(player), np.int64)
    firsts, groups = [], []
    for p in players:
        sel = np.flatnonzero(player == p)
        _, first, inverse = np.unique(key[sel], return_index=True, return_inverse=True)
        firsts.append(sel[first])
        groups.append((sel, inverse.reshape(-1)))
    first = np.concatenate(firsts)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(first), np.int64)
    rank[order] = np.arange(len(first))
    base = 0
    for (sel, inverse), f in zip(groups, firsts):
        ids[sel] = rank[base + inverse]
        base += len(f)
    return ids, first[order]


# ---------------------------------------------------------------- the assembler
def _counted(levels: Iterable[Level], sizes: tuple[int, ...], label: str):
    """`levels`, moving a progress bar by each level's histories once it is assembled
    (when the next one is asked for)."""
    # As compile_game's: small builds finish before the bar would show.
    with progress.bar(total=sum(sizes), desc=f"building {label}", unit=" histories",
                      unit_scale=True, delay=1.0, leave=False) as bar:
        for depth, level in enumerate(levels):
            bar.set_postfix_str(f"level {depth + 1} of {len(sizes)}", refresh=False)
            yield level
            bar.update(sizes[depth] if depth < len(sizes) else 0)


def assemble(spec: Spec, levels: Iterable[Level], dtype=np.float32, *,
             progress: bool = False, label: str | None = None,
             histories: bool = True) -> GameTree:
    """Builds the GameTree of `spec` from its levels (see the module docstring).

    Args:
      spec: the sizes and names the builder declares.
      levels: one `Level` per depth, root first.
      dtype: np.float32 or np.float64, for chance probabilities and utilities.
      progress: show a bar on stderr of the histories assembled, level by level
        ("building <label or spec.name>").
      label: the bar's name for the game.
      histories: False returns the tree as `GameTree.without_histories` gives it, and
        skips the per-leaf own paths when every player has perfect recall.

    Returns:
      The tree.

    Raises:
      GameError: the levels contradict the spec or each other (a builder bug: two
        histories of one infoset with different legal actions, sizes that do not add
        up).
    """
    assembly = _Assembly(spec, float_dtype(dtype, "assemble"))
    depth = -1
    levels = _counted(levels, assembly.sizes, label or spec.name) if progress else levels
    for depth, level in enumerate(levels):
        assembly.add_level(depth, level)
        del level  # before the builder makes the next one
    return tree_from_parts(assembly.parts(depth + 1), histories)


class _Assembly:
    """The tree's arrays, allocated once from the spec and filled level by level, and
    what the last level passes on to the next (only two levels' work arrays live)."""

    def __init__(self, spec: Spec, dtype: np.dtype):
        self.spec = spec
        P, A, Ac = spec.num_players, spec.num_actions, spec.num_chance_outcomes
        self.sizes = tuple(int(s) for s in spec.level_sizes)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        N, C, Z = int(self.offsets[-1]), spec.num_chance, spec.num_terminals
        if N > _INT32_MAX:
            raise GameError(f"{spec.name}: {N:,} histories overflow int32 node ids")
        self.node_player = np.empty(N, np.int32)
        self.node_index = np.empty(N, np.int32)
        self.parent = np.empty(N, np.int32)
        self.parent_action = np.empty(N, np.int32)
        self.children = np.full((N, max(A, Ac)), -1, np.int32)
        self.chance_probs = np.empty((C, Ac), dtype)
        self.chance_prev = np.empty(C, np.int32)  # last chance outcome above each chance node
        self.utilities = np.empty((Z, P), dtype)
        self.terminal_node = np.empty(Z, np.int32)
        self.terminal_last = np.empty((P, Z), np.int32)  # -1 while the player has not acted
        self.terminal_clast = np.empty(Z, np.int32)
        self.inf_player, self.inf_parent, self.inf_legal = [], [], []  # per level
        self.names, self.action_names = [], []
        self.label_cache: dict[tuple[int, bytes], tuple[str, ...]] = {}
        self.recall = [True] * P
        self.I = self.c_seen = self.z_seen = 0
        self.prev_counts = self.prev_actions = self.prev_last = self.prev_clast = None
        self.max_action = self.max_outcome = -1

    def fail(self, depth: int, problem: str):
        raise GameError(f"{self.spec.name}: depth {depth}: {problem} (builder bug)")

    def add_level(self, depth: int, level: Level) -> None:
        """Fills the arrays of the histories of `depth`, checking them against the spec."""
        if depth >= len(self.sizes):
            self.fail(depth, f"more levels than the {len(self.sizes)} declared")
        n, o = self.sizes[depth], int(self.offsets[depth])
        player = np.asarray(level.player)
        counts = np.asarray(level.num_children)
        child_action = np.asarray(level.child_action)
        if len(player) != n or len(counts) != n:
            self.fail(depth, f"{len(player)} nodes, {n} declared")
        self.node_player[o:o + n] = player
        index = self.node_index[o:o + n]  # a view, filled below
        last, clast = self._link(depth, n, o)
        self._add_chance(depth, player, index, level, clast)
        self._add_terminals(depth, player, index, level, counts, o, last, clast)
        at, legal, new = self._add_infosets(depth, player, index, level, counts,
                                            child_action, o, last)
        self._add_children(depth, n, o, counts, child_action, at, legal)
        self.I += new
        self.prev_counts, self.prev_actions = counts, child_action
        self.prev_last, self.prev_clast = last, clast

    def _link(self, depth: int, n: int, o: int):
        """Parents and parent actions of the level; returns each node's last own
        sequence per player ([P] arrays [n], -1 for none) and last chance outcome."""
        P, A, Ac = self.spec.num_players, self.spec.num_actions, self.spec.num_chance_outcomes
        if self.prev_counts is None:
            if n != 1:
                self.fail(depth, "the root level must hold one node")
            self.parent[0] = self.parent_action[0] = -1
            return [np.full(n, -1, np.int32) for _ in range(P)], np.full(n, -1, np.int32)
        n_prev, o_prev = self.sizes[depth - 1], int(self.offsets[depth - 1])
        par = np.repeat(np.arange(n_prev, dtype=np.int32), self.prev_counts)
        np.add(par, o_prev, out=self.parent[o:o + n])
        act = self.parent_action[o:o + n]
        act[:] = self.prev_actions
        pp = self.node_player[o_prev:o_prev + n_prev][par]
        seq = self.node_index[o_prev:o_prev + n_prev][par]  # the parent's infoset / row
        del par
        up = self.parent[o:o + n] - o_prev
        clast = self.prev_clast[up]
        from_chance = pp == CHANCE
        if from_chance.any():
            np.copyto(clast, seq * Ac + act, where=from_chance)
        del from_chance
        seq *= A
        seq += act  # the parent's sequence, where the parent is a decision
        last = []
        for p in range(P):
            mine = self.prev_last[p][up]
            np.copyto(mine, seq, where=pp == p)
            last.append(mine)
        self.prev_last = self.prev_clast = None
        return last, clast

    def _add_chance(self, depth: int, player, index, level: Level, clast) -> None:
        """The level's chance nodes: their rows of probabilities and the outcome above."""
        is_chance = player == CHANCE
        if not is_chance.any():
            return
        ch = _members(is_chance)
        k, Ac = _size(ch), self.spec.num_chance_outcomes
        rows = slice(self.c_seen, self.c_seen + k)
        probs = np.asarray(level.chance_probs)
        if probs.shape != (k, Ac):
            self.fail(depth, f"chance_probs has shape {probs.shape}, expected {(k, Ac)}")
        index[ch] = np.arange(self.c_seen, self.c_seen + k)
        self.chance_probs[rows] = probs
        self.chance_prev[rows] = clast[ch]
        self.c_seen += k

    def _add_terminals(self, depth: int, player, index, level: Level, counts, o: int,
                       last, clast) -> None:
        """The level's terminals: returns, nodes, last own sequences and chance outcome."""
        is_terminal = player == TERMINAL
        if not is_terminal.any():
            return
        te = _members(is_terminal)
        k, P = _size(te), self.spec.num_players
        if np.any(counts[te]):
            self.fail(depth, "a terminal has children")
        rows = slice(self.z_seen, self.z_seen + k)
        u = np.asarray(level.utilities)
        if u.shape != (k, P):
            self.fail(depth, f"utilities has shape {u.shape}, expected {(k, P)}")
        index[te] = np.arange(self.z_seen, self.z_seen + k, dtype=np.int32)
        self.utilities[rows] = u
        self.terminal_node[rows] = _positions(te) + o
        for p in range(P):
            self.terminal_last[p, rows] = last[p][te]
        self.terminal_clast[rows] = clast[te]
        self.z_seen += k

    def _add_infosets(self, depth: int, player, index, level: Level, counts, child_action,
                      o: int, last):
        """Numbers the level's infosets and records their player, own parent, legal
        actions and names. Returns (each node's infoset relative to the level, -1 if
        none, or None without decisions; the new infosets' legal rows; their count)."""
        is_decision = player >= 0
        if not is_decision.any():
            return None, None, 0
        P, A = self.spec.num_players, self.spec.num_actions
        dec = _members(is_decision)
        dec_player = player[dec]
        if dec_player.max() >= P:
            self.fail(depth, f"player {int(dec_player.max())} >= {P}")
        rel, first = _number_infosets(dec_player, np.asarray(level.key)[dec])
        index[dec] = rel + self.I
        at = np.full(len(player), -1, np.int32)
        at[dec] = rel
        own_last = np.choose(dec_player, [last[p][dec] for p in range(P)])
        fnode = _positions(dec)[first]
        new_player = dec_player[first].astype(np.int32)
        new_parent = own_last[first]
        # Perfect recall: every history of an infoset has the same own parent.
        for p in np.unique(dec_player[own_last != new_parent[rel]]):
            self.recall[int(p)] = False
        # Legal actions: the first history's children (the others are checked
        # against them with the children).
        starts = np.cumsum(counts) - counts
        k = len(first)
        legal = np.zeros((k, A), bool)
        fcount = counts[fnode]
        legal[np.repeat(np.arange(k), fcount),
              child_action[ragged_arange(starts[fnode], fcount)]] = True
        if not np.array_equal(counts[dec], legal.sum(axis=1)[rel]):
            self.fail(depth, "histories of one infoset have different numbers of actions")
        self.inf_player.append(new_player)
        self.inf_parent.append(new_parent)
        self.inf_legal.append(legal)
        self._name_infosets(depth, new_player, fnode + o, legal)
        return at, legal, k

    def _name_infosets(self, depth: int, players, nodes, legal) -> None:
        """Names new infosets, and labels their actions, from their first histories."""
        A = self.spec.num_actions
        paths = node_paths(self.parent, self.parent_action, nodes, depth).tolist()
        for p, path, row in zip(players.tolist(), paths, legal):
            self.names.append(self.spec.infoset_name(p, path))
            key = (p, row.tobytes())
            labels = self.label_cache.get(key)
            if labels is None:
                labels = tuple(self.spec.action_name(p, a) if row[a] else "" for a in range(A))
                self.label_cache[key] = labels
            self.action_names.append(labels)

    def _add_children(self, depth: int, n: int, o: int, counts, child_action, at,
                      legal) -> None:
        """The level's rows of the children table, block by block, checking every
        decision history's actions against its infoset's legal row."""
        sizes, W = self.sizes, self.children.shape[1]
        total = int(counts.sum())
        if len(child_action) != total:
            self.fail(depth, f"{len(child_action)} child actions for {total} children")
        if total and (depth + 1 >= len(sizes) or sizes[depth + 1] != total):
            self.fail(depth, f"{total} children, next level declared "
                             f"{sizes[depth + 1] if depth + 1 < len(sizes) else 0}")
        c0, first_child = 0, self.offsets[depth + 1]
        for b in range(0, n if total else 0, _BLOCK):
            block = counts[b:b + _BLOCK]
            k = int(block.sum())
            if not k:
                continue
            node = np.repeat(np.arange(b, b + len(block), dtype=np.int32), block)
            acts = child_action[c0:c0 + k]
            self.children.reshape(-1)[(node.astype(np.int64) + o) * W + acts] = np.arange(
                first_child + c0, first_child + c0 + k, dtype=np.int32)
            who = at[node] if at is not None else np.full(k, -1, np.int32)
            del node
            mine = who >= 0
            if mine.all():
                ok = legal[who, acts].all()
                self.max_action = max(self.max_action, int(acts.max()))
            else:
                ok = legal[who[mine], acts[mine]].all() if mine.any() else True
                if mine.any():
                    self.max_action = max(self.max_action, int(acts[mine].max()))
                self.max_outcome = max(self.max_outcome, int(acts[~mine].max()))
            if not ok:
                self.fail(depth, "histories of one infoset have different legal actions")
            c0 += k

    def parts(self, levels_seen: int) -> TreeParts:
        """The assembled arrays, once every level is in; checks the totals."""
        spec, I = self.spec, self.I
        A, Ac = spec.num_actions, spec.num_chance_outcomes
        C, Z = spec.num_chance, spec.num_terminals
        if levels_seen != len(self.sizes) or self.c_seen != C or self.z_seen != Z:
            raise GameError(f"{spec.name}: built {levels_seen} levels, {self.c_seen} chance "
                            f"nodes, {self.z_seen} terminals; declared {len(self.sizes)}, {C}, "
                            f"{Z} (builder bug)")
        self.prev_counts = self.prev_actions = self.prev_last = self.prev_clast = None
        if I == 0:
            raise GameError(f"{spec.name}: the game has no decision node")
        if self.max_action + 1 != A or max(self.max_outcome + 1, 1) != Ac:
            raise GameError(f"{spec.name}: actions reach {self.max_action}, outcomes "
                            f"{self.max_outcome}; declared A={A}, Ac={Ac} (builder bug)")
        if I * A + 1 > _INT32_MAX:
            raise GameError(f"{spec.name}: {I:,} infosets x {A} actions overflow int32")
        legal = np.concatenate(self.inf_legal)
        self.inf_legal = []
        return TreeParts(
            name=spec.name, num_actions=A, num_chance_outcomes=Ac,
            level_offsets=tuple(int(x) for x in self.offsets), node_player=self.node_player,
            node_index=self.node_index, parent=self.parent, parent_action=self.parent_action,
            children=self.children, infoset_player=np.concatenate(self.inf_player),
            infoset_parent=np.concatenate(self.inf_parent), legal=legal,
            chance_probs=self.chance_probs, chance_prev=self.chance_prev,
            utilities=self.utilities, terminal_node=self.terminal_node,
            terminal_last=self.terminal_last, terminal_chance_last=self.terminal_clast,
            perfect_recall=tuple(self.recall), utility_sum=spec.utility_sum,
            infoset_names=self.names, action_names=self.action_names)


def tree_bytes(tree: GameTree) -> int:
    """The bytes held by the tree's arrays.

    Args:
      tree: a GameTree.

    Returns:
      The sum of its arrays' sizes, the derived packed ones included (names not
      included; arrays a tree from `without_histories` dropped count 0).
    """
    return sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(tree))
