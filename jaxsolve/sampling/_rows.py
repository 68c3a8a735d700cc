"""The distributions a traversal samples from, one row per node padded to the children
width W: the policy (mixed with uniform exploration at the traverser's own infosets),
chance's probabilities, and which chance nodes the traverser expands. Shared by the
frontier walk, the visit counts' row table and the sparse step."""

from __future__ import annotations

import jax.numpy as jnp

from jaxsolve.tree import GameTree


def _chance_rows(tree: GameTree, dtype):
    """[max(C, 1), W] chance distributions padded to the children width W (at least
    one row, so that gathers stay valid in games without chance)."""
    chance = jnp.asarray(tree.chance_probs, dtype)
    width = tree.children.shape[-1]
    return jnp.pad(chance, ((0, max(1 - chance.shape[0], 0)), (0, width - chance.shape[1])))


def _explore(tree: GameTree, rows, infosets, traverser: int, exploration: float):
    """[K, W] sampling rows at `infosets`: the policy `rows` [K, A], mixed with uniform
    at the traverser's own infosets, padded to the children width W."""
    legal = jnp.asarray(tree.legal)[infosets]
    uniform = legal / legal.sum(axis=-1, keepdims=True)
    mine = (jnp.asarray(tree.infoset_player)[infosets] == traverser)[:, None]
    rows = jnp.where(mine, (1.0 - exploration) * rows + exploration * uniform, rows)
    return _pad_rows(tree, rows)


def _pad_rows(tree: GameTree, rows):
    """[K, A] -> [K, W], zeros in the chance-only action slots."""
    return jnp.pad(rows, ((0, 0), (0, tree.children.shape[-1] - rows.shape[-1])))


def _expand_chance_row(expand_chance, traverser: int):
    return jnp.pad(expand_chance[traverser], (0, max(1 - expand_chance.shape[1], 0)))
