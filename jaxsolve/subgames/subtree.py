"""A public state's subtrees as a game of their own, and its policy put back.

`subgame(tree, public_state, blueprint)` builds a `GameTree` whose root is a chance
node dealing the public state's K histories, each with probability proportional to
its reach under the blueprint: chance's reach times every player's, normalised. Below
outcome k lies the subtree of the k-th history, its histories, infosets, chance nodes
and terminals numbered breadth first, as the compiler numbers a walk. It is an ordinary tree:
`run`, `exploitability`, sweeps and every other function take it unchanged. Solving
it re-solves the public state with the blueprint's ranges held fixed (unsafe
re-solving); the normalising constant and each root history's reaches are kept on the
`Subgame` for the gadgets that re-solve safely.

Because the public state is closed (`jaxsolve.subgames.public`), every infoset of the
subtrees lies entirely inside them, so a policy of the subgame is a policy of those
infosets of the full game (`jaxsolve.subgames.resolving` puts it back).

NumPy on the host, vectorised over histories (loops run over depths).
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxsolve.errors import ArgumentTypeError
from jaxsolve.subgames.public import PublicState
from jaxsolve.subgames.histories import descend, history_reach
from jaxsolve.subgames.splice import Splice
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
    roots = _root_histories(public_state, tree.sizes.level_offsets, where)
    node_reach = history_reach(tree, blueprint, public_state.depth)[:, roots]
    chance_reach, reach = node_reach[-1], node_reach[:-1].T
    weight = chance_reach * reach.prod(axis=1)
    normalizer = float(weight.sum())
    if not normalizer > 0:
        fail(where, f"the blueprint never reaches public state {public_state.index} (reach "
                    "0 at every one of its histories): its subgame has no distribution to "
                    "deal")
    check_closed(tree, subtree_nodes(tree, roots, public_state.depth), where)
    splice = Splice(tree, tree.sizes.num_actions, len(roots))
    root = splice.chance(-1, 0, weight[None] / normalizer)
    splice.copies(root, np.arange(len(roots)), roots)
    built = splice.build(f"{tree.names.game} subgame at public state {public_state.index}",
                         tree.sizes.utility_sum)
    return Subgame(tree=built.tree, source=tree, state=public_state, nodes=built.nodes,
                   infosets=built.infosets, chance_reach=chance_reach, reach=reach,
                   normalizer=normalizer)


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


def subtree_nodes(tree: GameTree, roots: np.ndarray, depth: int) -> np.ndarray:
    """The histories of the subtrees of some histories of one depth.

    Args:
      tree: the game's tree.
      roots: [K] histories of depth `depth`.
      depth: their depth.

    Returns:
      [M] int64, the histories of their subtrees (the roots included), ascending.
    """
    inside = np.full(tree.sizes.num_nodes, -1, np.int8)
    inside[roots] = 1
    return np.flatnonzero(descend(tree, inside, depth) >= 0)


def check_closed(tree: GameTree, nodes: np.ndarray, where: str) -> None:
    """Checks that the decisions among some histories exist and hold every history of
    their infosets (the subtrees of a closed public state).

    Args:
      tree: the game's tree.
      nodes: [M] histories (`subtree_nodes`).
      where: the public function's name, which starts the error's message.

    Raises:
      ArgumentError: no decision among `nodes`, or an infoset with histories both
        among them and elsewhere.
    """
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    met = index[nodes][player[nodes] >= 0]
    if not met.size:
        fail(where, "the public state leads to no decision: there is nothing to solve")
    everywhere = np.bincount(index[player >= 0], minlength=tree.sizes.num_infosets)
    here = np.bincount(met, minlength=tree.sizes.num_infosets)
    leaves = np.flatnonzero((here > 0) & (here < everywhere))
    if leaves.size:
        i = int(leaves[0])
        fail(where, f"the public state is not closed: infoset {i} "
                    f"({tree.names.infosets[i]!r}) has {everywhere[i] - here[i]} of its "
                    f"{everywhere[i]} histories outside its subtrees (PublicStates.closed "
                    "is False for such a state)")
