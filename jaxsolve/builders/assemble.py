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
* at the end the terminal paths are unrolled from each terminal's last sequence
  along the infoset-parent chain, a sequence's position in the path being its
  infoset's depth (and likewise for chance, along each chance node's last outcome).

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

import numpy as np

from jaxsolve import progress, validate
from jaxsolve.errors import ArgumentTypeError, GameError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import (GameTree, TreeNames, TreeSizes, observed_utility_sum,
                           validate_shapes, with_infoset_blocks)

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
    """`dtype` as np.float32 or np.float64. Others are refused: chance probabilities
    and utilities cast to integers or booleans are another game (1/6 becomes 0)."""
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
    """`max_bytes` as a positive finite number of bytes (16e9 as well as 2**34)."""
    budget = validate.finite_real("max_bytes", max_bytes, where)
    if budget <= 0:
        validate.fail(where, f"max_bytes must be positive, got {max_bytes!r}")
    return budget


# ---------------------------------------------------------------- memory estimate
def estimate_bytes(spec: Spec, dtype=np.float32) -> int:
    """Bytes of the tree arrays plus the largest level's work arrays and the names."""
    f = float_dtype(dtype, "estimate_bytes").itemsize
    P, A, Ac = spec.num_players, spec.num_actions, spec.num_chance_outcomes
    N, Z, C, I = spec.num_nodes, spec.num_terminals, spec.num_chance, spec.num_infosets
    L, Lc = max(spec.max_sequence_length, 1), max(spec.max_chance_length, 1)
    nodes = N * 4 * (4 + max(A, Ac))  # player, index, parent, parent_action, children
    terminals = Z * (4 * (1 + P + P * L + Lc) + P * f)
    infosets = I * (4 * (3 + L) + A + _NAME_BYTES_PER_INFOSET)
    work = max(spec.level_sizes) * _WORK_BYTES_PER_NODE
    return nodes + terminals + C * Ac * f + infosets + work


def format_bytes(n: float) -> str:
    """'5.55 GiB', '118.6 MiB', '3.1 KiB', '58.9 PiB': for messages and reports."""
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                       ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.{2 if unit == 'GiB' else 1}f} {unit}"
    return f"{int(n)} B"


def check_budget(spec: Spec, max_bytes: int, dtype=np.float32, where: str = "builders") -> int:
    """Raises GameError, naming the estimate, when the build would exceed max_bytes
    (and ArgumentError, naming `where`, for a max_bytes or dtype that is no budget or
    float dtype)."""
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
    """Concatenation of arange(starts[i], starts[i] + counts[i]) over i (int64)."""
    counts = np.asarray(counts, np.int64)
    begin = np.cumsum(counts) - counts  # where each segment begins in the output
    shift = np.repeat(np.asarray(starts, np.int64) - begin, counts)
    return np.arange(int(counts.sum()), dtype=np.int64) + shift


def node_paths(parent: np.ndarray, parent_action: np.ndarray, nodes: np.ndarray,
               depth: int) -> np.ndarray:
    """[len(nodes), depth] action paths root -> node of nodes all at `depth`."""
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


def _chain_paths(last: np.ndarray, chain_parent: np.ndarray, depth: np.ndarray,
                 width: int, out: np.ndarray) -> None:
    """Writes root->leaf paths into out [Z, length], pre-filled with the padding.

    last: [Z] each leaf's last flat index (-1: none); chain_parent[row] / depth[row]:
    the previous flat index (-1: none) and the position of a flat index of `row`.
    Works through the leaves in blocks, so its temporaries stay small.
    """
    for b in range(0, len(last), _BLOCK):
        rows = np.flatnonzero(last[b:b + _BLOCK] >= 0) + b
        cur = last[rows].astype(np.int64)
        while rows.size:
            r = cur // width
            out[rows, depth[r]] = cur
            cur = chain_parent[r]
            keep = cur >= 0
            rows, cur = rows[keep], cur[keep].astype(np.int64)


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
    """Builds the GameTree of `spec` from its levels (see the module docstring);
    `progress` shows a bar on stderr of the histories assembled, level by level
    ("building <label or spec.name>"). Without `histories` the tree is returned as
    `GameTree.without_histories` gives it, and the per-leaf own paths are not built
    when every player has perfect recall.

    Raises GameError if the levels contradict the spec or each other (a builder
    bug: two histories of one infoset with different legal actions, sizes that do
    not add up).
    """
    dtype = float_dtype(dtype, "assemble")
    P, A, Ac = spec.num_players, spec.num_actions, spec.num_chance_outcomes
    W = max(A, Ac)
    sizes = tuple(int(s) for s in spec.level_sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    N, C, Z = int(offsets[-1]), spec.num_chance, spec.num_terminals
    if N > _INT32_MAX:
        raise GameError(f"{spec.name}: {N:,} histories overflow int32 node ids")

    node_player = np.empty(N, np.int32)
    node_index = np.empty(N, np.int32)
    parent = np.empty(N, np.int32)
    parent_action = np.empty(N, np.int32)
    children = np.full((N, W), -1, np.int32)
    chance_probs = np.empty((C, Ac), dtype)
    chance_prev = np.empty(C, np.int32)  # last chance outcome above each chance node
    chance_depth = np.empty(C, np.int32)
    utilities = np.empty((Z, P), dtype)
    terminal_node = np.empty(Z, np.int32)
    terminal_last = np.empty((P, Z), np.int32)  # -1 while the player has not acted
    terminal_clast = np.empty(Z, np.int32)

    inf_player, inf_parent, inf_legal = [], [], []  # per level, concatenated later
    inf_depth = np.zeros(0, np.int32)  # grows level by level (looked up by later levels)
    names, action_names = [], []
    label_cache: dict[tuple[int, bytes], tuple[str, ...]] = {}
    recall = [True] * P
    I = c_seen = z_seen = 0
    prev_counts = prev_actions = prev_last = prev_clast = None
    max_action = max_outcome = -1

    def fail(depth: int, problem: str):
        raise GameError(f"{spec.name}: depth {depth}: {problem} (builder bug)")

    depth = -1
    levels = _counted(levels, sizes, label or spec.name) if progress else levels
    for depth, lv in enumerate(levels):
        if depth >= len(sizes):
            fail(depth, f"more levels than the {len(sizes)} declared")
        n, o = sizes[depth], int(offsets[depth])
        player = np.asarray(lv.player)
        counts = np.asarray(lv.num_children)
        child_action = np.asarray(lv.child_action)
        if len(player) != n or len(counts) != n:
            fail(depth, f"{len(player)} nodes, {n} declared")
        node_player[o:o + n] = player
        index = node_index[o:o + n]  # a view, filled below

        # Parents, and each node's last own sequence per player / last chance outcome.
        if prev_counts is None:
            if n != 1:
                fail(depth, "the root level must hold one node")
            parent[0] = parent_action[0] = -1
            last = [np.full(n, -1, np.int32) for _ in range(P)]
            clast = np.full(n, -1, np.int32)
        else:
            n_prev, o_prev = sizes[depth - 1], int(offsets[depth - 1])
            par = np.repeat(np.arange(n_prev, dtype=np.int32), prev_counts)
            np.add(par, o_prev, out=parent[o:o + n])
            act = parent_action[o:o + n]
            act[:] = prev_actions
            pp = node_player[o_prev:o_prev + n_prev][par]
            seq = node_index[o_prev:o_prev + n_prev][par]  # the parent's infoset / row
            del par
            clast = prev_clast[parent[o:o + n] - o_prev]
            from_chance = pp == CHANCE
            if from_chance.any():
                np.copyto(clast, seq * Ac + act, where=from_chance)
            del from_chance
            seq *= A
            seq += act  # the parent's sequence, where the parent is a decision
            last = []
            for p in range(P):
                mine = prev_last[p][parent[o:o + n] - o_prev]
                np.copyto(mine, seq, where=pp == p)
                last.append(mine)
            del pp, seq
        prev_last = prev_clast = None

        # Chance nodes.
        is_chance = player == CHANCE
        if is_chance.any():
            ch = _members(is_chance)
            k = _size(ch)
            rows = slice(c_seen, c_seen + k)
            probs = np.asarray(lv.chance_probs)
            if probs.shape != (k, Ac):
                fail(depth, f"chance_probs has shape {probs.shape}, expected {(k, Ac)}")
            index[ch] = np.arange(c_seen, c_seen + k)
            chance_probs[rows] = probs
            cp = clast[ch]
            chance_prev[rows] = cp
            chance_depth[rows] = np.where(cp < 0, 0, chance_depth[np.maximum(cp, 0) // Ac] + 1)
            c_seen += k
        del is_chance

        # Terminals.
        is_terminal = player == TERMINAL
        if is_terminal.any():
            te = _members(is_terminal)
            k = _size(te)
            if np.any(counts[te]):
                fail(depth, "a terminal has children")
            rows = slice(z_seen, z_seen + k)
            u = np.asarray(lv.utilities)
            if u.shape != (k, P):
                fail(depth, f"utilities has shape {u.shape}, expected {(k, P)}")
            index[te] = np.arange(z_seen, z_seen + k, dtype=np.int32)
            utilities[rows] = u
            del u
            terminal_node[rows] = _positions(te) + o
            for p in range(P):
                terminal_last[p, rows] = last[p][te]
            terminal_clast[rows] = clast[te]
            z_seen += k
        del is_terminal

        # Decision nodes: the infosets of this level.
        is_decision = player >= 0
        at = None  # [n] int32: infoset (relative to this level) of each node, -1 if none
        if is_decision.any():
            dec = _members(is_decision)
            dec_player = player[dec]
            if dec_player.max() >= P:
                fail(depth, f"player {int(dec_player.max())} >= {P}")
            rel, first = _number_infosets(dec_player, np.asarray(lv.key)[dec])
            index[dec] = rel + I
            at = np.full(n, -1, np.int32)
            at[dec] = rel
            del rel
            own_last = np.choose(dec_player, [last[p][dec] for p in range(P)])
            fnode = _positions(dec)[first]
            new_player = dec_player[first].astype(np.int32)
            new_parent = own_last[first]
            # Perfect recall: every history of an infoset has the same own parent.
            broken = own_last != new_parent[at[dec]]
            for p in np.unique(dec_player[broken]):
                recall[int(p)] = False
            del own_last, broken, dec_player
            # Legal actions: the first history's children (the others are checked
            # against them below, with the children).
            starts = np.cumsum(counts) - counts
            k = len(first)
            legal = np.zeros((k, A), bool)
            fcount = counts[fnode]
            legal[np.repeat(np.arange(k), fcount),
                  child_action[ragged_arange(starts[fnode], fcount)]] = True
            del starts, fcount
            if not np.array_equal(counts[dec], legal.sum(axis=1)[at[dec]]):
                fail(depth, "histories of one infoset have different numbers of actions")
            new_depth = (np.where(new_parent < 0, 0, inf_depth[np.maximum(new_parent, 0) // A] + 1)
                         if I else np.zeros(k, np.int32))
            inf_depth = np.concatenate([inf_depth, new_depth.astype(np.int32)])
            inf_player.append(new_player)
            inf_parent.append(new_parent)
            inf_legal.append(legal)
            # Names, from each new infoset's first history.
            paths = node_paths(parent, parent_action, fnode + o, depth).tolist()
            for p, path, row in zip(new_player.tolist(), paths, legal):
                names.append(spec.infoset_name(p, path))
                ck = (p, row.tobytes())
                labels = label_cache.get(ck)
                if labels is None:
                    labels = tuple(spec.action_name(p, a) if row[a] else "" for a in range(A))
                    label_cache[ck] = labels
                action_names.append(labels)
            del paths
        del is_decision

        # Children, block by block: the [N, W] table, and every decision history's
        # actions checked against its infoset's legal row.
        total = int(counts.sum())
        if len(child_action) != total:
            fail(depth, f"{len(child_action)} child actions for {total} children")
        if total and (depth + 1 >= len(sizes) or sizes[depth + 1] != total):
            fail(depth, f"{total} children, next level declared "
                        f"{sizes[depth + 1] if depth + 1 < len(sizes) else 0}")
        c0 = 0
        for b in range(0, n if total else 0, _BLOCK):
            block = counts[b:b + _BLOCK]
            k = int(block.sum())
            if not k:
                continue
            node = np.repeat(np.arange(b, b + len(block), dtype=np.int32), block)
            acts = child_action[c0:c0 + k]
            children.reshape(-1)[(node.astype(np.int64) + o) * W + acts] = np.arange(
                offsets[depth + 1] + c0, offsets[depth + 1] + c0 + k, dtype=np.int32)
            who = at[node] if at is not None else np.full(k, -1, np.int32)
            del node
            mine = who >= 0
            if mine.all():
                ok = legal[who, acts].all()
                max_action = max(max_action, int(acts.max()))
            else:
                ok = legal[who[mine], acts[mine]].all() if mine.any() else True
                if mine.any():
                    max_action = max(max_action, int(acts[mine].max()))
                max_outcome = max(max_outcome, int(acts[~mine].max()))
            if not ok:
                fail(depth, "histories of one infoset have different legal actions")
            c0 += k
            del who, mine, acts
        if at is not None:
            I += len(first)
        prev_counts, prev_actions, prev_last, prev_clast = counts, child_action, last, clast
        del lv, player, index, at, last, clast

    if depth + 1 != len(sizes) or c_seen != C or z_seen != Z:
        raise GameError(f"{spec.name}: built {depth + 1} levels, {c_seen} chance nodes, "
                        f"{z_seen} terminals; declared {len(sizes)}, {C}, {Z} (builder bug)")
    del prev_counts, prev_actions, prev_last, prev_clast
    if I == 0:
        raise GameError(f"{spec.name}: the game has no decision node")
    if max_action + 1 != A or max(max_outcome + 1, 1) != Ac:
        raise GameError(f"{spec.name}: actions reach {max_action}, outcomes {max_outcome}; "
                        f"declared A={A}, Ac={Ac} (builder bug)")
    if I * A + 1 > _INT32_MAX:
        raise GameError(f"{spec.name}: {I:,} infosets x {A} actions overflow int32")
    empty = I * A

    # Infosets: parents, ancestors (immediate parent first, as compile_game has them).
    infoset_player = np.concatenate(inf_player)
    parent_raw = np.concatenate(inf_parent)
    legal = np.concatenate(inf_legal)
    del inf_legal
    infoset_parent = np.where(parent_raw < 0, empty, parent_raw).astype(np.int32)
    D = max(int(inf_depth.max()), 1)
    ancestors = np.full((I, D), empty, np.int32)
    cur = parent_raw.astype(np.int64)
    for j in range(D):
        has = cur >= 0
        ancestors[has, j] = cur[has]
        cur = np.where(has, parent_raw[np.maximum(cur, 0) // A], -1)

    # Terminal paths: own sequences and chance outcomes, root to leaf. Every
    # infoset (chance node) has a terminal below each action, reached with one
    # more own decision (chance event) than its depth: so the widths are these.
    L = int(inf_depth.max()) + 1
    terminal_sequences = None
    if histories or not all(recall):
        terminal_sequences = np.full((P, Z, L), empty, np.int32)
        for p in range(P):
            _chain_paths(terminal_last[p], parent_raw, inf_depth, A, terminal_sequences[p])
    terminal_last[terminal_last < 0] = empty
    Lc = int(chance_depth.max()) + 1 if C else 1
    terminal_chance = np.full((Z, Lc), C * Ac, np.int32)
    _chain_paths(terminal_clast, chance_prev, chance_depth, Ac, terminal_chance)
    del terminal_clast

    utility_sum = spec.utility_sum
    if utility_sum is None:
        utility_sum = observed_utility_sum(utilities)
    sizes_out = TreeSizes(
        num_players=P, num_nodes=N, num_infosets=I, num_actions=A, num_chance_outcomes=Ac,
        num_chance=C, num_terminals=Z, level_offsets=tuple(int(x) for x in offsets),
        max_sequence_length=L, max_chance_length=Lc, max_infoset_depth=D,
        perfect_recall=tuple(recall), utility_sum=utility_sum)
    tree = GameTree(
        node_player=node_player, node_index=node_index, children=children, parent=parent,
        parent_action=parent_action, infoset_player=infoset_player, legal=legal,
        infoset_parent=infoset_parent, infoset_ancestors=ancestors, infoset_depth=inf_depth,
        chance_probs=chance_probs, utilities=utilities, terminal_node=terminal_node,
        terminal_sequences=terminal_sequences, terminal_last=terminal_last,
        terminal_chance=terminal_chance, sizes=sizes_out,
        names=TreeNames.make(spec.name, names, action_names))
    validate_shapes(tree, where=spec.name)
    return with_infoset_blocks(tree if histories else tree.without_histories())


def tree_bytes(tree: GameTree) -> int:
    """Bytes held by the tree's arrays (names not included; arrays a tree from
    `without_histories` dropped count 0)."""
    return sum(np.asarray(getattr(tree, f)).nbytes for f in (
        "node_player", "node_index", "children", "parent", "parent_action",
        "infoset_player", "legal", "infoset_parent", "infoset_ancestors", "infoset_depth",
        "chance_probs", "utilities", "terminal_node", "terminal_sequences", "terminal_last",
        "terminal_chance") if getattr(tree, f) is not None)
