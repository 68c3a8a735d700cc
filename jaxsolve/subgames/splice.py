"""Trees assembled from new nodes and copies of another tree's subtrees.

A subgame, a re-solving gadget and a union of gadgets are all made the same way: a
few new nodes (a chance node that deals, a decision that enters or stops, a terminal
worth a fixed value) with copies of a source tree's subtrees hung below them. A
`Splice` collects such nodes in any order, each with its parent and the action
leading to it, and `build` numbers them breadth first (depth by depth, within a
depth by parent, then action, as the compiler numbers a walk), gives every infoset,
chance node and terminal its row, and derives the sequence form with
`tree_from_parts`. A copied infoset keeps its source's legal actions, names and
player; a copied terminal its source's utilities plus an optional shift per copy.

NumPy on the host, vectorised over nodes (loops run over depths).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxsolve.assemble import TreeParts, tree_from_parts
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import GameTree

_COPY, _NEW = 0, 1


@dataclasses.dataclass(frozen=True, eq=False)
class Spliced:
    """A built tree and where its parts came from.

    Attributes:
      tree: the `GameTree`.
      nodes: [N'] int32, each node's source history, -1 for a new node.
      infosets: [I'] int32, each infoset's source infoset, -1 for a new one.
      new_infosets: [M] int32, the tree's id of each infoset declared with
        `Splice.infosets`, in the order declared (-1 if no node uses it).
    """

    tree: GameTree
    nodes: np.ndarray
    infosets: np.ndarray
    new_infosets: np.ndarray


class Splice:
    """New nodes and copied subtrees, collected, then built into one tree.

    Node ids returned by the methods are provisional (the order of adding); `build`
    renumbers. The root is the one node added with parent -1.

    Args:
      source: the tree whose subtrees are copied (with its histories, no batch).
      num_actions: the new tree's action width A' (at least the source's).
      num_chance_outcomes: the new tree's chance width Ac' (at least the source's).
    """

    def __init__(self, source: GameTree, num_actions: int, num_chance_outcomes: int):
        self.source = source
        self.A = max(int(num_actions), source.sizes.num_actions)
        self.Ac = max(int(num_chance_outcomes), source.sizes.num_chance_outcomes, 1)
        self._player = np.asarray(source.node_player)
        self._index = np.asarray(source.node_index)
        self._children = np.asarray(source.children)
        self._offsets = np.asarray(source.sizes.level_offsets)
        self._chunks: list[dict[str, np.ndarray]] = []
        self._count = 0
        self._infosets: list[tuple[int, np.ndarray, str, tuple[str, ...]]] = []
        self._chance: list[np.ndarray] = []
        self._terminals: list[np.ndarray] = []
        self._shifts: list[np.ndarray] = []

    # -- new nodes ---------------------------------------------------------------------

    def infosets(self, player: int, legal: np.ndarray, names, action_names) -> np.ndarray:
        """Declares new infosets of one player; their keys for `decisions`.

        Args:
          player: their player.
          legal: [M, A'] bool.
          names: M infoset names.
          action_names: M rows of A' labels ('' where illegal).

        Returns:
          [M] int64 keys.
        """
        first = len(self._infosets)
        for row, name, labels in zip(np.asarray(legal, bool), names, action_names):
            labels = tuple(labels) + ("",) * (self.A - len(labels))
            self._infosets.append((int(player), row, str(name), labels))
        return np.arange(first, len(self._infosets))

    def chance(self, parent, action, probs: np.ndarray) -> np.ndarray:
        """New chance nodes dealing `probs` ([n, <= Ac'] rows); their ids."""
        probs = np.atleast_2d(np.asarray(probs, np.float64))
        rows = np.zeros((len(probs), self.Ac))
        rows[:, :probs.shape[1]] = probs
        first = sum(len(c) for c in self._chance)
        self._chance.append(rows)
        return self._new(parent, action, CHANCE, first + np.arange(len(rows)))

    def decisions(self, parent, action, player: int, infosets) -> np.ndarray:
        """New decision nodes of `player` in the declared infosets `infosets` [n]."""
        return self._new(parent, action, int(player), np.asarray(infosets, np.int64))

    def terminals(self, parent, action, utilities: np.ndarray) -> np.ndarray:
        """New terminals with the returns `utilities` [n, P]; their ids."""
        utilities = np.atleast_2d(np.asarray(utilities, np.float64))
        first = sum(len(u) for u in self._terminals)
        self._terminals.append(utilities)
        return self._new(parent, action, TERMINAL, first + np.arange(len(utilities)))

    def copies(self, parent, action, roots, shift: np.ndarray | None = None) -> np.ndarray:
        """Copies of the source's subtrees below `roots` [n]; the ids of the copied roots.

        Args:
          parent, action: [n] where each copy hangs (provisional ids, actions).
          roots: [n] source histories.
          shift: [n, P] added to the utilities of every terminal of each copy, or None.
        """
        roots = np.asarray(roots, np.int64)
        shift_row = np.full(len(roots), -1, np.int64)
        if shift is not None:
            first = sum(len(s) for s in self._shifts)
            self._shifts.append(np.atleast_2d(np.asarray(shift, np.float64)))
            shift_row = first + np.arange(len(roots))
        ids = self._add(parent, action, _COPY, roots, shift_row)
        frontier, frontier_ids, frontier_shift = roots, ids, shift_row
        while frontier.size:
            kids = self._children[frontier]
            at, act = np.nonzero(kids >= 0)
            frontier = kids[at, act].astype(np.int64)
            frontier_shift = frontier_shift[at]
            frontier_ids = self._add(frontier_ids[at], act, _COPY, frontier, frontier_shift)
        return ids

    def _new(self, parent, action, player: int, row: np.ndarray) -> np.ndarray:
        return self._add(parent, action, _NEW, row, np.full(len(row), player, np.int64))

    def _add(self, parent, action, kind: int, ref: np.ndarray, extra: np.ndarray) -> np.ndarray:
        n = len(ref)
        parent = np.broadcast_to(np.asarray(parent, np.int64), (n,))
        action = np.broadcast_to(np.asarray(action, np.int64), (n,))
        ids = self._count + np.arange(n)
        self._chunks.append(dict(parent=parent, action=action, kind=np.full(n, kind),
                                 ref=ref, extra=extra))
        self._count += n
        return ids

    # -- building ----------------------------------------------------------------------

    def build(self, name: str, utility_sum: float | None) -> Spliced:
        """The tree of every node added, numbered breadth first.

        Args:
          name: the new game's name.
          utility_sum: its declared constant sum (None: read off the utilities).
        """
        cat = {k: np.concatenate([c[k] for c in self._chunks]) for k in self._chunks[0]}
        parent, action, kind, ref, extra = (cat[k] for k in
                                            ("parent", "action", "kind", "ref", "extra"))
        n = self._count
        copied = kind == _COPY
        player = np.where(copied, self._player[np.where(copied, ref, 0)], extra)
        order, new_id, levels = _breadth_first(parent, action)
        parent = np.where(parent[order] >= 0, new_id[np.maximum(parent[order], 0)], -1)
        action, kind, ref, extra = action[order], kind[order], ref[order], extra[order]
        action[0] = -1  # the root's
        player, copied = player[order], copied[order]
        src_index = np.where(copied, self._index[np.where(copied, ref, 0)], -1)

        children = np.full((n, max(self.A, self.Ac)), -1, np.int32)
        children[parent[1:], action[1:]] = np.arange(1, n)

        # Infosets: source ones keyed by their id, new ones after them; numbered by
        # their first node.
        I_src = self.source.sizes.num_infosets
        decides = np.flatnonzero(player >= 0)
        key = np.where(copied[decides], src_index[decides], I_src + ref[decides])
        keys, first, infoset_of = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty(len(keys), np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(keys))
        keys = keys[np.argsort(first, kind="stable")]
        index = np.zeros(n, np.int64)
        index[decides] = rank[infoset_of]
        from_source = keys < I_src
        legal = np.zeros((len(keys), self.A), bool)
        src_legal = np.asarray(self.source.legal)
        legal[from_source, :src_legal.shape[1]] = src_legal[keys[from_source]]
        infoset_player = np.zeros(len(keys), np.int32)
        infoset_player[from_source] = np.asarray(self.source.infoset_player)[keys[from_source]]
        names, labels = [], []
        src_names = self.source.names
        for j, k in enumerate(keys):
            if k < I_src:
                names.append(src_names.infosets[k])
                labels.append(tuple(src_names.actions[k]) + ("",) * (self.A - len(src_names.actions[k])))
            else:
                p, row, infoset_name, row_labels = self._infosets[k - I_src]
                legal[j], infoset_player[j] = row, p
                names.append(infoset_name)
                labels.append(row_labels)
        new_infosets = np.full(len(self._infosets), -1, np.int64)
        new_infosets[keys[~from_source] - I_src] = np.flatnonzero(~from_source)

        dealt = np.flatnonzero(player == CHANCE)
        index[dealt] = np.arange(len(dealt))
        probs = np.zeros((len(dealt), self.Ac))
        src_probs = np.asarray(self.source.chance_probs, np.float64)
        mine = copied[dealt]
        probs[mine, :src_probs.shape[1]] = src_probs[src_index[dealt[mine]]]
        if self._chance:
            probs[~mine] = np.concatenate(self._chance)[ref[dealt[~mine]]]

        ends = np.flatnonzero(player == TERMINAL)
        index[ends] = np.arange(len(ends))
        P = self.source.sizes.num_players
        utilities = np.zeros((len(ends), P))
        src_utilities = np.asarray(self.source.utilities, np.float64)
        mine = copied[ends]
        utilities[mine] = src_utilities[src_index[ends[mine]]]
        shifted = mine & (extra[ends] >= 0)
        if shifted.any():
            utilities[shifted] += np.concatenate(self._shifts)[extra[ends[shifted]]]
        if self._terminals:
            utilities[~mine] = np.concatenate(self._terminals)[ref[ends[~mine]]]

        last = last_moves(player, index, parent, action, levels, P, self.A, self.Ac)
        first_node = decides[np.unique(index[decides], return_index=True)[1]]
        parts = TreeParts(
            name=name, num_actions=self.A, num_chance_outcomes=self.Ac,
            level_offsets=tuple(levels), node_player=player.astype(np.int32),
            node_index=index.astype(np.int32), parent=parent.astype(np.int32),
            parent_action=action.astype(np.int32), children=children,
            infoset_player=infoset_player,
            infoset_parent=last[infoset_player, first_node], legal=legal,
            chance_probs=probs, chance_prev=last[P, dealt], utilities=utilities,
            terminal_node=ends.astype(np.int32), terminal_last=last[:P, ends].astype(np.int32),
            terminal_chance_last=last[P, ends],
            perfect_recall=self.source.sizes.perfect_recall, utility_sum=utility_sum,
            infoset_names=names, action_names=labels)
        nodes = np.where(copied, ref, -1).astype(np.int32)
        return Spliced(tree=tree_from_parts(parts), nodes=nodes,
                       infosets=np.where(from_source, keys, -1).astype(np.int32),
                       new_infosets=new_infosets.astype(np.int32))


def _breadth_first(parent: np.ndarray, action: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(order [N]: provisional ids in breadth-first order, new_id [N]: each provisional
    id's new id, level offsets): depth by depth, within a depth by the parent's new
    id, then the action."""
    n = len(parent)
    roots = np.flatnonzero(parent < 0)
    assert roots.size == 1, "a splice has one root"
    new_id = np.full(n, -1, np.int64)
    new_id[roots] = 0
    order, levels = [roots], [0, 1]
    frontier = roots
    while True:
        in_frontier = np.zeros(n + 1, bool)  # entry n stands for the root's parent, -1
        in_frontier[frontier] = True
        kids = np.flatnonzero(in_frontier[parent])
        if not kids.size:
            break
        kids = kids[np.lexsort((action[kids], new_id[parent[kids]]))]
        new_id[kids] = levels[-1] + np.arange(kids.size)
        order.append(kids)
        levels.append(levels[-1] + kids.size)
        frontier = kids
    return np.concatenate(order), new_id, levels


def last_moves(player: np.ndarray, index: np.ndarray, parent: np.ndarray,
               action: np.ndarray, offsets: list[int], P: int, A: int, Ac: int
               ) -> np.ndarray:
    """[P + 1, N] int64: each player's last own sequence (`infoset * A + action`) on the
    way to each history, and in the last row the last chance outcome (`row * Ac +
    outcome`); -1 where there is none. One level at a time."""
    last = np.full((P + 1, len(player)), -1, np.int64)
    for d in range(1, len(offsets) - 1):
        m = np.arange(offsets[d], offsets[d + 1])
        par = parent[m]
        last[:, m] = last[:, par]
        mover = player[par]
        row = np.where(mover == CHANCE, P, mover)
        width = np.where(mover == CHANCE, Ac, A)
        last[row, m] = index[par] * width + action[m]
    return last
