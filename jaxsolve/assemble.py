"""From per-node arrays to a GameTree: the sequence-form arrays, derived once.

`compile_game`'s walk and the builders' level stream both end with the same arrays
per history (players, infoset ids, parents, children), per infoset (player, legal
actions, own parent sequence), per chance node (probabilities, the chance outcome
above it) and per terminal (returns, each player's last own sequence, the last
chance outcome). `tree_from_parts` derives the rest from them: the infosets' depths
and ancestors, each terminal's own sequences and chance outcomes root to leaf, the
sizes, and the kernels' layout.

A terminal's own sequences follow its last one up the infoset-parent chain, one
gather per step; that is its path under perfect recall. A player who forgets reaches
one infoset after different own moves, so there the paths are read off the
histories instead.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxsolve.tree.game_tree import GameTree, with_layout
from jaxsolve.tree.checks import validate_shapes
from jaxsolve.tree.sizes import TreeNames, TreeSizes, observed_utility_sum
from jaxsolve.tree.structure import own_ancestors, terminal_paths

_BLOCK = 1 << 21  # leaves per block when unrolling paths, bounding the temporaries


@dataclasses.dataclass
class TreeParts:
    """What a walk or a builder knows of a tree; flat sequence ids are
    `infoset * A + action`, flat chance outcomes `row * Ac + outcome`, -1 for none.

    Attributes:
      name: the game's name.
      num_actions: A.
      num_chance_outcomes: Ac.
      level_offsets: [depth + 2] where each depth's histories begin, then N.
      node_player: [N] int32.
      node_index: [N] int32.
      parent: [N] int32.
      parent_action: [N] int32.
      children: [N, max(A, Ac)] int32.
      infoset_player: [I] int32.
      infoset_parent: [I] int: each infoset's own parent sequence (-1: none).
      legal: [I, A] bool.
      chance_probs: [C, Ac] float.
      chance_prev: [C] int: the chance outcome above each chance node (-1: none).
      utilities: [Z, P] float.
      terminal_node: [Z] int32.
      terminal_last: [P, Z] int32: each player's last own sequence (-1: none);
        overwritten with the padded one.
      terminal_chance_last: [Z] int: the last chance outcome above each terminal.
      perfect_recall: per player.
      utility_sum: the declared constant sum, or None (read off the utilities).
      infoset_names: [I] strings.
      action_names: [I] rows of A labels.
    """

    name: str
    num_actions: int
    num_chance_outcomes: int
    level_offsets: tuple[int, ...]
    node_player: np.ndarray
    node_index: np.ndarray
    parent: np.ndarray
    parent_action: np.ndarray
    children: np.ndarray
    infoset_player: np.ndarray
    infoset_parent: np.ndarray
    legal: np.ndarray
    chance_probs: np.ndarray
    chance_prev: np.ndarray
    utilities: np.ndarray
    terminal_node: np.ndarray
    terminal_last: np.ndarray
    terminal_chance_last: np.ndarray
    perfect_recall: tuple[bool, ...]
    utility_sum: float | None
    infoset_names: list
    action_names: list


def tree_from_parts(parts: TreeParts, histories: bool = True) -> GameTree:
    """The GameTree of `parts`.

    Args:
      parts: the per-node, per-infoset, per-chance-node and per-terminal arrays.
      histories: False returns the tree as `GameTree.without_histories` gives it, and
        skips the terminals' own paths when every player has perfect recall.

    Returns:
      The tree, with its kernel layout (`GameTree.layout`).

    Raises:
      GameError: the infoset parents form a cycle, or the arrays' shapes disagree.
    """
    p = parts
    I, A = len(p.infoset_player), p.num_actions
    empty = I * A
    infoset_parent = np.where(p.infoset_parent < 0, empty, p.infoset_parent).astype(np.int32)
    depth, ancestors = own_ancestors(infoset_parent, A)
    sequences = _terminal_sequences(p, depth, histories)
    L = sequences.shape[2] if sequences is not None else int(depth.max()) + 1
    terminal_chance = _terminal_chance(p.chance_prev, p.terminal_chance_last,
                                       p.num_chance_outcomes)
    utility_sum = p.utility_sum
    if utility_sum is None:
        utility_sum = observed_utility_sum(p.utilities)
    sizes = TreeSizes(
        num_players=p.utilities.shape[1], num_nodes=len(p.node_player), num_infosets=I,
        num_actions=A, num_chance_outcomes=p.num_chance_outcomes,
        num_chance=len(p.chance_probs), num_terminals=len(p.terminal_node),
        level_offsets=tuple(int(x) for x in p.level_offsets), max_sequence_length=L,
        max_chance_length=terminal_chance.shape[1], max_infoset_depth=ancestors.shape[1],
        perfect_recall=tuple(p.perfect_recall), utility_sum=utility_sum)
    tree = GameTree(
        node_player=p.node_player, node_index=p.node_index, children=p.children,
        parent=p.parent, parent_action=p.parent_action, infoset_player=p.infoset_player,
        legal=p.legal, infoset_parent=infoset_parent, infoset_ancestors=ancestors,
        infoset_depth=depth, chance_probs=p.chance_probs, utilities=p.utilities,
        terminal_node=p.terminal_node, terminal_sequences=sequences,
        terminal_last=p.terminal_last, terminal_chance=terminal_chance, sizes=sizes,
        names=TreeNames.make(p.name, p.infoset_names, p.action_names))
    validate_shapes(tree, where=p.name)
    return with_layout(tree if histories else tree.without_histories())


def _terminal_sequences(p: TreeParts, depth: np.ndarray, histories: bool):
    """[P, Z, L] each player's own sequences per terminal, root to leaf, padded with
    the empty sequence I * A (None when not wanted); pads `p.terminal_last` alike."""
    P, Z = p.terminal_last.shape
    I, A = len(p.infoset_player), p.num_actions
    empty = I * A
    if not all(p.perfect_recall):
        sequences, last, _ = terminal_paths(
            p.node_player, p.node_index, p.parent, p.parent_action, p.terminal_node,
            p.level_offsets, P, A, p.num_chance_outcomes, I, len(p.chance_probs))
        p.terminal_last[:] = last
        return sequences
    sequences = None
    if histories:
        sequences = np.full((P, Z, int(depth.max()) + 1), empty, np.int32)
        for player in range(P):
            chain_paths(p.terminal_last[player], p.infoset_parent, depth, A,
                        sequences[player])
    p.terminal_last[p.terminal_last < 0] = empty
    return sequences


def _terminal_chance(chance_prev: np.ndarray, last: np.ndarray, Ac: int) -> np.ndarray:
    """[Z, Lc] the chance outcomes above each terminal, root to leaf, padded with
    C * Ac; Lc is at least 1."""
    C = len(chance_prev)
    depth = chain_depth(chance_prev, Ac)
    out = np.full((len(last), int(depth.max()) + 1 if C else 1), C * Ac, np.int32)
    chain_paths(last, chance_prev, depth, Ac, out)
    return out


def chain_depth(chain_parent: np.ndarray, width: int) -> np.ndarray:
    """How many links lie above each row of a chain.

    Args:
      chain_parent: [R] each row's previous flat index (`row * width + action`, -1
        for none).
      width: the flat index's row width.

    Returns:
      [R] int32, the depths.
    """
    depth = np.zeros(len(chain_parent), np.int32)
    cur = np.asarray(chain_parent, np.int64)
    while (has := cur >= 0).any():
        depth += has
        cur = np.where(has, chain_parent[np.maximum(cur, 0) // width], -1)
    return depth


def chain_paths(last: np.ndarray, chain_parent: np.ndarray, depth: np.ndarray,
                width: int, out: np.ndarray) -> None:
    """Writes root-to-leaf paths into `out`, pre-filled with the padding.

    Args:
      last: [Z] each leaf's last flat index (-1: none).
      chain_parent: [R] each row's previous flat index (-1: none).
      depth: [R] the position of a row's flat indices in a path.
      width: flat index = row * width + action.
      out: [Z, length] written in place.
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
