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
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsolve import npz
from jaxsolve.errors import ArgumentError, ArgumentTypeError, CheckpointNotTreeError, GameError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree_structure import check_structure

_FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class TreeSizes:
    """Static sizes: part of the compiled program, identical across a sweep.

    `utility_sum` is the exception: a fact about the utilities, not the shapes, which
    no array computation reads (listings, saved files and the OpenSpiel view do). It
    is left out of equality and hashing, so a tree whose payoffs turn general-sum
    shares its compiled programs, and its batch, with the zero-sum original; a tree
    returned *out of* a jitted function keeps the one traced first."""

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
    # infoset_blocks[p][d] = (start, stop): the ids of player p's infosets with d own
    # earlier decisions, when every such group is one contiguous range (as the
    # builders and level-by-level numberings give); None otherwise. Derived from
    # the arrays (`infoset_blocks`), never saved; lets the sequence-form backups
    # work level by level on slices instead of passing over every infoset per level.
    infoset_blocks: tuple[tuple[tuple[int, int], ...], ...] | None = None

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

# What only the history view and the per-leaf paths use (environments, samplers,
# the structure check, saved files). A full-width solve or evaluation of a game with
# perfect recall reads none of them: `GameTree.without_histories` drops them.
HISTORY_FIELDS = ("node_player", "node_index", "children", "parent", "parent_action",
                  "terminal_node", "terminal_sequences")

# The per-terminal arrays and the axis of one tree's array that runs over terminals
# (`distributed.shard_tree` pads and splits these; `save` strips its padding).
TERMINAL_DIM = {"utilities": 0, "terminal_node": 0, "terminal_sequences": 1,
                "terminal_last": 1, "terminal_chance": 0}


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

    Histories:
        node_player [N] int32: the player to move, CHANCE (-1) or TERMINAL (-4).
        node_index [N] int32: the node's infoset id, row of `chance_probs` or row of
            `utilities`, by kind.
        children [N, max(A, Ac)] int32: the child per action slot, -1 where illegal.
        parent, parent_action [N] int32: -1 at the root.
    Information sets:
        infoset_player [I] int32; legal [I, A] bool.
        infoset_parent [I] int32: the player's own parent sequence (row * A + action),
            `sizes.empty_sequence` at a root infoset.
        infoset_ancestors [I, D] int32: own earlier sequences, nearest first (column 0
            is `infoset_parent`), padded with the empty one.
        infoset_depth [I] int32: the number of own earlier decisions.
    Chance:
        chance_probs [C, Ac] float: outcome probabilities, 0 where impossible.
    Terminals:
        utilities [Z, P] float: every player's payoff.
        terminal_node [Z] int32: the history of each terminal.
        terminal_sequences [P, Z, L] int32: each player's own sequences root to leaf.
        terminal_last [P, Z] int32: the last of them (the empty sequence if none).
        terminal_chance [Z, Lc] int32: chance outcomes on the way, row * Ac + a,
            padded with C * Ac.
    Static (not arrays; part of the jit cache key):
        sizes (`TreeSizes`): the counts above, per-level offsets, perfect recall per
            player, the constant sum of the utilities (None if general-sum).
        names (`TreeNames`): the game's name, infoset strings, action names.
        terminal_axis (tuple of mesh axis names): the axes this tree's terminals are
            split over, inside `jaxsolve.distributed`'s `shard_map` only (it sets
            them); () for a tree holding all its terminals, as everywhere else.
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
        without building the paths at all."""
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
            "depth": len(s.level_offsets) - 2,  # actions in the longest history
            "perfect_recall": list(s.perfect_recall),
            "zero_sum": s.utility_sum == 0.0,
        }

    def renamed(self, game: str) -> "GameTree":
        """The same tree under another game name, e.g. to `stack` variants of a game
        whose names list their parameters (OpenSpiel's do) though only payoffs differ."""
        if not isinstance(game, str) or not game:
            raise ArgumentTypeError(f"GameTree.renamed: game must be a non-empty str, got "
                                    f"{game!r}")
        return dataclasses.replace(
            self, names=TreeNames.make(game, self.names.infosets, self.names.actions))

    def replace(self, **changes) -> "GameTree":
        """A copy with some arrays replaced, e.g. other utilities or chance
        probabilities: one point of a sweep (`jaxsolve.sweep` builds many at once).

        Each new array must have the shape of the one it replaces (no batch axis:
        `sweep` and `stack` build batches) and the same kind (float numbers, integer
        indices, bool `legal`). Concrete arrays are also checked as `GameTree.load`
        checks a file's: utilities finite, each chance row a distribution over the
        outcomes the tree has (an outcome the game did not list in chance_outcomes()
        when compiled has no subtree, so it cannot be given weight later; one listed
        with probability 0 has), indices in range; and
        `sizes.utility_sum` follows new utilities (None once they are general-sum).
        Traced arrays (under jit, grad or vmap) are checked by shape and dtype only,
        and `utility_sum` stays as it was. Raises `jaxsolve.ArgumentError` (or
        `ArgumentTypeError` for a wrong kind) naming the array."""
        where = "GameTree.replace"
        unknown = sorted(set(changes) - set(_ARRAY_FIELDS))
        if unknown:
            raise ArgumentError(f"{where}: {', '.join(unknown)} cannot be replaced; the "
                                f"arrays are {', '.join(_ARRAY_FIELDS)} (sizes and names "
                                "follow from the game: compile it again to change them)")
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
            kind = _kind_error(field, _dtype(value))
            if kind:
                raise ArgumentTypeError(f"{where}: {field} {kind}")
        tree = dataclasses.replace(self, **changes)
        if any(isinstance(v, jax.core.Tracer) for v in changes.values()):
            if {"infoset_player", "infoset_depth"} & set(changes):  # unknown: not used
                tree = dataclasses.replace(tree, sizes=dataclasses.replace(
                    tree.sizes, infoset_blocks=None))
            return tree
        try:
            if set(changes) <= set(_NUMBER_FIELDS):
                validate_numbers(tree, where)  # the indices are the tree's own, checked
            else:
                validate_values(tree, where)
        except GameError as e:
            raise ArgumentError(str(e)) from None
        if {"infoset_player", "infoset_depth"} & set(changes):
            tree = with_infoset_blocks(tree)
        return with_observed_utility_sum(tree) if "utilities" in changes else tree

    def chance_histories(self) -> list[list[int]]:
        """Which chance node each row of `chance_probs` is: row c belongs to the node
        reached by the actions `chance_histories()[c]` from the root (chance outcomes
        included), e.g. to pick the rows a sweep changes (host-side, one tree)."""
        require_histories(self, "GameTree.chance_histories")
        validate_shapes(self, "GameTree.chance_histories", batch_ok=False)
        player, index = np.asarray(self.node_player), np.asarray(self.node_index)
        parent, action = np.asarray(self.parent), np.asarray(self.parent_action)
        nodes = np.nonzero(player == CHANCE)[0]
        rows = [[] for _ in range(self.sizes.num_chance)]
        for node in nodes:
            rows[int(index[node])] = _path(parent, action, int(node))
        return rows

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Writes the tree to one `.npz` file that loads without any game code. A batch
        (`sweep`, `stack`) is saved as one and loads as one (`jaxsolve.batch_axes`
        gives its `in_axes` back). A tree placed by `distributed.shard_tree` is saved
        as the game it holds, without the inert terminals that pad it to the mesh.
        A name not ending in `.npz` gets it appended ("point_1.5" writes
        "point_1.5.npz", not "point_1.npz"); returns the path written. The write is
        atomic (`jaxsolve.npz.write`): an interrupted save leaves the old file intact."""
        require_histories(self, "GameTree.save")
        path = Path(path)
        if path.suffix != ".npz":  # appended, not substituted: "1.5" and "1.25" differ
            path = path.with_name(path.name + ".npz")
        arrays = {f: np.asarray(getattr(self, f)) for f in _ARRAY_FIELDS}
        sizes = _without_mesh_padding(arrays, self.sizes)
        meta = {
            "format_version": _FORMAT_VERSION,
            "sizes": {k: v for k, v in dataclasses.asdict(sizes).items()
                      if k != "infoset_blocks"},  # derived again at load
            "game": self.names.game,
            "infosets": list(self.names.infosets),
            "actions": [list(a) for a in self.names.actions],
        }
        return npz.write(path, {"__meta__": np.array(json.dumps(meta)), **arrays}, compress=True)

    @staticmethod
    def load(path: str | Path, *, check_structure: bool = True) -> "GameTree":
        """Reads a tree written by `save`; raises GameError naming the file and what is
        wrong with it (see `validate_shapes` and `validate_values`).

        `check_structure=False` skips only the check that the arrays describe one game
        (`jaxsolve.tree_structure`; shapes, dtypes, ranges and numbers are always
        checked), for big files you wrote yourself: it takes about as long as reading
        the file (30 s for 33M histories on 2 cores)."""
        if not isinstance(path, (str, os.PathLike)):
            raise ArgumentTypeError(f"GameTree.load: path must be a file name, got "
                                    f"{type(path).__name__}")
        path = Path(path)
        meta, arrays = _read_tree_file(path)
        _check_file_dtypes(arrays, path)
        tree = GameTree(**arrays, sizes=_sizes_from(meta, path), names=_names_from(meta, path))
        validate_shapes(tree, where=str(path))
        validate_values(tree, where=str(path), structure=check_structure)
        tree = with_infoset_blocks(tree)
        observed = observed_utility_sum(tree.utilities)
        if tree.sizes.utility_sum is not None and (
                observed is None or abs(observed - tree.sizes.utility_sum) > 1e-6):
            raise GameError(f"{path}: sizes.utility_sum is {tree.sizes.utility_sum}, but the "
                            "utilities do not sum to it at every terminal")
        return tree


def _without_mesh_padding(arrays: dict[str, np.ndarray], sizes: TreeSizes) -> TreeSizes:
    """Drops, in place, the trailing terminals `distributed.shard_tree` adds (history
    -1, no game of their own); returns the sizes of what is left."""
    nodes = arrays["terminal_node"].reshape(-1, sizes.num_terminals)
    real = int((nodes[0] >= 0).sum()) if nodes.size else 0
    if real == sizes.num_terminals or not (nodes[:, real:] == -1).all():
        return sizes  # no padding (or not trailing: `load` names what is wrong)
    shapes = array_shapes(sizes)
    for field, dim in TERMINAL_DIM.items():
        axis = arrays[field].ndim - len(shapes[field]) + dim
        arrays[field] = np.take(arrays[field], np.arange(real), axis=axis)
    return dataclasses.replace(sizes, num_terminals=real)


def infoset_blocks(infoset_player, infoset_depth, num_players: int):
    """`TreeSizes.infoset_blocks` of these arrays ([..., I] each; a batch's games share
    them, the first is read): for each player, the (start, stop) id range of its
    infosets at own depth 0, 1, ..., or None when some (player, depth) group is not
    one contiguous range of ids (host-side; concrete arrays)."""
    player = np.asarray(infoset_player).reshape(-1, np.shape(infoset_player)[-1])[0]
    depth = np.asarray(infoset_depth).reshape(-1, np.shape(infoset_depth)[-1])[0]
    if player.size == 0:
        return tuple(() for _ in range(num_players))
    group = player.astype(np.int64) * (int(depth.max()) + 1) + depth
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    if len(starts) != len(np.unique(group)):
        return None
    stops = np.r_[starts[1:], player.size]
    ranges = {(int(player[a]), int(depth[a])): (int(a), int(b)) for a, b in zip(starts, stops)}
    blocks = []
    for p in range(num_players):
        own = sorted(d for q, d in ranges if q == p)
        if own != list(range(len(own))):  # a depth with no infoset: not a player's tree
            return None
        blocks.append(tuple(ranges[p, d] for d in own))
    return tuple(blocks)


def with_infoset_blocks(tree: GameTree) -> GameTree:
    """`tree` with `sizes.infoset_blocks` read off its concrete infoset arrays."""
    blocks = infoset_blocks(tree.infoset_player, tree.infoset_depth, tree.sizes.num_players)
    return dataclasses.replace(tree, sizes=dataclasses.replace(tree.sizes,
                                                               infoset_blocks=blocks))


def with_observed_utility_sum(tree: GameTree) -> GameTree:
    """`tree` with `sizes.utility_sum` read off its concrete utilities (for a batch, the
    sum all its games share, None if they differ or any is general-sum)."""
    return dataclasses.replace(tree, sizes=dataclasses.replace(
        tree.sizes, utility_sum=observed_utility_sum(tree.utilities)))


def observed_utility_sum(utilities) -> float | None:
    """The sum every terminal's returns share, over any leading batch axes (to 1e-9),
    or None where they differ: a general-sum game (host-side; concrete arrays)."""
    sums = np.asarray(utilities, np.float64).sum(axis=-1).reshape(-1)
    if sums.size and np.allclose(sums, sums[0], atol=1e-9):
        return float(sums[0])
    return None


# ---------------------------------------------------------------------- reading files
_META_KEYS = ("format_version", "sizes", "game", "infosets", "actions")
# What marks a solver checkpoint (`jaxsolve.checkpoint`), jaxsolve's other .npz file:
# the record of its state's type (format 2), or CFRState's arrays (format 1, which
# had no such record).
CHECKPOINT_STATE_KEY = "__state__"
CHECKPOINT_V1_FIELDS = ("regrets", "average", "average_carry", "prediction", "iteration",
                        "total_weight", "weight_scale")


def is_checkpoint(files: list[str]) -> bool:
    """Whether an .npz archive with these member names is a solver checkpoint."""
    return CHECKPOINT_STATE_KEY in files or set(CHECKPOINT_V1_FIELDS) <= set(files)


def _read_tree_file(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The metadata and the arrays of a saved tree."""
    with npz.read(path, GameError, kind="saved tree") as data:
        if "__meta__" not in data.files:
            raise GameError(f"{path}: not a jaxsolve GameTree (no __meta__ record)")
        meta = _parse_meta(npz.member(data, "__meta__", path, GameError), path)
        _refuse_checkpoint(data.files, meta, path)
        if meta.get("format_version") != _FORMAT_VERSION:
            raise GameError(f"{path}: format version {meta.get('format_version')}, "
                            f"this jaxsolve reads {_FORMAT_VERSION}")
        missing = [k for k in _META_KEYS if k not in meta]
        if missing:
            raise GameError(f"{path}: the metadata lacks {', '.join(missing)}")
        missing = [f for f in _ARRAY_FIELDS if f not in data.files]
        if missing:
            raise GameError(f"{path}: missing arrays {', '.join(missing)}")
        return meta, {f: npz.member(data, f, path, GameError) for f in _ARRAY_FIELDS}


# The dtypes a tree file stores: part of its format. A file whose numbers were cast to
# a narrower type (float16 probabilities) would otherwise load as a slightly
# different game without a word.
_FILE_DTYPES = {"numbers": ("float32", "float64"), "indices": ("int32", "int64")}


def _check_file_dtypes(arrays: dict[str, np.ndarray], path: Path) -> None:
    """Refuses numbers or indices of a width `save` never writes (an array of the
    wrong kind altogether is named by `validate_values`)."""
    for field, a in arrays.items():
        if field in _BOOL_FIELDS or _kind_error(field, a.dtype):
            continue
        kind = "numbers" if field in _NUMBER_FIELDS else "indices"
        if a.dtype.name not in _FILE_DTYPES[kind]:
            raise GameError(f"{path}: array {field!r} has dtype {a.dtype.name}; a tree file "
                            f"stores {kind} as {' or '.join(_FILE_DTYPES[kind])} "
                            "(GameTree.save writes them so)")


def _parse_meta(record: np.ndarray, path: Path) -> dict:
    try:
        meta = json.loads(str(record))
    except json.JSONDecodeError as e:
        raise GameError(f"{path}: its metadata (__meta__) is not JSON ({e})") from None
    if not isinstance(meta, dict):
        raise GameError(f"{path}: its metadata (__meta__) is not a JSON object")
    return meta


def _refuse_checkpoint(files: list[str], meta: dict, path: Path) -> None:
    """A solver checkpoint is an .npz with a __meta__ record too; say what it is (the
    command line adds the command that resumes its run, from `meta`)."""
    if is_checkpoint(files):
        raise CheckpointNotTreeError(
            f"{path}: this is a solver checkpoint, not a saved tree; read it with "
            f"jaxsolve.checkpoint.load_checkpoint({str(path)!r})", path, meta)


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


# TreeSizes field -> (test of its JSON value, what it must be)
_SIZE_RULES = {
    **{f.name: (_is_count, "an integer >= 0") for f in dataclasses.fields(TreeSizes)
       if f.name != "infoset_blocks"},
    "num_players": (lambda v: _is_count(v) and v >= 1, "an integer >= 1"),
    "level_offsets": (lambda v: isinstance(v, list) and all(map(_is_count, v)),
                      "a list of integers >= 0"),
    "perfect_recall": (lambda v: isinstance(v, list) and all(isinstance(b, bool) for b in v),
                       "a list of booleans"),
    "utility_sum": (lambda v: v is None or (isinstance(v, (int, float))
                                            and not isinstance(v, bool)), "a number or null"),
}


def _sizes_from(meta: dict, path: Path) -> TreeSizes:
    sizes = meta["sizes"]
    if not isinstance(sizes, dict):
        raise GameError(f"{path}: metadata 'sizes' is {type(sizes).__name__}, expected an object")
    unknown = [k for k in sizes if k not in _SIZE_RULES]
    missing = [k for k in _SIZE_RULES if k not in sizes]
    if unknown or missing:
        raise GameError(f"{path}: metadata 'sizes' " + "; ".join(
            [f"has unknown field(s) {', '.join(unknown)}"] * bool(unknown)
            + [f"lacks field(s) {', '.join(missing)}"] * bool(missing)))
    for key, (ok, expected) in _SIZE_RULES.items():
        if not ok(sizes[key]):
            raise GameError(f"{path}: metadata sizes.{key} is {sizes[key]!r}, expected {expected}")
    return TreeSizes(**{**sizes, "level_offsets": tuple(sizes["level_offsets"]),
                        "perfect_recall": tuple(sizes["perfect_recall"])})


def _names_from(meta: dict, path: Path) -> TreeNames:
    game, infosets, actions = meta["game"], meta["infosets"], meta["actions"]
    if not isinstance(game, str):
        raise GameError(f"{path}: metadata 'game' is {game!r}, expected a string")
    if not (isinstance(infosets, list) and all(isinstance(s, str) for s in infosets)):
        raise GameError(f"{path}: metadata 'infosets' is not a list of strings")
    if not (isinstance(actions, list) and all(
            isinstance(row, list) and all(isinstance(s, str) for s in row) for row in actions)):
        raise GameError(f"{path}: metadata 'actions' is not a list of lists of strings")
    return TreeNames.make(game, infosets, actions)


def array_shapes(s: TreeSizes) -> dict[str, tuple[int, ...]]:
    """The shape of every array of one game of sizes `s` (a batch adds leading axes)."""
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


def validate_shapes(tree: GameTree, where: str = "GameTree", batch_ok: bool = True) -> None:
    """Checks every array against the static sizes, allowing leading batch axes (`stack`,
    `sweep`) only with `batch_ok`; raises GameError on mismatch."""
    s = tree.sizes
    for field, shape in array_shapes(s).items():
        if getattr(tree, field) is None and field in HISTORY_FIELDS:
            continue
        got = tuple(np.shape(getattr(tree, field)))
        if got[len(got) - len(shape):] != shape or len(got) < len(shape):
            raise GameError(f"{where}: array {field!r} has shape {got}, expected {shape}")
        if len(got) > len(shape) and not batch_ok:
            raise GameError(f"{where}: array {field!r} has shape {got}, expected {shape}: "
                            f"a batch of {got[0]} trees (jaxsolve.sweep or jaxsolve.stack), "
                            "where one game belongs")
    if len(tree.names.infosets) != s.num_infosets:
        raise GameError(f"{where}: {len(tree.names.infosets)} infoset names for {s.num_infosets} infosets")


# ---------------------------------------------------------------------- values
_BOOL_FIELDS = ("legal",)
_NUMBER_FIELDS = ("chance_probs", "utilities")  # the other fields hold indices
_PROB_SUM_TOLERANCE = 1e-4  # float32 trees (the builders') sum a row to 1 within ~1e-6


def validate_values(tree: GameTree, where: str = "GameTree", structure: bool = True) -> None:
    """Checks what `validate_shapes` cannot: dtypes, every index within its range (the
    padding sentinels included), finite utilities, chance rows that are
    distributions, a legal action at every infoset, consistent level offsets, and
    that the arrays describe one game: the history arrays one breadth-first tree, the
    sequence-form arrays the ones its histories give (`tree_structure`; skipped
    without `structure`). Raises
    GameError naming `where` and the field. Eager NumPy, for trees read from files
    (`GameTree.load`); leading batch axes (`stack`, `sweep`) are allowed."""
    arrays = _present_arrays(tree)
    _check_dtypes(arrays, where)
    _check_level_offsets(tree.sizes, where)
    for field, (lo, hi, meaning) in _index_ranges(tree.sizes).items():
        if field in arrays:
            _check_range(arrays[field], field, lo, hi, meaning, where)
    if not tree.has_histories:  # nothing more to compare them with
        _check_numbers(arrays["utilities"], arrays["chance_probs"], where)
        _check_chance_support(arrays, tree.sizes, where)
        return
    _check_node_index(arrays["node_player"], arrays["node_index"], tree.sizes, where)
    _check_numbers(arrays["utilities"], arrays["chance_probs"], where)
    empty = ~arrays["legal"].any(axis=-1)
    if empty.any():
        at = _first(empty)
        raise GameError(f"{where}: infoset {at[-1]} ({tree.names.infosets[at[-1]]!r}) has no "
                        f"legal action: row {at} of 'legal' is all False")
    if structure:
        check_structure(arrays, tree.sizes, array_shapes(tree.sizes), tree.names.infosets, where)
    _check_chance_support(arrays, tree.sizes, where)


def validate_numbers(tree: GameTree, where: str) -> None:
    """The part of `validate_values` about the numbers alone (finite utilities, chance
    rows that are distributions over the outcomes the tree has), for a tree whose
    indices are known good; leading batch axes are allowed."""
    arrays = _present_arrays(tree)
    _check_numbers(arrays["utilities"], arrays["chance_probs"], where)
    _check_chance_support(arrays, tree.sizes, where)


def _present_arrays(tree: GameTree) -> dict[str, np.ndarray]:
    """The tree's arrays as NumPy, without those `without_histories` dropped."""
    return {f: np.asarray(getattr(tree, f)) for f in _ARRAY_FIELDS
            if getattr(tree, f) is not None}


def require_histories(tree: GameTree, where: str) -> None:
    """Refuses a tree from `without_histories` where the history arrays are read."""
    if not tree.has_histories:
        raise ArgumentError(f"{where}: needs the tree's histories, which this tree was built "
                            "without (without_histories, or a builder's histories=False): "
                            "build the full tree")


def _first(mask: np.ndarray) -> list[int]:
    return np.argwhere(mask)[0].tolist()


def _dtype(value) -> np.dtype:
    return np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype


def _kind_error(field: str, dtype: np.dtype) -> str | None:
    """What is wrong with an array of `dtype` as `field`, or None."""
    if field in _BOOL_FIELDS:
        ok, expected = dtype == np.bool_, "bool"
    elif field in _NUMBER_FIELDS:
        ok = np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)
        expected = "real numbers (float)"
    else:
        ok, expected = np.issubdtype(dtype, np.integer), "integers (indices)"
    return None if ok else f"has dtype {dtype}, expected {expected}"


def _check_dtypes(arrays: dict[str, np.ndarray], where: str) -> None:
    for field, a in arrays.items():
        kind = _kind_error(field, a.dtype)
        if kind:
            raise GameError(f"{where}: array {field!r} {kind}")


def _check_level_offsets(s: TreeSizes, where: str) -> None:
    offsets = np.asarray(s.level_offsets)
    if (len(offsets) < 2 or offsets[0] != 0 or offsets[-1] != s.num_nodes
            or np.any(np.diff(offsets) < 0)):
        raise GameError(f"{where}: sizes.level_offsets must rise from 0 to num_nodes="
                        f"{s.num_nodes}, got {list(s.level_offsets)[:8]}"
                        f"{'...' if len(offsets) > 8 else ''}")
    if len(s.perfect_recall) != s.num_players:
        raise GameError(f"{where}: sizes.perfect_recall has {len(s.perfect_recall)} entries "
                        f"for {s.num_players} players")


def _index_ranges(s: TreeSizes) -> dict[str, tuple[int, int, str]]:
    """field -> (lowest, highest + 1, what its entries are), for the index arrays but
    node_player and node_index (whose range depends on the node's kind)."""
    empty, no_outcome = s.empty_sequence, s.num_chance * s.num_chance_outcomes
    sequence = (0, empty + 1, f"sequence ids, {empty} for the empty sequence")
    return {
        "children": (-1, s.num_nodes, "node ids, -1 where there is no child"),
        "parent": (-1, s.num_nodes, "node ids, -1 at the root"),
        "parent_action": (-1, max(s.num_actions, s.num_chance_outcomes),
                          "actions, -1 at the root"),
        "infoset_player": (0, s.num_players, "players"),
        "infoset_parent": sequence,
        "infoset_ancestors": sequence,
        "infoset_depth": (0, s.max_infoset_depth + 1, "numbers of earlier own decisions"),
        "terminal_node": (0, s.num_nodes, "node ids"),
        "terminal_sequences": sequence,
        "terminal_last": sequence,
        "terminal_chance": (0, no_outcome + 1, f"chance outcome ids, {no_outcome} as padding"),
    }


def _check_range(a: np.ndarray, field: str, lo: int, hi: int, meaning: str, where: str):
    if a.size == 0 or (a.min() >= lo and a.max() < hi):  # no temporaries on big trees
        return
    at = _first((a < lo) | (a >= hi))
    raise GameError(f"{where}: array {field!r} holds {a[tuple(at)]} at {at}, outside "
                    f"[{lo}, {hi - 1}] ({meaning})")


def _check_node_index(player: np.ndarray, index: np.ndarray, s: TreeSizes, where: str):
    decision = (player >= 0) & (player < s.num_players)
    kinds = decision | (player == CHANCE) | (player == TERMINAL)
    if not kinds.all():
        at = _first(~kinds)
        raise GameError(f"{where}: array 'node_player' holds {player[tuple(at)]} at {at}; "
                        f"expected a player 0..{s.num_players - 1}, CHANCE ({CHANCE}) or "
                        f"TERMINAL ({TERMINAL})")
    player, index = np.broadcast_arrays(player, index)  # one of them may be batched
    for kind, mask, count, rows in (
            ("decision", decision, s.num_infosets, "an infoset id"),
            ("chance", player == CHANCE, s.num_chance, "a row of chance_probs"),
            ("terminal", player == TERMINAL, s.num_terminals, "a row of utilities")):
        bad = np.broadcast_to(mask, index.shape) & ((index < 0) | (index >= count))
        if bad.any():
            at = _first(bad)
            raise GameError(f"{where}: array 'node_index' holds {index[tuple(at)]} at {at}, "
                            f"a {kind} node; expected {rows} in [0, {count - 1}]")


def _check_numbers(utilities: np.ndarray, chance_probs: np.ndarray, where: str) -> None:
    for field, a in (("utilities", utilities), ("chance_probs", chance_probs)):
        if not np.isfinite(a).all():
            at = _first(~np.isfinite(a))
            raise GameError(f"{where}: array {field!r} holds {a[tuple(at)]} at {at}; "
                            "expected finite numbers")
    outside = (chance_probs < 0) | (chance_probs > 1)
    if outside.any():
        at = _first(outside)
        raise GameError(f"{where}: array 'chance_probs' holds {chance_probs[tuple(at)]} at "
                        f"{at}, outside [0, 1] (probabilities)")
    sums = chance_probs.sum(axis=-1)
    off = np.abs(sums - 1.0) > _PROB_SUM_TOLERANCE
    if off.any():
        at = _first(off)
        raise GameError(f"{where}: row {at} of 'chance_probs' sums to {sums[tuple(at)]:.9g}, "
                        "not 1")


def _path(parent: np.ndarray, parent_action: np.ndarray, node: int) -> list[int]:
    """The actions (chance outcomes included) from the root to `node`."""
    path = []
    while parent[node] >= 0:
        path.append(int(parent_action[node]))
        node = int(parent[node])
    return path[::-1]


def _check_chance_support(arrays: dict[str, np.ndarray], s: TreeSizes, where: str) -> None:
    """Probability only on outcomes the tree has a subtree for: one the game did not
    list in chance_outcomes() when compiled has none, and mass put on it later would
    vanish. (Outcomes listed with probability 0 are walked and keep their subtree.)"""
    if not s.num_chance:
        return
    one = lambda a, k: a.reshape((-1,) + a.shape[a.ndim - k:])[0]  # the structure is shared
    if "node_player" not in arrays:
        # Without histories: an outcome has a subtree exactly when some leaf lies below
        # it, i.e. when it is on some leaf's chance path.
        on_path = np.zeros(s.num_chance * s.num_chance_outcomes + 1, bool)
        on_path[one(arrays["terminal_chance"], 2).reshape(-1)] = True
        missing = ~on_path[:-1].reshape(s.num_chance, s.num_chance_outcomes)
        bad = (arrays["chance_probs"] > 0) & missing
        if bad.any():
            at = _first(bad)
            raise GameError(f"{where}: array 'chance_probs' gives outcome {at[-1]} of row "
                            f"{at[:-1]} probability {arrays['chance_probs'][tuple(at)]:.6g}, "
                            "but the tree has no subtree for it: the game did not list that "
                            "outcome there when it was compiled")
        return
    player, index = one(arrays["node_player"], 1), one(arrays["node_index"], 1)
    children = one(arrays["children"], 2)
    nodes = np.nonzero(player == CHANCE)[0]
    missing = np.zeros((s.num_chance, s.num_chance_outcomes), bool)
    missing[index[nodes]] = children[nodes, :s.num_chance_outcomes] < 0
    probs = arrays["chance_probs"]
    bad = (probs > 0) & missing
    if bad.any():
        at = _first(bad)
        row, outcome = at[-2], at[-1]
        node = int(nodes[index[nodes] == row][0])
        path = _path(one(arrays["parent"], 1), one(arrays["parent_action"], 1), node)
        raise GameError(f"{where}: array 'chance_probs' gives outcome {outcome} of row "
                        f"{at[:-1]} (the chance node after actions {path}) probability "
                        f"{probs[tuple(at)]:.6g}, but the tree has no subtree for it: the "
                        "game did not list that outcome there when it was compiled (list it "
                        "in chance_outcomes(), with probability 0 if need be, and compile "
                        "again)")


jax.tree_util.register_dataclass(
    GameTree, data_fields=list(_ARRAY_FIELDS), meta_fields=["sizes", "names", "terminal_axis"])
