"""What a GameTree is made of: the static sizes and names that describe one game, and
the names, kinds and shapes of its arrays.

`TreeSizes` and `TreeNames` are the static part of a `jaxsolve.GameTree` (the part of
the jit cache key); `array_shapes` gives the shape of every saved array from the
sizes, and `observed_utility_sum` reads the one size that depends on the numbers.
What the kernels derive from the arrays is `jaxsolve.tree.layout`'s.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Sequence

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


# The arrays a tree file holds (and `GameTree.replace` replaces).
SAVED_FIELDS = (
    "node_player", "node_index", "children", "parent", "parent_action",
    "infoset_player", "legal", "infoset_parent", "infoset_ancestors", "infoset_depth",
    "chance_probs", "utilities", "terminal_node", "terminal_sequences", "terminal_last",
    "terminal_chance",
)
# The fields of a GameTree that are pytree data, in the order of its leaves: the saved
# arrays and `layout`, the `jaxsolve.tree.layout.KernelLayout` derived from them.
ARRAY_FIELDS = SAVED_FIELDS + ("layout",)
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
                "terminal_last": 1, "terminal_chance": 0}


def array_shapes(s: TreeSizes) -> dict[str, tuple[int, ...]]:
    """The shape of every saved array of one game of sizes `s` (a batch adds leading
    axes).

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
    }


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


