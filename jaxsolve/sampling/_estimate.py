"""The estimators: sampled counterfactual values and average-strategy weights of one
traverser from a batch of samples, drawn by frontier walks or as visit counts, and the
choice between the two by their cost."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import sequences as seq
from jaxsolve import validate
from jaxsolve.protocol import CHANCE
from jaxsolve.sampling._rows import _chance_rows, _expand_chance_row, _explore, _pad_rows
from jaxsolve.sampling._walk import _uniforms, walk
from jaxsolve.tree import GameTree
from jaxsolve.visit_counts import SPLITS, visit_counts


class Estimate(NamedTuple):
    """What one batch of samples gives for one traverser.

    Attributes:
      values: `[I, A]` sampled counterfactual values of the traverser (zero elsewhere),
        the mean over the batch.
      reach_weights: `[I]` sum over visited histories h of pi_r(h) / q(h) at every
        decision node (own reach of its player over sampling probability), batch mean.
      touched: `[]` histories visited by the batch.
    """

    values: jax.Array
    reach_weights: jax.Array
    touched: jax.Array


def _leaf_view(tree: GameTree, terminals) -> GameTree:
    """The tree with its terminal arrays restricted to `terminals` (ids into the Z
    axis), so the terminal-view formulas of `sequences` run on sampled leaves only.
    Not `GameTree.replace`, which keeps every shape: this view has other Z."""
    return dataclasses.replace(
        tree, utilities=jnp.asarray(tree.utilities)[terminals],
        terminal_node=jnp.asarray(tree.terminal_node)[terminals],
        terminal_sequences=jnp.asarray(tree.terminal_sequences)[:, terminals],
        terminal_last=jnp.asarray(tree.terminal_last)[:, terminals],
        terminal_chance=jnp.asarray(tree.terminal_chance)[terminals])


def estimate(tree: GameTree, policy: jax.Array, traverser: int, key: jax.Array, *,
             expand: np.ndarray | jax.Array, expand_chance: np.ndarray | jax.Array,
             capacity_: int, batch_size: int = 1, exploration: float = 0.0,
             traversal: str = "frontier", split: str = "systematic") -> Estimate:
    """Sampled counterfactual values of `traverser` under `policy` from `batch_size`
    samples of the scheme.

    The samples are drawn by frontier walks (independent samples) or as visit counts
    (`jaxsolve.visit_counts`). Unbiased: the mean over keys of `values` is
    `sequences.counterfactual_values` of the full tree.

    Args:
      tree: the compiled game.
      policy: `[I, A]` the policy played.
      traverser: the player whose values are estimated.
      key: PRNG key of the samples.
      expand: `[P, I]` bool, the scheme's infoset masks.
      expand_chance: `[P, C]` bool, the scheme's chance masks.
      capacity_: K, static, from `capacity`.
      batch_size: B, the number of samples.
      exploration: weight of the uniform policy mixed into the traverser's sampling
        policy.
      traversal: "frontier" or "counts".
      split: how "counts" splits a count: "systematic" or "multinomial".

    Returns:
      The batch's `Estimate`.

    Raises:
      ArgumentError: an unknown `traversal` or `split`.
    """
    if traversal not in ("frontier", "counts") or split not in SPLITS:
        validate.fail("estimate", f"traversal must be 'frontier' or 'counts' and split one "
                                  f"of {SPLITS}, got {traversal!r} and {split!r} (\"auto\" "
                                  "is resolved by the solver's step, not here)")
    if traversal == "counts":
        return _estimate_counts(tree, policy, traverser, key, expand=expand,
                                expand_chance=expand_chance, batch_size=batch_size,
                                exploration=exploration, split=split)
    dtype = policy.dtype
    rows = lambda i: (_explore(tree, policy[i], i, traverser, exploration),  # noqa: E731
                      _pad_rows(tree, policy[i]))
    uniforms = _uniforms(tree, key, batch_size, capacity_, dtype)
    inner, inner_q, _, leaves, leaf_q, _ = walk(
        tree, rows, _chance_rows(tree, dtype), expand[traverser],
        _expand_chance_row(expand_chance, traverser), capacity_, uniforms)

    leaves = leaves.reshape(-1)
    reached = leaves >= 0
    terminals = jnp.where(reached, jnp.asarray(tree.node_index)[jnp.maximum(leaves, 0)], 0)
    inverse_q = jnp.where(reached, 1.0 / (leaf_q.reshape(-1) * batch_size), 0.0)
    nodes = inner.reshape(-1)
    values, reach_weights = _weighted_estimate(
        tree, _leaf_view(tree, terminals), policy, traverser, inverse_q, nodes,
        1.0 / (inner_q.reshape(-1) * batch_size))
    touched = ((nodes >= 0).sum() + reached.sum()).astype(dtype)
    return Estimate(values, reach_weights, touched)


def _weighted_estimate(tree: GameTree, view: GameTree, policy, traverser: int, leaf_weight,
                       nodes, node_weight):
    """The shared tail of both traversals: counterfactual values over the leaves of
    `view` (the sampled ones, or all), leaf z weighted by `leaf_weight` [Z'] (1/(q B)
    per visit), and the average-strategy weights: `node_weight` summed over the
    decision nodes among `nodes` (ids, -1 for none) per infoset, times own reach.
    Returns (values [I, A], reach_weights [I])."""
    flat = seq.flatten(tree, policy)
    reach = seq.player_reach(view, flat)
    chance = seq.chance_reach(view, policy.dtype)
    weights = seq.leaf_weights(view, reach, chance, traverser) * leaf_weight
    values = seq.counterfactual_values(view, flat, weights, traverser)
    at = jnp.maximum(nodes, 0)
    decision = (nodes >= 0) & (jnp.asarray(tree.node_player)[at] >= 0)
    infoset = jnp.where(decision, jnp.asarray(tree.node_index)[at], 0)
    per_infoset = jax.ops.segment_sum(jnp.where(decision, node_weight, 0.0), infoset,
                                      num_segments=tree.sizes.num_infosets)
    return values, per_infoset * seq.own_reach(tree, flat)


def _row_table(tree: GameTree, policy, traverser: int, expand_row, expand_chance_row,
               exploration: float):
    """The sampling rows of a traversal as one table for `visit_counts`: rows [R, W]
    (the infosets' sampling policies, then the chance distributions, then a zero row
    for terminals), expanded [R] and each node's row [N]."""
    I = tree.sizes.num_infosets
    infosets = jnp.arange(I)
    chance = _chance_rows(tree, policy.dtype)
    rows = jnp.concatenate([_explore(tree, policy, infosets, traverser, exploration), chance,
                            jnp.zeros_like(chance[:1])])
    expanded = jnp.concatenate([expand_row, expand_chance_row, jnp.ones((1,), bool)])
    player, index = jnp.asarray(tree.node_player), jnp.asarray(tree.node_index)
    row_of_node = jnp.where(player >= 0, index,
                            jnp.where(player == CHANCE, I + index, I + chance.shape[0]))
    return rows, expanded, row_of_node


def _estimate_counts(tree: GameTree, policy, traverser: int, key, *, expand, expand_chance,
                     batch_size: int, exploration: float, split: str) -> Estimate:
    """`estimate` from visit counts: the formulas of the frontier walk on the whole
    tree, leaf z weighted by n(z) / (q(z) B) (zero where no sample went)."""
    table = _row_table(tree, policy, traverser, expand[traverser],
                       _expand_chance_row(expand_chance, traverser), exploration)
    counts, q = visit_counts(tree, *table, key, batch_size, split)
    ratio = jnp.where(counts > 0, counts / (jnp.where(counts > 0, q, 1.0) * batch_size), 0.0)

    values, reach_weights = _weighted_estimate(
        tree, tree, policy, traverser, ratio[jnp.asarray(tree.terminal_node)],
        jnp.arange(counts.shape[0]), ratio)
    return Estimate(values, reach_weights, counts.sum())


# A frontier slot costs about three histories of the counts pass (it compacts W
# children and gathers a policy row); measured on the 2-core CPU, Leduc and liar's
# dice, the switch-over lies within a factor 1.5 of this.
SLOT_COST = 3


def choose_traversal(tree: GameTree, batch_size: int, capacity_: int) -> str:
    """"frontier" or "counts", whichever costs less per step: B walks of K slots over the
    D - 1 inner depths (SLOT_COST each), or one pass over the N histories.

    Args:
      tree: the compiled game.
      batch_size: B, samples per step.
      capacity_: K, the scheme's capacity.

    Returns:
      "frontier" or "counts".
    """
    depths = max(len(tree.sizes.level_offsets) - 2, 1)
    slots = batch_size * capacity_ * depths
    return "counts" if SLOT_COST * slots >= tree.children.shape[0] else "frontier"
