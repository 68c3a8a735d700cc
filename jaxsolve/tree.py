"""GameTree: an extensive-form game as flat, padded arrays.

A game is walked once (`jaxsolve.compile_game`) and everything after that is array
code. The tree holds three views of the same game:

* **Histories** (nodes), ordered breadth-first so each depth is one contiguous slice
  (`sizes.level_offsets`). Used by environments, samplers and statistics.
* **Information sets**: player, legal mask and the sequence-form parent. Policies are
  `[num_infosets, num_actions]` arrays indexed by these ids.
* **Terminals with their sequences**: for each leaf, the player's own (infoset,
  action) pairs on the path to it, and the chance outcomes. CFR and best response
  run entirely on this view: reach products are gathers, counterfactual values are
  one segment sum, and no level-by-level loop over the history tree is needed.

Sequences are flat indices `infoset * num_actions + action` into a flattened policy;
the index `num_infosets * num_actions` (`empty_sequence`) is the empty sequence and
pads every path, and a flattened policy always carries a trailing 1.0 for it. Chance
paths index `chance_probs` the same way, with `num_chance * num_actions` as padding.

Array leaves are what `jit`/`vmap` see; sizes are static and the names (infoset
strings, action labels) are metadata that never enters a trace. Two trees from one
parameter sweep share sizes and names, so one compilation serves them all, and
stacking them along a new leading axis gives a batch that `jax.vmap` solves at once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsolve.errors import GameError

_FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class TreeSizes:
    """Static sizes: part of the compiled program, identical across a sweep."""

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
    utility_sum: float | None  # constant sum of returns, None if general-sum

    @property
    def empty_sequence(self) -> int:
        return self.num_infosets * self.num_actions

    @property
    def constant_sum(self) -> bool:
        return self.utility_sum is not None


@dataclasses.dataclass(frozen=True, eq=False)
class TreeNames:
    """Human-readable names; compared by a content digest so jit caches stay cheap."""

    game: str
    infosets: tuple[str, ...]  # [I]
    actions: tuple[tuple[str, ...], ...]  # [I][A], '' where the slot is illegal
    digest: str = ""

    @staticmethod
    def make(game: str, infosets, actions) -> "TreeNames":
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


_ARRAY_FIELDS = (
    "node_player", "node_index", "children", "parent", "parent_action",
    "infoset_player", "legal", "infoset_parent", "infoset_ancestors", "infoset_depth",
    "chance_probs", "utilities", "terminal_node", "terminal_sequences", "terminal_last",
    "terminal_chance",
)


@dataclasses.dataclass(frozen=True)
class GameTree:
    """A compiled game. Every array's shape is given with N nodes, I infosets, A
    actions, C chance nodes, Z terminals and P players."""

    # Histories, breadth-first.
    node_player: Any  # [N] int32: player, CHANCE (-1) or TERMINAL (-4)
    node_index: Any  # [N] int32: infoset id / row of chance_probs / row of utilities
    children: Any  # [N, max(A, Ac)] int32: child node per action slot, -1 where illegal
    parent: Any  # [N] int32: -1 at the root
    parent_action: Any  # [N] int32: action leading here, -1 at the root
    # Information sets.
    infoset_player: Any  # [I] int32
    legal: Any  # [I, A] bool
    infoset_parent: Any  # [I] int32: own parent sequence, empty_sequence at a root infoset
    infoset_ancestors: Any  # [I, D] int32: own earlier sequences, padded with empty_sequence
    infoset_depth: Any  # [I] int32: number of own earlier decisions
    # Chance.
    chance_probs: Any  # [C, Ac] float: outcome probabilities, 0 where impossible
    # Terminals.
    utilities: Any  # [Z, P] float
    terminal_node: Any  # [Z] int32
    terminal_sequences: Any  # [P, Z, L] int32: own sequences root->leaf, padded
    terminal_last: Any  # [P, Z] int32: last own sequence (empty_sequence if none)
    terminal_chance: Any  # [Z, Lc] int32: flat chance outcomes row*Ac+a, padded with C*Ac
    # Static.
    sizes: TreeSizes
    names: TreeNames

    # ------------------------------------------------------------------ derived info
    @property
    def num_players(self) -> int:
        return self.sizes.num_players

    @property
    def num_infosets(self) -> int:
        return self.sizes.num_infosets

    @property
    def num_actions(self) -> int:
        return self.sizes.num_actions

    def infosets_of(self, player: int) -> np.ndarray:
        """Infoset ids of `player` (host-side helper, outside jit)."""
        return np.nonzero(np.asarray(self.infoset_player) == player)[0]

    def summary(self) -> dict[str, Any]:
        """Counts for listings: histories, infosets per player, terminals, depth."""
        s = self.sizes
        per_player = np.bincount(np.asarray(self.infoset_player), minlength=s.num_players)
        return {
            "game": self.names.game,
            "players": s.num_players,
            "histories": s.num_nodes,
            "terminals": s.num_terminals,
            "chance_nodes": s.num_chance,
            "infosets": s.num_infosets,
            "infosets_per_player": per_player.tolist(),
            "max_actions": s.num_actions,
            "depth": len(s.level_offsets) - 1,
            "perfect_recall": list(s.perfect_recall),
            "zero_sum": s.utility_sum == 0.0,
        }

    def replace(self, **changes) -> "GameTree":
        """A copy with some arrays replaced, e.g. other utilities for a sweep."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Writes the tree to one `.npz` file that loads without any game code."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        meta = {
            "format_version": _FORMAT_VERSION,
            "sizes": dataclasses.asdict(self.sizes),
            "game": self.names.game,
            "infosets": list(self.names.infosets),
            "actions": [list(a) for a in self.names.actions],
        }
        arrays = {f: np.asarray(getattr(self, f)) for f in _ARRAY_FIELDS}
        np.savez_compressed(path, __meta__=np.array(json.dumps(meta)), **arrays)
        return path

    @staticmethod
    def load(path: str | Path) -> "GameTree":
        """Reads a tree written by `save`; raises GameError naming what is wrong."""
        path = Path(path)
        if not path.exists():
            raise GameError(f"{path}: no such file")
        try:
            data = np.load(path, allow_pickle=False)
        except Exception as e:  # zip or format errors from numpy
            raise GameError(f"{path}: not a jaxsolve .npz file ({e})") from None
        with data:
            if "__meta__" not in data:
                raise GameError(f"{path}: not a jaxsolve GameTree (no __meta__ record)")
            meta = json.loads(str(data["__meta__"]))
            if meta.get("format_version") != _FORMAT_VERSION:
                raise GameError(f"{path}: format version {meta.get('format_version')}, "
                                f"this jaxsolve reads {_FORMAT_VERSION}")
            missing = [f for f in _ARRAY_FIELDS if f not in data]
            if missing:
                raise GameError(f"{path}: missing arrays {', '.join(missing)}")
            arrays = {f: data[f] for f in _ARRAY_FIELDS}
        sz = meta["sizes"]
        sz["level_offsets"] = tuple(sz["level_offsets"])
        sz["perfect_recall"] = tuple(sz["perfect_recall"])
        sizes = TreeSizes(**sz)
        names = TreeNames.make(meta["game"], meta["infosets"], meta["actions"])
        tree = GameTree(**arrays, sizes=sizes, names=names)
        validate_shapes(tree, where=str(path))
        return tree


def validate_shapes(tree: GameTree, where: str = "GameTree") -> None:
    """Checks every array against the static sizes; raises GameError on mismatch."""
    s = tree.sizes
    n, i, a, c, z, p = (s.num_nodes, s.num_infosets, s.num_actions, s.num_chance,
                        s.num_terminals, s.num_players)
    expected = {
        "node_player": (n,), "node_index": (n,), "parent": (n,),
        "parent_action": (n,), "infoset_player": (i,), "legal": (i, a),
        "children": (n, max(a, s.num_chance_outcomes)),
        "infoset_parent": (i,), "infoset_depth": (i,), "chance_probs": (c, s.num_chance_outcomes),
        "utilities": (z, p), "terminal_node": (z,),
        "terminal_sequences": (p, z, s.max_sequence_length), "terminal_last": (p, z),
        "terminal_chance": (z, s.max_chance_length),
        "infoset_ancestors": (i, s.max_infoset_depth),
    }
    for field, shape in expected.items():
        got = tuple(np.shape(getattr(tree, field)))
        if got[len(got) - len(shape):] != shape:  # leading batch axes are allowed
            raise GameError(f"{where}: array {field!r} has shape {got}, expected {shape}")
    if len(tree.names.infosets) != i:
        raise GameError(f"{where}: {len(tree.names.infosets)} infoset names for {i} infosets")


jax.tree_util.register_dataclass(
    GameTree, data_fields=list(_ARRAY_FIELDS), meta_fields=["sizes", "names"])
