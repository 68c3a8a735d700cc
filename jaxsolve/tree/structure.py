"""How a GameTree's arrays follow from its histories, and the check that they do.

A tree is redundant on purpose: the solvers read the sequence-form view (infoset
parents, each terminal's own sequences and chance outcomes) and the environments
read the history view (who moves, parents, children), and both describe one game.
`compile_game` derives the first from the second with the functions here;
`check_structure` derives it again from a tree read from a file and refuses a file
in which the two disagree. Ranges alone let through files that load and then give
wrong numbers without a word: a terminal pointing at the root, a child whose parent
is another node, a legal mask that disagrees with the children, a terminal path
that is not the path to that terminal.

NumPy on the host, vectorised over nodes (loops run over depths, not histories).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from jaxsolve.errors import GameError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree.sizes import NUMBER_FIELDS, SAVED_FIELDS

# Arrays that describe the game's structure, as opposed to its numbers
# (`utilities`, `chance_probs`), which a sweep changes and `check_structure` ignores.
STRUCTURE_FIELDS = tuple(f for f in SAVED_FIELDS if f not in NUMBER_FIELDS)


def left_justify(values: np.ndarray, keep: np.ndarray, pad: int) -> np.ndarray:
    """Moves the kept entries of each row to the front, in order, padding with `pad`.

    Args:
      values: [R, K] the entries.
      keep: [R, K] bool, which entries to keep.
      pad: the padding value.

    Returns:
      [R, max(kept per row, 1)] int32.
    """
    count = np.zeros(keep.shape[0], np.int64)
    out = np.full(keep.shape, pad, np.int32)
    for j in range(keep.shape[1]):  # column by column: rows are many, columns few
        rows = np.nonzero(keep[:, j])[0]
        out[rows, count[rows]] = values[rows, j]
        count[rows] += 1
    return out[:, :max(int(count.max(initial=0)), 1)]


def own_ancestors(infoset_parent: np.ndarray, num_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """Each infoset's earlier own sequences, following the sequence-form parent chain.

    Args:
      infoset_parent: [I] each infoset's own parent sequence (row * A + action, or
        the empty sequence I * A).
      num_actions: A.

    Returns:
      (depth [I] int32, ancestors [I, D] int32): the number of earlier own
      sequences, and the sequences, nearest first, padded with the empty sequence.

    Raises:
      GameError: the chain cycles.
    """
    I, A = len(infoset_parent), num_actions
    empty = I * A
    parent = infoset_parent.astype(np.int64)
    depth = np.zeros(I, np.int32)
    chain = [parent]
    cur = parent
    while True:
        has = cur != empty
        if not has.any():
            break
        depth += has
        cur = np.where(has, parent[np.minimum(cur // A, I - 1)], empty)
        chain.append(cur)
        if len(chain) > I + 1:
            raise GameError("the sequence-form parents form a cycle: information "
                            "states are not consistent with the histories")
    D = max(int(depth.max(initial=0)), 1)
    ancestors = np.stack(chain[:D], axis=1)
    ancestors = np.where(np.arange(D)[None, :] < depth[:, None], ancestors, empty)
    return depth, ancestors.astype(np.int32)


def terminal_paths(player, index, parent, parent_action, terminal_node, offsets, P, A, AC,
                   I, C):
    """Per terminal, the own sequences and chance outcomes on the way, root to leaf.

    Walks up from each terminal; the paths are left-justified and padded with the empty
    sequence I * A or the chance padding C * AC.

    Args:
      player: [N] the player to move at each history.
      index: [N] each history's infoset id, chance row or utility row.
      parent: [N] the parent of each history.
      parent_action: [N] the action from the parent.
      terminal_node: [Z] the history of each terminal.
      offsets: the level offsets (histories of depth d are [offsets[d], offsets[d+1])).
      P: the number of players.
      A: the number of actions.
      AC: the number of chance outcomes.
      I: the number of infosets.
      C: the number of chance nodes.

    Returns:
      (each player's own sequences [P, Z, L], the last of them [P, Z], the chance
      outcomes [Z, Lc]).
    """
    depth_of = np.zeros(len(player), np.int64)
    for d in range(len(offsets) - 1):
        depth_of[offsets[d]:offsets[d + 1]] = d
    Z = len(terminal_node)
    L = max(len(offsets) - 2, 1)
    anc_player = np.full((Z, L), TERMINAL, np.int64)
    anc_flat = np.zeros((Z, L), np.int64)
    cur = terminal_node.astype(np.int64)
    while True:
        live = parent[cur] >= 0
        if not live.any():
            break
        par = np.where(live, parent[cur], 0)
        d = depth_of[par]
        rows = np.nonzero(live)[0]
        anc_player[rows, d[rows]] = player[par[rows]]
        width = np.where(player[par[rows]] == CHANCE, AC, A)
        anc_flat[rows, d[rows]] = index[par[rows]] * width + parent_action[cur[rows]]
        cur = np.where(live, par, cur)
    empty = I * A
    seqs = [left_justify(anc_flat, anc_player == p, empty) for p in range(P)]
    width = max(s.shape[1] for s in seqs)
    seqs = np.stack([np.pad(s, ((0, 0), (0, width - s.shape[1])), constant_values=empty)
                     for s in seqs])
    counts = np.stack([(anc_player == p).sum(axis=1) for p in range(P)])  # [P, Z]
    last = np.where(counts > 0,
                    np.take_along_axis(seqs, np.maximum(counts - 1, 0)[..., None], axis=2)[..., 0],
                    empty).astype(np.int32)
    chance_path = left_justify(anc_flat, anc_player == CHANCE, C * AC)
    return seqs.astype(np.int32), last, chance_path


def check_structure(arrays: dict[str, np.ndarray], sizes, shapes: dict[str, tuple],
                    infosets: Sequence[str], where: str) -> None:
    """Checks that the arrays describe one game.

    The history arrays must describe one tree in the breadth-first order of
    `sizes.level_offsets`, and the sequence-form arrays be the ones the histories give.
    Expects arrays whose ranges are already checked (`GameTree.load` runs this last).
    In a batch each distinct structure is checked (one, when only the numbers are
    batched, as in a sweep).

    Args:
      arrays: the tree's arrays by name, NumPy.
      sizes: the tree's `TreeSizes`.
      shapes: each array's unbatched shape (`jaxsolve.tree.sizes.array_shapes`).
      infosets: [I] the infoset names, for messages.
      where: what messages name first: a function's name or a file's path.

    Raises:
      GameError: naming `where`, the array and the entry.
    """
    batch = {f: arrays[f].ndim - len(shapes[f]) for f in STRUCTURE_FIELDS}
    if not any(batch.values()):
        _check_one(arrays, sizes, infosets, where)
        return
    lead = np.broadcast_shapes(*(arrays[f].shape[:k] for f, k in batch.items()))
    for at in np.ndindex(*lead):
        one = {f: np.broadcast_to(arrays[f], lead + shapes[f])[at] for f in STRUCTURE_FIELDS}
        _check_one(one, sizes, infosets, f"{where}: batch element {list(at)}")


def _fail(where: str, problem: str) -> None:
    raise GameError(f"{where}: {problem}")


def _check_one(a: dict[str, np.ndarray], s, infosets: Sequence[str], where: str) -> None:
    player, index = a["node_player"], a["node_index"].astype(np.int64)
    parent, action = a["parent"].astype(np.int64), a["parent_action"].astype(np.int64)
    children = a["children"]
    _check_links(parent, action, children, s, where)
    _check_kinds(player, index, children, a, s, infosets, where)
    last, counts = _node_paths(player, index, parent, action, s)
    _check_infosets(player, index, last, a, s, infosets, where)
    _check_terminal_paths(player, index, parent, action, last, counts, a, s, where)


def _check_links(parent, action, children, s, where) -> None:
    """One tree: node 0 the only root, every child entry and parent link the same
    edge both ways, parents one level up."""
    N = s.num_nodes
    offsets = np.asarray(s.level_offsets, np.int64)
    if N and (offsets[1] != 1 or parent[0] != -1 or action[0] != -1):
        _fail(where, "node 0 must be the root, alone on level 0, with parent and "
                     f"parent_action -1; got level_offsets starting {list(offsets[:2])}, "
                     f"parent {parent[0]}, parent_action {action[0]}")
    orphan = np.nonzero((parent[1:] < 0) | (action[1:] < 0))[0]
    if orphan.size:
        m = int(orphan[0]) + 1
        _fail(where, f"node {m} has parent {parent[m]} and parent_action {action[m]}, but "
                     "only the root (node 0) has none")
    level_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    nodes = np.arange(1, N)
    up = level_of[parent[1:]] != level_of[1:] - 1
    if up.any():
        m = int(nodes[up][0])
        _fail(where, f"node {m} is on level {level_of[m]} of sizes.level_offsets but its "
                     f"parent {parent[m]} is on level {level_of[parent[m]]}: nodes must be "
                     "breadth-first, each level the children of the one before")
    back = children[parent[1:], action[1:]] != nodes
    if back.any():
        m = int(nodes[back][0])
        _fail(where, f"node {m} has parent {parent[m]} by action {action[m]}, but "
                     f"children[{parent[m]}, {action[m]}] is {children[parent[m], action[m]]}")
    n, k = np.nonzero(children >= 0)
    c = children[n, k]
    wrong = (parent[c] != n) | (action[c] != k)
    if wrong.any():
        i = int(np.argmax(wrong))
        _fail(where, f"children[{n[i]}, {k[i]}] is {c[i]}, but node {c[i]}'s parent is "
                     f"{parent[c[i]]} by action {action[c[i]]}")


def _check_kinds(player, index, children, a, s, infosets, where) -> None:
    """Each kind of node has the children its kind allows, and each infoset, chance
    row and utility row belongs to nodes of its kind."""
    A, Ac = s.num_actions, s.num_chance_outcomes
    has_child = children >= 0
    terminal, chance, decision = player == TERMINAL, player == CHANCE, player >= 0
    slots = np.arange(children.shape[1])[None, :]
    for kind, mask, width in (("terminal", terminal, 0), ("chance", chance, Ac),
                              ("decision", decision, A)):
        extra = mask[:, None] & has_child & (slots >= width)
        if extra.any():
            n, k = np.argwhere(extra)[0]
            _fail(where, f"{kind} node {n} has a child at slot {k} (children[{n}, {k}] = "
                         f"{children[n, k]}); a {kind} node has "
                         + ("none" if not width else f"slots 0..{width - 1} only"))
    dec = np.nonzero(decision)[0]
    owner = a["infoset_player"][index[dec]]
    if (owner != player[dec]).any():
        n = int(dec[np.argmax(owner != player[dec])])
        _fail(where, f"node {n} is player {player[n]}'s, but its infoset {index[n]} "
                     f"({infosets[index[n]]!r}) is player {a['infoset_player'][index[n]]}'s")
    legal = a["legal"]
    mismatch = has_child[dec, :A] != legal[index[dec]]
    if mismatch.any():
        r, k = np.argwhere(mismatch)[0]
        n = int(dec[r])
        _fail(where, f"node {n} has {'a' if has_child[n, k] else 'no'} child for action {k}, "
                     f"but legal[{index[n]}, {k}] ({infosets[index[n]]!r}) is {legal[index[n], k]}")
    for kind, mask, count, what in (
            ("decision", decision, s.num_infosets, "infoset"),
            ("chance", chance, s.num_chance, "row of chance_probs"),
            ("terminal", terminal, s.num_terminals, "row of utilities")):
        uses = np.bincount(index[mask], minlength=count)
        unused = np.nonzero(uses == 0)[0]
        if unused.size:
            _fail(where, f"{what} {unused[0]} belongs to no {kind} node (node_index)")
        if kind != "decision" and (uses > 1).any():
            r = int(np.argmax(uses > 1))
            _fail(where, f"{what} {r} belongs to {uses[r]} {kind} nodes; each has its own")
    t = a["terminal_node"].astype(np.int64)
    wrong = (player[t] != TERMINAL) | (index[t] != np.arange(len(t)))
    if wrong.any():
        z = int(np.argmax(wrong))
        _fail(where, f"terminal_node[{z}] is node {t[z]}, which is "
                     + (f"terminal {index[t[z]]}" if player[t[z]] == TERMINAL else
                        "not a terminal") + f"; expected the node whose node_index is {z}")


def _node_paths(player, index, parent, action, s) -> tuple[np.ndarray, np.ndarray]:
    """(last [P, N]: each player's last own sequence on the way to each node, the
    empty sequence before any; counts [P + 1, N] int32: how many own decisions of each
    player, and in the last row chance events, lie on the way), one level at a time."""
    P, A, empty = s.num_players, s.num_actions, s.empty_sequence
    last = np.full((P, s.num_nodes), empty, np.int64)
    counts = np.zeros((P + 1, s.num_nodes), np.int32)
    offsets = s.level_offsets
    for level in range(1, len(offsets) - 1):
        m = np.arange(offsets[level], offsets[level + 1])
        par = parent[m]
        last[:, m] = last[:, par]
        counts[:, m] = counts[:, par]
        q = player[par]
        own = q >= 0
        last[q[own], m[own]] = index[par[own]] * A + action[m[own]]
        q = np.where(own, q, P)  # chance events count in the last row
        counts[q, m] += 1
    return last, counts


def _check_infosets(player, index, node_last, a, s, infosets, where) -> None:
    """infoset_parent is the last own sequence at the infoset's histories (at all of
    them with perfect recall, at one without), and ancestors and depth follow it."""
    dec = np.nonzero(player >= 0)[0]
    follows = node_last[player[dec], dec]
    stored = a["infoset_parent"].astype(np.int64)
    agree = follows == stored[index[dec]]
    recall = np.asarray(s.perfect_recall, bool)[player[dec]]
    bad = recall & ~agree
    if bad.any():
        n = int(dec[np.argmax(bad)])
        i = index[n]
        _fail(where, f"infoset {i} ({infosets[i]!r}) of player {player[n]}, who has perfect "
                     f"recall (sizes.perfect_recall), has infoset_parent {stored[i]}, but its "
                     f"node {n} follows own sequence {follows[np.argmax(bad)]}")
    seen = np.bincount(index[dec][agree], minlength=s.num_infosets)
    if (seen == 0).any():
        i = int(np.argmax(seen == 0))
        _fail(where, f"infoset {i} ({infosets[i]!r}) has infoset_parent {stored[i]}, but none "
                     "of its nodes follows that own sequence")
    depth, ancestors = own_ancestors(a["infoset_parent"], s.num_actions)
    D = a["infoset_ancestors"].shape[1]
    if ancestors.shape[1] > D and (depth > D).any():
        i = int(np.argmax(depth > D))
        _fail(where, f"infoset {i} ({infosets[i]!r}) has {depth[i]} earlier own sequences, "
                     f"more than sizes.max_infoset_depth={D}")
    ancestors = _pad_columns(ancestors[:, :D], D, s.empty_sequence)
    for field, want in (("infoset_depth", depth), ("infoset_ancestors", ancestors)):
        _compare(a[field], want, field, "the infoset_parent chain gives", where)


def _check_terminal_paths(player, index, parent, action, last, counts, a, s, where) -> None:
    """Each terminal's own sequences and chance outcomes are the ones on the path from
    the root to its history, in order, then padding; its last sequences the last of
    them. Walks up from all terminals at once, comparing in place (no [Z, depth]
    temporaries: builder trees have tens of millions of terminals)."""
    P, A, Ac = s.num_players, s.num_actions, s.num_chance_outcomes
    t = a["terminal_node"].astype(np.int64)
    seqs, chance = a["terminal_sequences"], a["terminal_chance"]
    _compare(a["terminal_last"], last[:, t], "terminal_last", "the path from the root gives",
             where)
    # (array, the part for one player or chance, its padding, its row of counts,
    # outcomes per row, the index before [z, k] in messages)
    paths = [("terminal_sequences", seqs[p], s.empty_sequence, p, A, [p]) for p in range(P)]
    paths.append(("terminal_chance", chance, s.num_chance * Ac, P, Ac, []))
    for field, stored, pad, row, width, pre in paths:  # the entries after each path: padding
        length = counts[row, t]
        room = stored.shape[1]
        if (length > room).any():
            z = int(np.argmax(length > room))
            _fail(where, f"array {field!r} has room for {room} entries per path, "
                         f"but the path to terminal {z} (node {t[z]}) has {length[z]}")
        for k in range(room):
            bad = (length <= k) & (stored[:, k] != pad)
            if bad.any():
                z = int(np.argmax(bad))
                _fail(where, f"array {field!r} holds {stored[z, k]} at {pre + [z, k]}, but "
                             f"the path to terminal {z} (node {t[z]}) has {length[z]} entries: the "
                             f"rest must be the padding {pad}")
    live, cur = np.arange(len(t)), t.copy()
    while live.size:
        node = cur[live]
        par = parent[node]
        up = par >= 0
        live, node, par = live[up], node[up], par[up]
        q = player[par]
        for field, stored, _, row, width, pre in paths:
            sel = q == (row if row < P else CHANCE)
            z, at = live[sel], counts[row, par[sel]]
            want = index[par[sel]] * width + action[node[sel]]
            bad = stored[z, at] != want
            if bad.any():
                i = int(np.argmax(bad))
                _fail(where, f"array {field!r} holds {stored[z[i], at[i]]} at "
                             f"{pre + [int(z[i]), int(at[i])]}, "
                             f"but the path from the root to terminal {z[i]} (node {t[z[i]]}) "
                             f"gives {want[i]}")
        cur[live] = par


def _pad_columns(x: np.ndarray, width: int, pad: int) -> np.ndarray:
    extra = width - x.shape[-1]
    return np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)], constant_values=pad) if extra else x


def _compare(stored: np.ndarray, want: np.ndarray, field: str, source: str, where: str) -> None:
    wrong = stored != want
    if wrong.any():
        at = tuple(int(i) for i in np.argwhere(wrong)[0])
        short = stored.ndim > 1 and stored.shape[-1] <= 16  # a path or an ancestor list
        row = f" (row {list(at[:-1])} should be {want[at[:-1]].tolist()})" if short else ""
        _fail(where, f"array {field!r} holds {stored[at]} at {list(at)}, but {source} "
                     f"{want[at]}{row}")
