"""A public state's subtrees as a game of their own, and its policy put back.

`subgame(tree, public_state, blueprint)` builds a `GameTree` whose root is a chance
node dealing the public state's K histories, each with probability proportional to
its reach under the blueprint: chance's reach times every player's, normalised. Below
outcome k lies the subtree of the k-th history, its histories, infosets, chance nodes
and terminals numbered compactly in the full tree's order. It is an ordinary tree:
`run`, `exploitability`, sweeps and every other function take it unchanged. Solving
it re-solves the public state with the blueprint's ranges held fixed (unsafe
re-solving); the normalising constant and each root history's reaches are kept on the
`Subgame` for the gadgets that re-solve safely.

Because the public state is closed (`jaxsolve.subgames.public`), every infoset of the
subtrees lies entirely inside them, so a policy of the subgame is a policy of those
infosets of the full game: `write_back` puts it there, and `restrict_policy` reads a
full policy's rows for them.

NumPy on the host, vectorised over histories (loops run over depths).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxsolve.assemble import TreeParts, tree_from_parts
from jaxsolve.errors import ArgumentTypeError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.subgames.public import PublicState
from jaxsolve.tree import GameTree
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.validate import fail, kind_of


@dataclasses.dataclass(frozen=True, eq=False)
class Subgame:
    """A public state's subtrees as a tree, and how it maps into the full game.

    Shapes use K root histories (the public state's), N' histories, I' infosets and P
    players of the subgame, and A actions (the full game's: policies of both trees
    have the same columns).

    Attributes:
      tree: the subgame's `GameTree`. Its root is a chance node (row 0 of
        `chance_probs`) whose outcome k leads to `state.histories[k]`, with probability
        `chance_reach[k] * prod(reach[k]) / normalizer`.
      source: the full game's tree.
      state: the `PublicState` the subgame was cut at.
      nodes: [N'] int32, each subgame history's history in `source`, -1 at the new root.
      infosets: [I'] int32, each subgame infoset's id in `source`: row i of a subgame
        policy is row `infosets[i]` of a full one.
      chance_reach: [K] float64, chance's probability of reaching each root history.
      reach: [K, P] float64, each player's own probability, under the blueprint, of
        reaching each root history.
      normalizer: chance's and every player's reach summed over the root histories:
        the probability that the blueprint reaches the public state. A value of the
        subgame times it is the full game's sum over the public state's terminals.
    """

    tree: GameTree
    source: GameTree
    state: PublicState
    nodes: np.ndarray
    infosets: np.ndarray
    chance_reach: np.ndarray
    reach: np.ndarray
    normalizer: float

    def __repr__(self) -> str:
        return (f"Subgame(public state {self.state.index} at depth {self.state.depth}: "
                f"{len(self.state.histories)} root histories, reached with probability "
                f"{self.normalizer:.4g}; {self.tree!r})")


def subgame(tree: GameTree, public_state: PublicState, blueprint: jax.Array) -> Subgame:
    """The subtrees of a public state as a game: a chance node deals its histories by
    their reach under `blueprint`.

    Outcome k of the new root leads to the public state's k-th history h_k, with
    probability `c(h_k) prod_p pi_p(h_k) / normalizer`: chance's reach of h_k times
    each player's reach under the blueprint, normalised over the public state. A
    history the blueprint never reaches keeps its subtree, with probability 0, so the
    subgames of one public state under different blueprints share their structure
    (and a sweep over them one compilation).

    Args:
      tree: the full game's tree, with its histories, no batch.
      public_state: a closed `PublicState` of `tree` (`jaxsolve.public_states(tree)[s]`).
      blueprint: `[I, A]` policy of the full game, every player's rows: it sets the
        probabilities of the root histories (only its rows above the public state
        matter).

    Returns:
      The `Subgame`: its `tree` and the maps back to the full game.

    Raises:
      ArgumentTypeError: `tree` is not a GameTree, or `public_state` not a PublicState.
      ArgumentError: `tree` lacks its histories or has a batch axis; `blueprint` is not
        a policy of it; `public_state` is not one of this tree's (histories out of
        range or at other depths), is open, leads to no decision, or is never
        reached by the blueprint.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> states = jaxsolve.public_states(tree)
      >>> root = jaxsolve.subgame(tree, states[0], jaxsolve.uniform_policy(tree))
      >>> root.tree.sizes.num_nodes, tree.sizes.num_nodes   # one more: the new root
      (59, 58)
    """
    where = "subgame"
    tree_arguments.game_tree(tree, where, histories=True)
    if not isinstance(public_state, PublicState):
        fail(where, "public_state must be a PublicState (jaxsolve.public_states(tree)[s]), "
                    f"got {kind_of(public_state)}", ArgumentTypeError)
    blueprint = np.asarray(tree_arguments.policy(tree, blueprint, where, host=True), np.float64)
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    parent = np.asarray(tree.parent)
    offsets = tree.sizes.level_offsets
    roots = _root_histories(public_state, offsets, where)
    depth = public_state.depth
    inside = np.zeros(tree.sizes.num_nodes, bool)
    inside[roots] = True
    for d in range(depth + 1, len(offsets) - 1):
        inside[offsets[d]:offsets[d + 1]] = inside[parent[offsets[d]:offsets[d + 1]]]
    nodes = np.flatnonzero(inside)
    infosets = _closed_infosets(tree, player[nodes], index[nodes], where)
    node_reach = _history_reach(tree, blueprint, depth)[:, roots]
    chance_reach, reach = node_reach[-1], node_reach[:-1].T
    weight = chance_reach * reach.prod(axis=1)
    normalizer = float(weight.sum())
    if not normalizer > 0:
        fail(where, f"the blueprint never reaches public state {public_state.index} (reach "
                    "0 at every one of its histories): its subgame has no distribution to "
                    "deal")
    parts = _parts(tree, nodes, roots, infosets, weight / normalizer,
                   f"{tree.names.game} subgame at public state {public_state.index}")
    return Subgame(tree=tree_from_parts(parts), source=tree, state=public_state,
                   nodes=np.concatenate([[-1], nodes]).astype(np.int32),
                   infosets=infosets.astype(np.int32), chance_reach=chance_reach,
                   reach=reach, normalizer=normalizer)


def restrict_policy(policy: jax.Array, subgame: Subgame) -> jax.Array:
    """A full game's policy on the subgame's infosets.

    Args:
      policy: `[I, A]` policy of `subgame.source`.
      subgame: the `Subgame`.

    Returns:
      `[I', A]`: row i is `policy[subgame.infosets[i]]`.

    Raises:
      ArgumentTypeError: `subgame` is not a Subgame.
      ArgumentError: `policy` is not a policy of the full game.
    """
    _subgame(subgame, "restrict_policy")
    policy = tree_arguments.policy(subgame.source, policy, "restrict_policy",
                                   what="the full game")
    return policy[subgame.infosets]


def write_back(policy: jax.Array, subgame: Subgame, subgame_policy: jax.Array) -> jax.Array:
    """A full game's policy with the subgame's infosets played as `subgame_policy`.

    The subgame's infosets lie entirely inside its public state's subtrees, so the
    result is a policy of the full game that differs from `policy` there only; writing
    back `restrict_policy(policy, subgame)` gives `policy` itself.

    Args:
      policy: `[I, A]` policy of `subgame.source`, kept outside the subgame.
      subgame: the `Subgame`.
      subgame_policy: `[I', A]` policy of `subgame.tree` (e.g. the average policy of a
        solver run on it).

    Returns:
      `[I, A]` in `policy`'s dtype.

    Raises:
      ArgumentTypeError: `subgame` is not a Subgame.
      ArgumentError: either policy does not fit its tree.
    """
    where = "write_back"
    _subgame(subgame, where)
    policy = tree_arguments.policy(subgame.source, policy, where, what="the full game")
    subgame_policy = tree_arguments.policy(subgame.tree, subgame_policy, where,
                                           what="the subgame")
    return policy.at[subgame.infosets].set(subgame_policy.astype(policy.dtype))


def _history_reach(tree: GameTree, policy: np.ndarray, depth: int) -> np.ndarray:
    """[P + 1, N_<=depth] float64: every player's own probability (row p) and chance's
    (the last row) of reaching each history of depths 0 to `depth` (node ids below
    `level_offsets[depth + 1]`) under `policy` [I, A], one level at a time."""
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    parent, action = np.asarray(tree.parent), np.asarray(tree.parent_action)
    offsets, P = tree.sizes.level_offsets, tree.sizes.num_players
    policy = np.asarray(policy, np.float64)
    chance = np.asarray(tree.chance_probs, np.float64)
    reach = np.ones((P + 1, offsets[depth + 1]))
    for d in range(1, depth + 1):
        m = np.arange(offsets[d], offsets[d + 1])
        par, act = parent[m], action[m]
        mover = player[par]
        reach[:, m] = reach[:, par]
        decides = mover >= 0
        reach[mover[decides], m[decides]] *= policy[index[par[decides]], act[decides]]
        dealt = mover == CHANCE
        reach[P, m[dealt]] *= chance[index[par[dealt]], act[dealt]]
    return reach


def _subgame(value, where: str) -> Subgame:
    if not isinstance(value, Subgame):
        fail(where, f"subgame must be a Subgame (from jaxsolve.subgame), got {kind_of(value)}",
             ArgumentTypeError)
    return value


def _root_histories(state: PublicState, offsets: tuple[int, ...], where: str) -> np.ndarray:
    """The public state's histories, ascending, checked to lie at its depth."""
    roots = np.unique(np.asarray(state.histories, np.int64))
    depth = state.depth
    if not 0 <= depth < len(offsets) - 1 or not roots.size:
        fail(where, f"public_state {state.index} has depth {depth} and {roots.size} "
                    f"histories; this tree has depths 0 to {len(offsets) - 2} (a public "
                    "state of another tree?)")
    begin, end = offsets[depth], offsets[depth + 1]
    if roots[0] < begin or roots[-1] >= end:
        fail(where, f"public_state {state.index} holds histories outside depth {depth} "
                    f"of this tree (nodes {begin} to {end - 1}): a public state of another "
                    "tree?")
    return roots


def _closed_infosets(tree: GameTree, player: np.ndarray, index: np.ndarray,
                     where: str) -> np.ndarray:
    """The infosets of the subtrees' decisions, ascending, checked to have all their
    histories there."""
    met = index[player >= 0]
    if not met.size:
        fail(where, "the public state leads to no decision: there is nothing to solve")
    everywhere = np.bincount(np.asarray(tree.node_index)[np.asarray(tree.node_player) >= 0],
                             minlength=tree.sizes.num_infosets)
    here = np.bincount(met, minlength=tree.sizes.num_infosets)
    leaves = np.flatnonzero((here > 0) & (here < everywhere))
    if leaves.size:
        i = int(leaves[0])
        fail(where, f"the public state is not closed: infoset {i} "
                    f"({tree.names.infosets[i]!r}) has {everywhere[i] - here[i]} of its "
                    f"{everywhere[i]} histories outside its subtrees (PublicStates.closed "
                    "is False for such a state)")
    return np.flatnonzero(here)


def _parts(tree: GameTree, nodes: np.ndarray, roots: np.ndarray, infosets: np.ndarray,
           deal: np.ndarray, name: str) -> TreeParts:
    """The subgame's arrays: a new root dealing `roots` by `deal`, then `nodes` (the
    roots' subtrees, in the full tree's order) renumbered from 1."""
    P, A = tree.sizes.num_players, tree.sizes.num_actions
    K, M = len(roots), len(nodes)
    Ac = max(tree.sizes.num_chance_outcomes, K)
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    renumber = np.full(tree.sizes.num_nodes, -1, np.int64)
    renumber[nodes] = np.arange(1, M + 1)

    sub_player = np.concatenate([[CHANCE], player[nodes]]).astype(np.int32)
    is_root = np.zeros(M + 1, bool)
    is_root[1:K + 1] = True  # the roots come first: they are the shallowest nodes
    parent = np.concatenate([[-1], renumber[np.asarray(tree.parent)[nodes]]])
    parent[is_root] = 0
    action = np.concatenate([[-1], np.asarray(tree.parent_action)[nodes]])
    action[is_root] = np.arange(K)
    old = np.asarray(tree.children)[nodes]
    children = np.full((M + 1, max(A, Ac)), -1, np.int32)
    children[0, :K] = np.arange(1, K + 1)
    children[1:, :old.shape[1]] = np.where(old >= 0, renumber[old], -1)

    sub_index = np.zeros(M + 1, np.int64)
    decides = np.flatnonzero(sub_player >= 0)
    sub_index[decides] = np.searchsorted(infosets, index[nodes[decides - 1]])
    dealt = np.flatnonzero(sub_player == CHANCE)  # the new root is row 0
    sub_index[dealt] = np.arange(len(dealt))
    ends = np.flatnonzero(sub_player == TERMINAL)
    sub_index[ends] = np.arange(len(ends))

    chance = np.asarray(tree.chance_probs)
    probs = np.zeros((len(dealt), Ac), chance.dtype)
    probs[0, :K] = deal
    probs[1:, :chance.shape[1]] = chance[index[nodes[dealt[1:] - 1]]]

    levels = [0, 1]
    offsets = tree.sizes.level_offsets
    sub_depth = np.searchsorted(np.asarray(offsets), nodes, side="right") - 1
    levels += (1 + np.cumsum(np.bincount(sub_depth - sub_depth[0]))).tolist()
    last = _last_moves(sub_player, sub_index, parent, action, levels, P, A, Ac)
    first = np.unique(sub_index[decides], return_index=True)[1]
    infoset_player = np.asarray(tree.infoset_player)[infosets]
    return TreeParts(
        name=name, num_actions=A, num_chance_outcomes=Ac, level_offsets=tuple(levels),
        node_player=sub_player, node_index=sub_index.astype(np.int32),
        parent=parent.astype(np.int32), parent_action=action.astype(np.int32),
        children=children, infoset_player=infoset_player,
        infoset_parent=last[infoset_player, decides[first]],
        legal=np.asarray(tree.legal)[infosets], chance_probs=probs,
        chance_prev=last[P, dealt],
        utilities=np.asarray(tree.utilities)[index[nodes[ends - 1]]],
        terminal_node=ends.astype(np.int32),
        terminal_last=last[:P, ends].astype(np.int32),
        terminal_chance_last=last[P, ends], perfect_recall=tree.sizes.perfect_recall,
        utility_sum=tree.sizes.utility_sum,
        infoset_names=[tree.names.infosets[i] for i in infosets],
        action_names=[tree.names.actions[i] for i in infosets])


def _last_moves(player: np.ndarray, index: np.ndarray, parent: np.ndarray,
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
