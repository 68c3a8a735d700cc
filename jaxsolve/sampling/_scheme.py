"""The sampling scheme: per traverser, which infosets and chance nodes expand all their
actions and which sample one (host-side masks from the solver's settings), and the
capacity K, the most leaves one sample can reach under it."""

from __future__ import annotations

import jax
import numpy as np
import numpy.typing as npt

from jaxsolve.errors import ArgumentError, ArgumentTypeError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import GameTree


def _host(tree: GameTree, field: str) -> np.ndarray:
    try:
        return np.asarray(getattr(tree, field))
    except jax.errors.TracerArrayConversionError:
        raise ArgumentError(
            "sampling solvers size their frontier from the tree's structure, so "
            "init(tree, key) must run outside jax.jit (under jax.vmap it is fine)") from None


def _per_traverser(mask, rows: int, cols: int, what: str) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ArgumentTypeError(f"{what} must be a boolean array, got dtype {mask.dtype}")
    if mask.shape == (cols,):
        return np.broadcast_to(mask, (rows, cols)).copy()
    if mask.shape != (rows, cols):
        raise ArgumentError(f"{what} has shape {mask.shape}; expected ({cols},) or ({rows}, {cols})")
    return mask


def make_scheme(tree: GameTree, *, expand_own: bool = True, expand_opponents: bool = True,
                expand_chance: bool = False, mask: npt.ArrayLike | None = None,
                chance_mask: npt.ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Expand masks and capacity of a scheme on `tree` (host-side NumPy).

    Args:
      tree: the compiled game.
      expand_own: where no mask is given, whether a traversal of player p expands p's
        own infosets.
      expand_opponents: likewise for the other players' infosets.
      expand_chance: where no chance mask is given, whether traversals expand the
        chance nodes.
      mask: optional bool `[I]` or `[P, I]` (row p: when p traverses), True = expand.
      chance_mask: optional bool `[C]` or `[P, C]`, per chance node.

    Returns:
      (expand `[P, I]` bool, expand_chance `[P, C]` bool, capacity int).

    Raises:
      ArgumentError: a mask of the wrong shape or kind.
    """
    expand, expand_c = scheme_masks(tree, expand_own=expand_own,
                                    expand_opponents=expand_opponents,
                                    expand_chance=expand_chance, mask=mask,
                                    chance_mask=chance_mask)
    return expand, expand_c, capacity(tree, expand, expand_c)


def scheme_masks(tree: GameTree, *, expand_own: bool = True, expand_opponents: bool = True,
                 expand_chance: bool = False, mask: npt.ArrayLike | None = None,
                 chance_mask: npt.ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`make_scheme`'s masks without the capacity (a pass over the tree): cheap enough to
    check a state against.

    Args:
      tree: the compiled game.
      expand_own: as in `make_scheme`.
      expand_opponents: as in `make_scheme`.
      expand_chance: as in `make_scheme`.
      mask: as in `make_scheme`.
      chance_mask: as in `make_scheme`.

    Returns:
      (expand `[P, I]` bool, expand_chance `[P, C]` bool), host NumPy.

    Raises:
      ArgumentError: a mask of the wrong shape or kind.
    """
    s = tree.sizes
    P, I, C = s.num_players, s.num_infosets, s.num_chance
    owner = _host(tree, "infoset_player")
    if mask is None:
        own = owner[None, :] == np.arange(P)[:, None]
        expand = np.where(own, expand_own, expand_opponents)
    else:
        expand = _per_traverser(mask, P, I, "mask")
    if chance_mask is None:
        expand_c = np.full((P, C), bool(expand_chance))
    else:
        expand_c = _per_traverser(chance_mask, P, C, "chance_mask")
    return expand, expand_c


def capacity(tree: GameTree, expand: np.ndarray, expand_chance: np.ndarray) -> int:
    """The most leaves one sample can reach, over all traversers: a leaf counts 1, an
    expanded node the sum over its children, a sampled node their maximum.

    Args:
      tree: the compiled game.
      expand: `[P, I]` bool, the infosets each traverser expands.
      expand_chance: `[P, C]` bool, the chance nodes each traverser expands.

    Returns:
      The capacity K, an int >= 1.
    """
    player = _host(tree, "node_player")
    index = _host(tree, "node_index")
    children = _host(tree, "children")
    offsets = tree.sizes.level_offsets
    decision, chance = player >= 0, player == CHANCE
    most = 1
    for p in range(tree.sizes.num_players):
        expanded = np.zeros(len(player), bool)
        expanded[decision] = expand[p, index[decision]]
        expanded[chance] = expand_chance[p, index[chance]]
        count = np.ones(len(player), np.int64)
        for d in reversed(range(len(offsets) - 1)):  # children lie one level deeper
            lo, hi = offsets[d], offsets[d + 1]
            kids = children[lo:hi]
            below = np.where(kids >= 0, count[np.maximum(kids, 0)], 0)
            inner = player[lo:hi] != TERMINAL
            count[lo:hi] = np.where(inner, np.where(expanded[lo:hi], below.sum(1),
                                                    below.max(1)), 1)
        most = max(most, int(count[0]))
    return most
