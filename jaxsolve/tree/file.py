"""A GameTree's `.npz` file: what `GameTree.save` writes and `GameTree.load` reads.

A file holds every array of the tree and one JSON record, `__meta__`: the format
version, the sizes and the names (the kernels' `layout` is derived again at load).
`write` writes it (atomically, through `jaxsolve.npz`); `read` reads it back and
checks the record: that the file is a saved tree (not a solver checkpoint), of this
format version, with every array, of the dtypes `write` gives them, and sizes and
names of the right types. It returns the tree's fields: `GameTree.load` builds the
tree from them, checks its arrays (`jaxsolve.tree.checks`) and then, with
`check_utility_sum`, the utility sum the record states. Building the tree is left to
`GameTree.load`, and the functions here take a GameTree without importing the type,
because `jaxsolve.tree.game_tree` imports this module for its `save` and `load`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from jaxsolve import npz
from jaxsolve.errors import CheckpointNotTreeError, GameError
from jaxsolve.tree.checks import kind_error, require_histories
from jaxsolve.tree.sizes import (BOOL_FIELDS, NUMBER_FIELDS, SAVED_FIELDS, TERMINAL_DIM,
                                 TreeNames, TreeSizes, array_shapes, observed_utility_sum)

_FORMAT_VERSION = 1


def write(tree, path: str | Path) -> Path:
    """Writes `tree` to one `.npz` file (`GameTree.save`).

    Args:
      tree: a GameTree with its histories.
      path: the file; `.npz` is appended to a name without it.

    Returns:
      The path written.

    Raises:
      ArgumentError: the tree lacks its histories.
    """
    require_histories(tree, "GameTree.save")
    path = Path(path)
    if path.suffix != ".npz":  # appended, not substituted: "1.5" and "1.25" differ
        path = path.with_name(path.name + ".npz")
    arrays = {f: np.asarray(getattr(tree, f)) for f in SAVED_FIELDS}
    sizes = _without_mesh_padding(arrays, tree.sizes)
    meta = {
        "format_version": _FORMAT_VERSION,
        "sizes": dataclasses.asdict(sizes),
        "game": tree.names.game,
        "infosets": list(tree.names.infosets),
        "actions": [list(a) for a in tree.names.actions],
    }
    return npz.write(path, {"__meta__": np.array(json.dumps(meta)), **arrays}, compress=True)


def read(path: Path) -> dict[str, Any]:
    """A GameTree's fields as the file at `path` records them, the record checked.

    Args:
      path: the file.

    Returns:
      The arrays, `sizes` and `names`, by field name.

    Raises:
      GameError: naming the file and what is wrong.
      CheckpointNotTreeError: the file is a solver checkpoint.
    """
    meta, arrays = _read_tree_file(path)
    _check_file_dtypes(arrays, path)
    return {**arrays, "sizes": _sizes_from(meta, path), "names": _names_from(meta, path)}


def check_utility_sum(tree, path: Path) -> None:
    """Refuses a file whose utilities do not sum to its `sizes.utility_sum` everywhere.

    Args:
      tree: the tree read from the file, its values checked.
      path: the file, for the message.

    Raises:
      GameError: some terminal's utilities do not sum to `sizes.utility_sum`.
    """
    observed = observed_utility_sum(tree.utilities)
    if tree.sizes.utility_sum is not None and (
            observed is None or abs(observed - tree.sizes.utility_sum) > 1e-6):
        raise GameError(f"{path}: sizes.utility_sum is {tree.sizes.utility_sum}, but the "
                        "utilities do not sum to it at every terminal")


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


# ---------------------------------------------------------------------- reading files
_META_KEYS = ("format_version", "sizes", "game", "infosets", "actions")
# What marks a solver checkpoint (`jaxsolve.checkpoint`), jaxsolve's other .npz file:
# the record of its state's type (format 2), or CFRState's arrays (format 1, which
# had no such record).
CHECKPOINT_STATE_KEY = "__state__"
CHECKPOINT_V1_FIELDS = ("regrets", "average", "average_carry", "prediction", "iteration",
                        "total_weight", "weight_scale")


def is_checkpoint(files: list[str]) -> bool:
    """Whether an .npz archive with these member names is a solver checkpoint.

    Args:
      files: the archive's member names.

    Returns:
      True for a checkpoint of either format.
    """
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
        missing = [f for f in SAVED_FIELDS if f not in data.files]
        if missing:
            raise GameError(f"{path}: missing arrays {', '.join(missing)}")
        return meta, {f: npz.member(data, f, path, GameError) for f in SAVED_FIELDS}


# The dtypes a tree file stores: part of its format. A file whose numbers were cast to
# a narrower type (float16 probabilities) would otherwise load as a slightly
# different game without a word.
_FILE_DTYPES = {"numbers": ("float32", "float64"), "indices": ("int32", "int64")}


def _check_file_dtypes(arrays: dict[str, np.ndarray], path: Path) -> None:
    """Refuses numbers or indices of a width `save` never writes (an array of the
    wrong kind altogether is named by `validate_values`)."""
    for field, a in arrays.items():
        if field in BOOL_FIELDS or kind_error(field, a.dtype):
            continue
        kind = "numbers" if field in NUMBER_FIELDS else "indices"
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
    **{f.name: (_is_count, "an integer >= 0") for f in dataclasses.fields(TreeSizes)},
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
