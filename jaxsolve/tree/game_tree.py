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
paths index the flattened `chance_probs` [C, Ac] the same way, `chance * Ac + outcome`,
with `num_chance * num_chance_outcomes` as padding.

Array leaves are what `jit`/`vmap` see; sizes are static and the names (infoset
strings, action labels) are metadata that never enters a trace. Two trees from one
parameter sweep share sizes and names, so one compilation serves them all, and
stacking them along a new leading axis gives a batch that `jax.vmap` solves at once.

The sizes, the names and the catalogue of the arrays are `jaxsolve.tree.sizes`'s,
what the kernels derive from them `jaxsolve.tree.layout`'s, the checks of the
arrays `jaxsolve.tree.checks`'s and the `.npz` file format `jaxsolve.tree.file`'s;
`GameTree`'s methods call them.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsolve.errors import ArgumentError, ArgumentTypeError, GameError
from jaxsolve.protocol import CHANCE
from jaxsolve.tree import file as tree_file
from jaxsolve.tree.checks import (actions_to, kind_error, require_histories, validate_numbers,
                                  validate_shapes, validate_values)
from jaxsolve.tree.layout import KernelLayout, SlotCosts, derive, leaf_slots
from jaxsolve.tree.sizes import (ARRAY_FIELDS, HISTORY_FIELDS, NUMBER_FIELDS, SAVED_FIELDS,
                                 TreeNames, TreeSizes, observed_utility_sum)


@dataclasses.dataclass(frozen=True)
class GameTree:
    """A compiled game: flat arrays, the same for every game, that the solvers take as
    an argument (a pytree: jit, vmap and device_put it like any array).

    Shapes use N histories (nodes, breadth-first), I infosets, A actions (the largest
    action id + 1), C chance nodes with at most Ac outcomes, Z terminals, P players,
    D / L the longest chain of one player's own decisions before an infoset / on the
    way to a terminal, and Lc of chance outcomes (each at least 1: a game without
    such a chain keeps one column of padding).
    A policy is an [I, A] array: row i is the infoset `names.infosets[i]`, column a
    the game's action id a (0 where `legal` is False).

    The history arrays (node_player to parent_action, terminal_node and, for a game
    of perfect recall, terminal_sequences) are None in a `without_histories` view.
    `sizes`, `names` and `terminal_axis` are static: not arrays, part of the jit cache
    key.

    Attributes:
      node_player: [N] int32, the player to move, CHANCE (-1) or TERMINAL (-4).
      node_index: [N] int32, the node's infoset id, row of `chance_probs` or row of
        `utilities`, by kind.
      children: [N, max(A, Ac)] int32, the child per action slot, -1 where illegal.
      parent: [N] int32, the parent history, -1 at the root.
      parent_action: [N] int32, the action from the parent, -1 at the root.
      infoset_player: [I] int32, the player who acts at each infoset.
      legal: [I, A] bool, the legal actions of each infoset.
      infoset_parent: [I] int32, the player's own parent sequence (row * A + action),
        `sizes.empty_sequence` at a root infoset.
      infoset_ancestors: [I, D] int32, own earlier sequences, nearest first (column 0
        is `infoset_parent`), padded with the empty one.
      infoset_depth: [I] int32, the number of own earlier decisions.
      chance_probs: [C, Ac] float, outcome probabilities, 0 where impossible.
      utilities: [Z, P] float, every player's payoff.
      terminal_node: [Z] int32, the history of each terminal.
      terminal_sequences: [P, Z, L] int32, each player's own sequences root to leaf.
      terminal_last: [P, Z] int32, the last of them (the empty sequence if none).
      terminal_chance: [Z, Lc] int32, chance outcomes on the way, row * Ac + a,
        padded with C * Ac.
      sizes: `TreeSizes`, the counts above, per-level offsets, perfect recall per
        player, the constant sum of the utilities (None if general-sum).
      names: `TreeNames`, the game's name, infoset strings, action names.
      terminal_axis: the mesh axis names this tree's terminals are split over, inside
        `jaxsolve.distributed`'s `shard_map` only (it sets them); () for a tree
        holding all its terminals, as everywhere else.
      layout: the `jaxsolve.tree.layout.KernelLayout`, what the kernels derive
        from the arrays (the packed sequences, the leaf slots); derived when the
        tree is built or loaded (`with_layout`), never saved, carried through
        jit, vmap, `stack` and sharding like the arrays.
    """

    node_player: Any
    node_index: Any
    children: Any
    parent: Any
    parent_action: Any
    infoset_player: Any
    legal: Any
    infoset_parent: Any
    infoset_ancestors: Any
    infoset_depth: Any
    chance_probs: Any
    utilities: Any
    terminal_node: Any
    terminal_sequences: Any
    terminal_last: Any
    terminal_chance: Any
    sizes: TreeSizes
    names: TreeNames
    terminal_axis: tuple[str, ...] = ()
    layout: KernelLayout = KernelLayout()

    def __repr__(self) -> str:
        # The dataclass repr prints every array; a tree is read by its counts.
        s = self.sizes
        return (f"GameTree({self.names.game!r}: {s.num_players} players, {s.num_nodes} "
                f"histories, {s.num_infosets} infosets, {s.num_actions} actions, "
                f"{s.num_terminals} terminals, {s.num_chance} chance nodes)")

    # ------------------------------------------------------------------ derived info
    @property
    def has_histories(self) -> bool:
        """False for a tree from `without_histories` (or a builder's `histories=False`)."""
        return self.node_player is not None

    def without_histories(self) -> "GameTree":
        """The same game holding only what full-width solving and evaluation read.

        Drops the history arrays (node_player, node_index, children, parent,
        parent_action, terminal_node: 16 + 4 * max(A, Ac) bytes a history) and the
        per-leaf own paths terminal_sequences (4 * P * L bytes a terminal); those are
        kept for a game where some player forgets, whose values are computed on them.
        The CFR family, `run`, best response, exploitability and the policy tools
        work as on the full tree, with the same results; environments, sampling
        solvers, abstraction maps, `chance_histories` and `save` need the histories
        and refuse such a tree. Builders take `histories=False` to return this view
        without building the paths at all.

        Returns:
          The tree with those arrays None.
        """
        keep_paths = not all(self.sizes.perfect_recall)
        return dataclasses.replace(self, **{f: None for f in HISTORY_FIELDS
                                            if not (keep_paths and f == "terminal_sequences")})

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
        """The infoset ids of `player` (host-side, outside jit).

        Args:
          player: a player index.

        Returns:
          [I_p] int array: the ids, ascending.
        """
        return np.nonzero(np.asarray(self.infoset_player) == player)[0]

    def summary(self) -> dict[str, Any]:
        """Counts for listings: histories, infosets per player, terminals, depth.

        Returns:
          A dict with `game`, `players`, `histories`, `terminals`, `chance_nodes`,
          `infosets`, `infosets_per_player`, `max_actions`, `depth` (actions in the
          longest history), `perfect_recall` (per player) and `zero_sum`.
        """
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
            "depth": len(s.level_offsets) - 2,  # actions in the longest history
            "perfect_recall": list(s.perfect_recall),
            "zero_sum": s.utility_sum == 0.0,
        }

    def renamed(self, game: str) -> "GameTree":
        """The same tree under another game name.

        E.g. to `stack` variants of a game whose names list their parameters (OpenSpiel's
        do) though only payoffs differ.

        Args:
          game: the new name, a non-empty string.

        Returns:
          The tree with `names.game` replaced.

        Raises:
          ArgumentTypeError: `game` is not a non-empty string.
        """
        if not isinstance(game, str) or not game:
            raise ArgumentTypeError(f"GameTree.renamed: game must be a non-empty str, got "
                                    f"{game!r}")
        return dataclasses.replace(
            self, names=TreeNames.make(game, self.names.infosets, self.names.actions))

    def replace(self, **changes: Any) -> "GameTree":
        """A copy with some arrays replaced, e.g. other utilities or chance probabilities:
        one point of a sweep (`jaxsolve.sweep` builds many at once).

        Each new array must have the shape of the one it replaces (no batch axis:
        `sweep` and `stack` build batches) and the same kind (float numbers, integer
        indices, bool `legal`). Concrete arrays are also checked as `GameTree.load`
        checks a file's: utilities finite, each chance row a distribution over the
        outcomes the tree has (an outcome the game did not list in chance_outcomes()
        when compiled has no subtree, so it cannot be given weight later; one listed
        with probability 0 has), indices in range; and
        `sizes.utility_sum` follows new utilities (None once they are general-sum).
        Traced arrays (under jit, grad or vmap) are checked by shape and dtype only,
        and `utility_sum` stays as it was.

        Args:
          **changes: array name -> new array, e.g. `utilities=...` ([Z, P]).

        Returns:
          The new tree.

        Raises:
          ArgumentError: an unknown or dropped array, a wrong shape, or values the
            checks refuse; the message names the array.
          ArgumentTypeError: an array of the wrong kind.
        """
        where = "GameTree.replace"
        unknown = sorted(set(changes) - set(SAVED_FIELDS))
        if unknown:
            raise ArgumentError(f"{where}: {', '.join(unknown)} cannot be replaced; the "
                                f"arrays are {', '.join(SAVED_FIELDS)} (sizes, names and "
                                "the derived layout follow from the game: compile it "
                                "again to change them)")
        dropped = sorted(f for f in changes if getattr(self, f) is None)
        if dropped:
            raise ArgumentError(f"{where}: this tree was built without its histories "
                                f"({', '.join(dropped)}): replace them on the full tree")
        for field, value in changes.items():
            old, new = np.shape(getattr(self, field)), np.shape(value)
            if new != old:
                raise ArgumentError(f"{where}: {field} must have the tree's shape {old}, got "
                                    f"{new}" + (" (build a batch with jaxsolve.sweep or "
                                                "jaxsolve.stack)" if new[1:] == old else ""))
            kind = kind_error(field, _dtype(value))
            if kind:
                raise ArgumentTypeError(f"{where}: {field} {kind}")
        tree = dataclasses.replace(self, **changes)
        if any(isinstance(v, jax.core.Tracer) for v in changes.values()):
            if set(_LAYOUT_FROM) & set(changes):  # unknown while tracing: not used
                tree = dataclasses.replace(tree, layout=KernelLayout())
            return tree
        try:
            if set(changes) <= set(NUMBER_FIELDS):
                validate_numbers(tree, where)  # the indices are the tree's own, checked
            else:
                validate_values(tree, where)
        except GameError as e:
            raise ArgumentError(str(e)) from None
        if set(_LAYOUT_FROM) & set(changes):
            tree = with_layout(tree)
        return with_observed_utility_sum(tree) if "utilities" in changes else tree

    def with_slot_costs(self, costs: SlotCosts) -> "GameTree":
        """The same game with its leaf slots laid out for other costs.

        The kernel adds each player's leaf weights into its sequences either by a
        scatter or in rows of slots (`KernelLayout.leaf_slots`); which is cheaper
        depends on the machine. A tree is laid out for the default backend's costs
        (`jaxsolve.tree.SLOT_COSTS`) when it is built or loaded; this lays it
        out for yours, e.g. for a tree built on one backend and solved on another,
        or to measure both layouts. No value changes, only the order of additions.

        Args:
          costs: a `jaxsolve.tree.SlotCosts`; `SlotCosts(1.0, math.inf)`
            keeps every scatter.

        Returns:
          The tree with its slot arrays derived again.

        Raises:
          ArgumentTypeError: `costs` is not a SlotCosts.
          ArgumentError: the tree has traced arrays, or a player forgets (no packing).
        """
        where = "GameTree.with_slot_costs"
        if not isinstance(costs, SlotCosts):
            raise ArgumentTypeError(f"{where}: costs must be a jaxsolve.tree.SlotCosts, "
                                    f"got {type(costs).__name__}")
        if np.ndim(self.utilities) != 2:
            raise ArgumentError(f"{where}: expected one game, got a batch: lay out each "
                                "tree before stacking")
        if not self.layout.packed:
            raise ArgumentError(f"{where}: this tree has no packing to lay out (a player "
                                "forgets, or a traced replace changed its structure)")
        if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(self)):
            raise ArgumentError(f"{where}: call it outside jit, on a tree of concrete arrays")
        slots, arrays = leaf_slots(self.layout.last, self.layout.block_columns, costs)
        return dataclasses.replace(self, layout=dataclasses.replace(
            self.layout, leaf_slots=slots, **arrays))

    def chance_histories(self) -> list[list[int]]:
        """Which chance node each row of `chance_probs` is (host-side, one tree).

        E.g. to pick the rows a sweep changes.

        Returns:
          [C] lists: row c belongs to the node reached by the actions
          `chance_histories()[c]` from the root (chance outcomes included).

        Raises:
          ArgumentError: the tree lacks its histories (`without_histories`) or has a
            batch axis.
        """
        require_histories(self, "GameTree.chance_histories")
        validate_shapes(self, "GameTree.chance_histories", batch_ok=False)
        player, index = np.asarray(self.node_player), np.asarray(self.node_index)
        parent, action = np.asarray(self.parent), np.asarray(self.parent_action)
        nodes = np.nonzero(player == CHANCE)[0]
        rows = [[] for _ in range(self.sizes.num_chance)]
        for node in nodes:
            rows[int(index[node])] = actions_to(parent, action, int(node))
        return rows

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Writes the tree to one `.npz` file that loads without any game code.

        A batch (`sweep`, `stack`) is saved as one and loads as one (`jaxsolve.batch_axes`
        gives its `in_axes` back). A tree placed by `distributed.shard_tree` is saved as
        the game it holds, without the inert terminals that pad it to the mesh. The write
        is atomic (`jaxsolve.npz.write`): an interrupted save leaves the old file intact.

        Args:
          path: the file; a name not ending in `.npz` gets it appended ("point_1.5"
            writes "point_1.5.npz", not "point_1.npz").

        Returns:
          The path written.

        Raises:
          ArgumentError: the tree lacks its histories (`without_histories`).

        Examples:
          >>> import tempfile
          >>> from pathlib import Path
          >>> import jaxsolve
          >>> from jaxsolve import games
          >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
          >>> with tempfile.TemporaryDirectory() as folder:
          ...     print(tree.save(Path(folder) / "kuhn").name)
          kuhn.npz
        """
        return tree_file.write(self, path)

    @staticmethod
    def load(path: str | Path, *, check_structure: bool = True) -> "GameTree":
        """Reads a tree written by `save`.

        The file's record is read by `jaxsolve.tree.file`, its arrays checked by
        `jaxsolve.tree.checks.validate_shapes` and `validate_values`.

        Args:
          path: the file.
          check_structure: False skips only the check that the arrays describe one game
            (`jaxsolve.tree.structure`; shapes, dtypes, ranges and numbers are always
            checked), for big files you wrote yourself: it takes about as long as
            reading the file (30 s for 33M histories on 2 cores).

        Returns:
          The tree.

        Raises:
          ArgumentTypeError: `path` is not a file name.
          GameError: naming the file and what is wrong with it.
          CheckpointNotTreeError: the file is a solver checkpoint.

        Examples:
          >>> import tempfile
          >>> from pathlib import Path
          >>> import jaxsolve
          >>> from jaxsolve import games
          >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
          >>> with tempfile.TemporaryDirectory() as folder:
          ...     loaded = jaxsolve.GameTree.load(tree.save(Path(folder) / "kuhn.npz"))
          >>> loaded.sizes == tree.sizes, loaded.names == tree.names
          (True, True)
          >>> bool((loaded.utilities == tree.utilities).all())
          True
        """
        if not isinstance(path, (str, os.PathLike)):
            raise ArgumentTypeError(f"GameTree.load: path must be a file name, got "
                                    f"{type(path).__name__}")
        path = Path(path)
        tree = GameTree(**tree_file.read(path))
        validate_shapes(tree, where=str(path))
        validate_values(tree, where=str(path), structure=check_structure)
        tree = with_layout(tree)
        tree_file.check_utility_sum(tree, path)
        return tree


def _dtype(value) -> np.dtype:
    return np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype


# The arrays the layout is read off.
_LAYOUT_FROM = ("infoset_player", "infoset_depth", "legal", "infoset_parent",
                "infoset_ancestors", "terminal_last")


def with_layout(tree: GameTree, costs: SlotCosts | None = None) -> GameTree:
    """`tree` with its `layout` derived from its concrete arrays.

    Args:
      tree: a tree with concrete infoset arrays and `terminal_last`.
      costs: the `SlotCosts` the leaf slots are laid out for; None for the default
        backend's (`jaxsolve.tree.layout.slot_costs`).

    Returns:
      The tree with `layout` set (`jaxsolve.tree.layout.derive`).
    """
    return dataclasses.replace(tree, layout=derive(
        tree.legal, tree.infoset_player, tree.infoset_depth, tree.infoset_parent,
        tree.infoset_ancestors, tree.terminal_last, tree.sizes.perfect_recall, costs))


def with_observed_utility_sum(tree: GameTree) -> GameTree:
    """`tree` with `sizes.utility_sum` read off its concrete utilities.

    Args:
      tree: a tree with concrete `utilities`.

    Returns:
      The tree with `sizes.utility_sum` set: for a batch, the sum all its games
      share, None if they differ or any is general-sum.
    """
    return dataclasses.replace(tree, sizes=dataclasses.replace(
        tree.sizes, utility_sum=observed_utility_sum(tree.utilities)))


jax.tree_util.register_dataclass(
    GameTree, data_fields=list(ARRAY_FIELDS), meta_fields=["sizes", "names", "terminal_axis"])
