"""The checks of a GameTree's arrays against its sizes and against one another.

`validate_shapes` compares every array's shape with the one its sizes give;
`validate_values` checks what shapes cannot (dtypes, index ranges, finite numbers,
chance rows that are distributions, and, through `jaxsolve.tree.structure`, that the
arrays describe one game); `validate_numbers` checks the numbers alone. Eager NumPy
on concrete arrays, raising `GameError` naming where the tree came from.

The functions take a `jaxsolve.GameTree` and read its fields; they do not import the
type, since `GameTree`'s own methods (`replace`, `load`) run these checks.
"""

from __future__ import annotations

import numpy as np

from jaxsolve.errors import ArgumentError, GameError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree.sizes import (BOOL_FIELDS, HISTORY_FIELDS, NUMBER_FIELDS, SAVED_FIELDS,
                                 TreeSizes, array_shapes)
from jaxsolve.tree.structure import check_structure

_PROB_SUM_TOLERANCE = 1e-4  # float32 trees (the builders') sum a row to 1 within ~1e-6


def validate_shapes(tree, where: str = "GameTree", batch_ok: bool = True) -> None:
    """Checks every saved array of `tree` against its static sizes, and the infoset
    names' count (the `layout` is derived from them, after these checks).

    Args:
      tree: a GameTree; arrays `without_histories` dropped are skipped.
      where: what messages name first: a function's name or a file's path.
      batch_ok: whether leading batch axes (`stack`, `sweep`) are allowed.

    Raises:
      GameError: an array's shape, or the number of infoset names, does not match.
    """
    s = tree.sizes
    for field, shape in array_shapes(s).items():
        if getattr(tree, field) is None and field in HISTORY_FIELDS:
            continue
        got = tuple(np.shape(getattr(tree, field)))
        if got[len(got) - len(shape):] != shape or len(got) < len(shape):
            raise GameError(f"{where}: array {field!r} has shape {got}, expected {shape}")
        if len(got) > len(shape) and not batch_ok:
            raise GameError(f"{where}: array {field!r} has shape {got}, expected "
                            f"{shape}: a batch of {got[0]} trees (jaxsolve.sweep or "
                            "jaxsolve.stack), where one game belongs")
    if len(tree.names.infosets) != s.num_infosets:
        raise GameError(f"{where}: {len(tree.names.infosets)} infoset names for {s.num_infosets} infosets")


def validate_values(tree, where: str = "GameTree", structure: bool = True) -> None:
    """Checks what `validate_shapes` cannot.

    Dtypes, every index within its range (the padding sentinels included), finite
    utilities, chance rows that are distributions, a legal action at every infoset,
    consistent level offsets, and that the arrays describe one game: the history arrays
    one breadth-first tree, the sequence-form arrays the ones its histories give
    (`jaxsolve.tree.structure`). Eager NumPy, for trees read from files (`GameTree.load`);
    leading batch axes (`stack`, `sweep`) are allowed.

    Args:
      tree: a GameTree whose shapes are checked.
      where: what messages name first: a function's name or a file's path.
      structure: whether to run the structure check of `jaxsolve.tree.structure`.

    Raises:
      GameError: naming `where` and the array.
    """
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


def validate_numbers(tree, where: str) -> None:
    """The part of `validate_values` about the numbers alone.

    Finite utilities, chance rows that are distributions over the outcomes the tree
    has, for a tree whose indices are known good; leading batch axes are allowed.

    Args:
      tree: a GameTree.
      where: what messages name first: a function's name or a file's path.

    Raises:
      GameError: naming `where` and the array.
    """
    arrays = _present_arrays(tree)
    _check_numbers(arrays["utilities"], arrays["chance_probs"], where)
    _check_chance_support(arrays, tree.sizes, where)


def _present_arrays(tree) -> dict[str, np.ndarray]:
    """The tree's saved arrays as NumPy, without those `without_histories` dropped
    (the derived ones are built from these, after their checks)."""
    return {f: np.asarray(getattr(tree, f)) for f in SAVED_FIELDS
            if getattr(tree, f) is not None}


def require_histories(tree, where: str) -> None:
    """Refuses a tree from `without_histories` where the history arrays are read.

    Args:
      tree: a GameTree.
      where: the public function's name, which starts the message.

    Raises:
      ArgumentError: the tree lacks its history arrays.
    """
    if not tree.has_histories:
        raise ArgumentError(f"{where}: needs the tree's histories, which this tree was built "
                            "without (without_histories, or a builder's histories=False): "
                            "build the full tree")


def _first(mask: np.ndarray) -> list[int]:
    return np.argwhere(mask)[0].tolist()


def kind_error(field: str, dtype: np.dtype) -> str | None:
    """What is wrong with an array of `dtype` as the tree's array `field`.

    Args:
      field: a GameTree array's name.
      dtype: the dtype given for it.

    Returns:
      "has dtype ..., expected ..." or None where the kind fits (bool `legal`,
      integer or float numbers, integer indices).
    """
    if field in BOOL_FIELDS:
        ok, expected = dtype == np.bool_, "bool"
    elif field in NUMBER_FIELDS:
        ok = np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)
        expected = "real numbers (float)"
    else:
        ok, expected = np.issubdtype(dtype, np.integer), "integers (indices)"
    return None if ok else f"has dtype {dtype}, expected {expected}"


def _check_dtypes(arrays: dict[str, np.ndarray], where: str) -> None:
    for field, a in arrays.items():
        kind = kind_error(field, a.dtype)
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


def actions_to(parent: np.ndarray, parent_action: np.ndarray, node: int) -> list[int]:
    """The actions (chance outcomes included) from the root to `node`.

    Args:
      parent: [N] the parent of each history.
      parent_action: [N] the action from the parent.
      node: a history id.

    Returns:
      The actions, root first.
    """
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
        path = actions_to(one(arrays["parent"], 1), one(arrays["parent_action"], 1), node)
        raise GameError(f"{where}: array 'chance_probs' gives outcome {outcome} of row "
                        f"{at[:-1]} (the chance node after actions {path}) probability "
                        f"{probs[tuple(at)]:.6g}, but the tree has no subtree for it: the "
                        "game did not list that outcome there when it was compiled (list it "
                        "in chance_outcomes(), with probability 0 if need be, and compile "
                        "again)")
