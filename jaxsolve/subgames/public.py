"""Public states: the finest partition of each depth's histories into closed subgames.

At each depth d, `public_states` partitions the histories of depth d into the finest
sets whose subtrees are *closed*: no information set of any player has histories both
inside and outside the union of a set's subtrees. A set's subtrees can then be cut
out and solved as a game of their own (`jaxsolve.subgames.subgame`), and whatever
is played there changes no infoset outside it.

The partition is a union-find over the histories of depth d: the ancestors at depth d
of all histories of one infoset, among those of its histories at depth >= d, are one
public state. It is computed from the deepest level up, since two histories of depth
d+1 in one public state have their parents in one public state of depth d: at depth
d the sets united are the parents of each public state of depth d+1, the histories
of each infoset at depth d, and the ancestors of the deeper histories of the infosets
that also have histories at depth <= d (infosets whose histories lie at different
depths, as in games whose information states do not count the moves). Depth is a
history's distance from the root, chance outcomes counting, as in the tree's
`sizes.level_offsets`. Terminals and chance nodes belong to the public state of their
depth like decisions; a terminal that no infoset links to another history is a public
state of its own.

An infoset with histories both above depth d and at or below it links the ancestors
at depth d of its lower histories like any other, but its upper histories have no
ancestor at depth d: no set of depth-d histories is closed with respect to it, so the
public states holding its lower histories are marked open (`PublicStates.closed`
False), and `subgame` refuses them. Where every infoset's histories lie at one depth
(every game whose information states count the moves, as OpenSpiel's and the
builders' do) every public state is closed.

NumPy on the host: this is a one-time analysis of a tree, vectorised over histories
(loops run over depths and over the union-find's rounds).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from jaxsolve.tree import GameTree
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.validate import integer_rule, require


class PublicState(NamedTuple):
    """One public state: a closed set of histories of one depth (when `closed`).

    Attributes:
      index: its id in the `PublicStates` it came from.
      depth: the depth of its histories.
      histories: [K] int32, its histories (node ids of the tree), ascending.
      infosets: P arrays, [I_p] int32 each: the infosets of player p among its
        histories, ascending.
      closed: whether the union of its histories' subtrees holds every history of
        each infoset it meets (False only where some infoset also has a history above
        `depth`).
    """

    index: int
    depth: int
    histories: np.ndarray
    infosets: tuple[np.ndarray, ...]
    closed: bool


@dataclasses.dataclass(frozen=True, eq=False)
class PublicStates:
    """The public states of every depth of one tree (host-side NumPy arrays).

    Shapes use N histories, S public states over all depths, P players, D + 1 depths
    (0 to D) and R (public state, infoset) pairs, one per infoset at the root of each
    public state. Public states are numbered depth by depth, and within a depth in
    the order of their first history: those of depth d are the ids
    `state_offsets[d]` to `state_offsets[d + 1] - 1`. `states[s]` is a `PublicState`.

    Attributes:
      level_offsets: the tree's `sizes.level_offsets`: the histories of depth d are
        the node ids `level_offsets[d]` to `level_offsets[d + 1] - 1`.
      state_offsets: [D + 2] int64, where each depth's public states begin, then S.
      node_depth: [N] int32, each history's depth.
      node_state: [N] int32, each history's public state.
      state_depth: [S] int32, each public state's depth.
      history_offsets: [S + 1] int64: public state s holds the histories
        `histories[history_offsets[s]:history_offsets[s + 1]]`.
      histories: [N] int32, every history once, grouped by public state, ascending
        within one.
      infoset_offsets: [S, P + 1] int64: the infosets of player p at the root of
        public state s are `root_infosets[infoset_offsets[s, p]:infoset_offsets[s, p + 1]]`.
      root_infosets: [R] int32, grouped by public state, then player, ascending
        within a group.
      closed: [S] bool, whether each public state's subtrees are closed (see the
        module's docstring).
    """

    level_offsets: tuple[int, ...]
    state_offsets: np.ndarray
    node_depth: np.ndarray
    node_state: np.ndarray
    state_depth: np.ndarray
    history_offsets: np.ndarray
    histories: np.ndarray
    infoset_offsets: np.ndarray
    root_infosets: np.ndarray
    closed: np.ndarray

    def __len__(self) -> int:
        return len(self.state_depth)

    def __repr__(self) -> str:
        return (f"PublicStates({len(self)} public states over {len(self.counts)} depths, "
                f"{int((~self.closed).sum())} open)")

    @property
    def counts(self) -> np.ndarray:
        """[D + 1] int64, the number of public states at each depth."""
        return np.diff(self.state_offsets)

    def at_depth(self, depth: int) -> np.ndarray:
        """The public state of each history of one depth, numbered within the depth.

        Args:
          depth: a depth of the tree, 0 to D.

        Returns:
          [N_d] int32: entry j is the public state of history `level_offsets[depth] + j`,
          as an id in [0, counts[depth]); add `state_offsets[depth]` for its id in
          `states`.

        Raises:
          ArgumentError: `depth` is out of range.
        """
        d = require("PublicStates.at_depth: depth", depth,
                    integer_rule(0, len(self.counts) - 1, note=f"{len(self.counts)} depths"))
        ids = self.node_state[self.level_offsets[d]:self.level_offsets[d + 1]]
        return (ids - self.state_offsets[d]).astype(np.int32)

    def __iter__(self):
        """The public states in order, depth by depth."""
        return (self[s] for s in range(len(self)))

    def __getitem__(self, index: int) -> PublicState:
        s = require("PublicStates[index]: index", index,
                    integer_rule(-len(self), len(self) - 1, note=f"{len(self)} public states"))
        s %= len(self)
        rows = self.infoset_offsets[s]
        return PublicState(
            index=s, depth=int(self.state_depth[s]),
            histories=self.histories[self.history_offsets[s]:self.history_offsets[s + 1]],
            infosets=tuple(self.root_infosets[rows[p]:rows[p + 1]]
                           for p in range(len(rows) - 1)),
            closed=bool(self.closed[s]))


def public_states(tree: GameTree) -> PublicStates:
    """The public states of every depth of `tree`.

    At each depth d, the histories of depth d are partitioned into the finest sets
    such that each set's subtrees are closed: no infoset of any player has histories
    both inside and outside the union of the set's subtrees. Equivalently, a
    union-find over the histories of depth d unites the ancestors at depth d of all
    histories of each infoset that lie at depth >= d. Depth is the distance from the
    root, chance outcomes counting. Terminals and chance nodes belong to the public
    state of their depth. A public state holding histories of an infoset that also
    has histories above its depth cannot be closed; it is marked open
    (`PublicStates.closed`). See `jaxsolve.subgames.public` for the construction.

    Args:
      tree: the game's tree, with its histories (not `without_histories`), no batch.

    Returns:
      The `PublicStates`.

    Raises:
      ArgumentError: `tree` lacks its histories or has a batch axis.
      ArgumentTypeError: `tree` is not a GameTree.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> states = jaxsolve.public_states(tree)
      >>> states.counts.tolist()
      [1, 1, 1, 4, 21, 12]
      >>> states[2].histories.size        # the six deals: the players' cards link them all
      6
    """
    tree_arguments.game_tree(tree, "public_states", histories=True)
    player = np.asarray(tree.node_player)
    index = np.asarray(tree.node_index)
    parent = np.asarray(tree.parent)
    offsets = tuple(tree.sizes.level_offsets)
    local, open_state = _partition(player, index, parent, offsets,
                                   tree.sizes.num_infosets)
    counts = np.array([len(c) for c in open_state], np.int64)
    state_offsets = np.concatenate([[0], np.cumsum(counts)])
    node_depth = np.repeat(np.arange(len(counts), dtype=np.int32), np.diff(offsets))
    node_state = (local + state_offsets[node_depth]).astype(np.int32)
    histories = np.argsort(node_state, kind="stable").astype(np.int32)
    history_offsets = np.concatenate([[0], np.cumsum(np.bincount(node_state,
                                                                 minlength=counts.sum()))])
    infoset_offsets, root_infosets = _root_infosets(
        node_state, player, index, np.asarray(tree.infoset_player), int(counts.sum()),
        tree.sizes.num_players)
    return PublicStates(
        level_offsets=offsets, state_offsets=state_offsets, node_depth=node_depth,
        node_state=node_state,
        state_depth=np.repeat(np.arange(len(counts), dtype=np.int32), counts),
        history_offsets=history_offsets, histories=histories,
        infoset_offsets=infoset_offsets, root_infosets=root_infosets,
        closed=~np.concatenate(open_state))


def _partition(player: np.ndarray, index: np.ndarray, parent: np.ndarray,
               offsets: tuple[int, ...], num_infosets: int
               ) -> tuple[np.ndarray, list[np.ndarray]]:
    """(local [N] int64: each history's public state, numbered within its depth by
    first history; open [D + 1] arrays of [S_d] bool: which public states of each
    depth are open), from the deepest depth up."""
    N, levels = len(player), len(offsets) - 1
    local = np.zeros(N, np.int64)
    open_state: list[np.ndarray] = [np.zeros(0, bool)] * levels
    decision = np.flatnonzero(player >= 0)
    infoset = index[decision]
    depth = np.searchsorted(np.asarray(offsets), decision, side="right") - 1
    top = np.full(num_infosets, levels, np.int64)
    bottom = np.full(num_infosets, -1, np.int64)
    np.minimum.at(top, infoset, depth)
    np.maximum.at(bottom, infoset, depth)
    # The histories of infosets spread over several depths, and their ancestors at
    # the depth being partitioned (moved up one level per depth).
    spread = top[infoset] < bottom[infoset]
    spread_infoset, spread_depth = infoset[spread], depth[spread]
    spread_up = decision[spread].astype(np.int64)
    for d in range(levels - 1, -1, -1):
        begin, end = offsets[d], offsets[d + 1]
        n = end - begin
        deeper = spread_depth > d
        spread_up[deeper] = parent[spread_up[deeper]]
        here = np.flatnonzero(player[begin:end] >= 0)
        linked = deeper & (top[spread_infoset] <= d)
        # Vertices: the n histories of depth d, the infosets met here (numbered
        # compactly), then the public states of depth d + 1 (whose parents are
        # united).
        met, infoset_vertex = np.unique(
            np.concatenate([index[begin + here], spread_infoset[linked]]), return_inverse=True)
        tails = [here, spread_up[linked] - begin]
        heads = [n + infoset_vertex]
        num_vertices = n + len(met)
        if d + 1 < levels:
            below = np.arange(offsets[d + 1], offsets[d + 2])
            tails.append(parent[below] - begin)
            heads.append(num_vertices + local[below])
            num_vertices += len(open_state[d + 1])
        root = _components(num_vertices, np.concatenate(tails), np.concatenate(heads))
        _, local[begin:end] = np.unique(root[:n], return_inverse=True)
        opened = np.zeros(int(local[begin:end].max(initial=-1)) + 1, bool)
        above = (spread_depth >= d) & (top[spread_infoset] < d)
        opened[local[spread_up[above]]] = True
        open_state[d] = opened
    return local, open_state


def _components(num_vertices: int, tails: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """[V] each vertex's connected component, named by its smallest vertex, of the
    graph with the edges tails[e] - heads[e].

    Union-find in rounds: each root that an edge still joins to another root is
    hooked under the smallest root across such edges, then every vertex's pointer is
    followed to its root (pointer jumping). Pointers only ever go to smaller
    vertices, so the roots stay each component's smallest vertex."""
    root = np.arange(num_vertices, dtype=np.int64)
    tails, heads = tails.astype(np.int64), heads.astype(np.int64)
    while tails.size:
        a, b = root[tails], root[heads]
        differ = a != b
        tails, heads, a, b = tails[differ], heads[differ], a[differ], b[differ]
        if not tails.size:
            break
        np.minimum.at(root, np.maximum(a, b), np.minimum(a, b))
        while True:
            jumped = root[root]
            if np.array_equal(jumped, root):
                break
            root = jumped
    return root


def _root_infosets(node_state: np.ndarray, player: np.ndarray, index: np.ndarray,
                   infoset_player: np.ndarray, num_states: int, num_players: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(offsets [S, P + 1] int64, infosets [R] int32): the distinct infosets of each
    public state's decision histories, grouped by public state, then player."""
    decision = np.flatnonzero(player >= 0)
    I = len(infoset_player)
    pairs = np.unique(node_state[decision].astype(np.int64) * I + index[decision])
    state, infoset = pairs // I, pairs % I
    group = state * num_players + infoset_player[infoset]
    order = np.lexsort((infoset, group))
    counts = np.bincount(group, minlength=num_states * num_players).reshape(
        num_states, num_players)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    rows = np.concatenate([offsets[:-1].reshape(num_states, num_players),
                           offsets[num_players::num_players].reshape(num_states, 1)], axis=1)
    return rows, infoset[order].astype(np.int32)
