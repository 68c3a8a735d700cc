"""Per-history quantities of a policy, on the host: reaches from the root down and
values from the leaves up, one level of the tree at a time (NumPy, float64)."""

from __future__ import annotations

import numpy as np

from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import GameTree


def history_reach(tree: GameTree, policy: np.ndarray, depth: int) -> np.ndarray:
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


def history_values(tree: GameTree, policy: np.ndarray, player: int) -> np.ndarray:
    """One player's expected utility at each history, from the deepest level up.

    Args:
      tree: the game's tree.
      policy: `[I, A]` every player's policy from each history on.
      player: whose utility.

    Returns:
      [N] float64.
    """
    node_player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    children, offsets = np.asarray(tree.children), tree.sizes.level_offsets
    policy = np.asarray(policy, np.float64)
    chance = np.asarray(tree.chance_probs, np.float64)
    W = children.shape[1]
    values = np.zeros(tree.sizes.num_nodes)
    ends = np.flatnonzero(node_player == TERMINAL)
    values[ends] = np.asarray(tree.utilities, np.float64)[index[ends], player]
    for d in range(len(offsets) - 3, -1, -1):
        m = np.arange(offsets[d], offsets[d + 1])
        m = m[node_player[m] != TERMINAL]
        probs = np.zeros((len(m), W))
        decides = node_player[m] >= 0
        probs[decides, :policy.shape[1]] = policy[index[m[decides]]]
        dealt = node_player[m] == CHANCE
        probs[dealt, :chance.shape[1]] = chance[index[m[dealt]]]
        kids = children[m]
        values[m] = np.sum(np.where(kids >= 0, probs * values[np.maximum(kids, 0)], 0.0), axis=1)
    return values


def descend(tree: GameTree, label: np.ndarray, depth: int) -> np.ndarray:
    """Each history below a depth labelled as its ancestor at that depth is.

    Args:
      tree: the game's tree.
      label: [N] labels; those of the histories of depth `depth` are read (-1 for
        none), those below are written, one level at a time.
      depth: the depth whose labels descend.

    Returns:
      `label`, changed in place.
    """
    parent, offsets = np.asarray(tree.parent), tree.sizes.level_offsets
    for d in range(depth + 1, len(offsets) - 1):
        level = slice(offsets[d], offsets[d + 1])
        label[level] = label[parent[level]]
    return label
