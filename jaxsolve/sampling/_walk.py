"""The frontier walk: a batch of samples as breadth-first walks from the root, each
holding a frontier of K slots that expand into all children or sample one, compacted
with a cumulative sum at every depth."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import GameTree


def _uniforms(tree: GameTree, key, batch_size: int, capacity_: int, dtype):
    """[B, D-1, K] one draw of random numbers for a batch of walks (far cheaper than
    a key per slot)."""
    levels = max(len(tree.sizes.level_offsets) - 2, 0)
    return jax.random.uniform(key, (batch_size, levels, capacity_), dtype)


def walk(tree: GameTree, decision_rows: Callable[[jax.Array], tuple[jax.Array, jax.Array]],
         chance_rows: jax.Array, expand_row: jax.Array, expand_chance_row: jax.Array,
         capacity_: int, uniforms: jax.Array
         ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """B samples: breadth-first frontier walks from the root, one per sample.

    The walks advance one depth at a time together and stop as soon as every slot of
    every walk holds a leaf (or nothing): sampled paths are often far shorter than the
    tree is deep (outcome sampling on liar's dice: at most 9-10 of 15).

    Args:
      tree: the compiled game.
      decision_rows: infoset ids `[K]` -> (`[K, W]` sampling distributions, `[K, W]`
        the policy) there; a function, so that solvers compute only the rows they visit.
      chance_rows: `[C, W]` the distribution at each chance node.
      expand_row: `[I]` bool, the infosets the traverser expands.
      expand_chance_row: `[C]` bool, the chance nodes the traverser expands.
      capacity_: K, static.
      uniforms: `[B, D-1, K]` independent U[0, 1) numbers, one per sample, depth and
        slot.

    Returns:
      (inner, inner_q, inner_reach, leaves, leaf_q, leaf_reach), each with a leading
        batch axis B: `[D-1, K]` the decision and chance nodes visited at each depth (-1:
        none), `[D-1, K]` their sampling probabilities q(h), `[D-1, K]` the acting
        player's own reach pi_r(h) there, `[K]` the leaves reached (terminal node ids, -1
        in unused slots), `[K]` their q(z), and `[K, P+1]` each player's reach of them,
        chance's last.
    """
    player = jnp.asarray(tree.node_player)
    index = jnp.asarray(tree.node_index)
    children = jnp.asarray(tree.children)
    width = children.shape[-1]
    K, P = capacity_, tree.sizes.num_players
    dtype = chance_rows.dtype
    slots = jnp.arange(K, dtype=jnp.int32)

    def level(carry, u):
        nodes, q, reach = carry
        used = nodes >= 0
        n = jnp.maximum(nodes, 0)
        who = player[n]
        is_decision, is_chance = used & (who >= 0), used & (who == CHANCE)
        is_leaf = used & (who == TERMINAL)
        inner = is_decision | is_chance
        i = jnp.where(is_decision, index[n], 0)
        c = jnp.where(is_chance, index[n], 0)
        sampling_rows, policy_rows = decision_rows(i)
        probs = jnp.where(is_chance[:, None], chance_rows[c], sampling_rows)  # [K, W]
        played = jnp.where(is_chance[:, None], chance_rows[c], policy_rows)
        expanded = jnp.where(is_chance, expand_chance_row[c], expand_row[i])
        kids = children[n]  # [K, W]
        # Inverse-CDF sampling with one uniform per slot: the first action whose
        # cumulative probability exceeds u * total (never a zero-probability one;
        # the clamp guards against u * total rounding up to the total).
        cdf = jnp.cumsum(probs, axis=-1)
        pick = (cdf <= (u * cdf[:, -1])[:, None]).sum(-1)
        last = width - 1 - jnp.argmax(jnp.flip(probs > 0, -1), axis=-1)
        pick = jnp.minimum(pick, last)
        # Compaction by gathers: slot k hands `count[k]` children to the new slots
        # start[k], start[k] + 1, ... (a leaf hands on itself); each new slot finds
        # its parent as the last slot starting at or before it (a cumulative max).
        count = jnp.where(inner, jnp.where(expanded, (kids >= 0).sum(-1), 1), is_leaf)
        start = jnp.cumsum(count) - count
        marker = jnp.full((K,), -1, jnp.int32).at[jnp.where(count > 0, start, K)].set(
            slots.astype(jnp.int32), mode="drop")
        parent = jax.lax.cummax(marker)
        has = parent >= 0
        parent = jnp.maximum(parent, 0)
        rank = slots - start[parent]
        has = has & (rank < count[parent])
        row = kids[parent]  # [K, W]
        nth_legal = jnp.argmax(jnp.cumsum(row >= 0, axis=-1) == (rank + 1)[:, None], axis=-1)
        action = jnp.where(expanded[parent], nth_legal, pick[parent])
        child = jnp.where(is_leaf[parent], nodes[parent],
                          jnp.take_along_axis(row, action[:, None], -1)[:, 0])
        sampled = inner[parent] & ~expanded[parent]
        p_sample = jnp.take_along_axis(probs[parent], action[:, None], -1)[:, 0]
        p_play = jnp.take_along_axis(played[parent], action[:, None], -1)[:, 0]
        new_q = q[parent] * jnp.where(sampled, p_sample, 1.0)
        mover = jnp.where(is_chance[parent], P, jnp.where(is_decision[parent], who[parent], -1))
        new_reach = reach[parent] * jnp.where(
            jnp.arange(P + 1)[None, :] == mover[:, None], p_play[:, None], 1.0)
        acting = jnp.take_along_axis(reach, jnp.clip(who, 0, P)[:, None], -1)[:, 0]
        new = (jnp.where(has, child, -1), jnp.where(has, new_q, 1.0), new_reach)
        return new, (jnp.where(inner, nodes, -1), q, acting)

    B, depths = uniforms.shape[0], uniforms.shape[1]
    levels = jax.vmap(level)
    def more(carry):  # another depth, while some slot holds a decision or chance node
        d, (nodes, _, _), _ = carry
        inner = (nodes >= 0) & (player[jnp.maximum(nodes, 0)] != TERMINAL)
        return (d < depths) & inner.any()

    def advance(carry):
        d, frontier, (inner, inner_q, inner_reach) = carry
        frontier, (at, q, acting) = levels(frontier, uniforms[:, d])
        return d + 1, frontier, (inner.at[:, d].set(at), inner_q.at[:, d].set(q),
                                 inner_reach.at[:, d].set(acting))

    first = (jnp.full((B, K), -1, jnp.int32).at[:, 0].set(0), jnp.ones((B, K), dtype),
             jnp.ones((B, K, P + 1), dtype))
    unvisited = (jnp.full((B, depths, K), -1, jnp.int32), jnp.ones((B, depths, K), dtype),
                 jnp.ones((B, depths, K), dtype))
    _, (leaves, leaf_q, leaf_reach), (inner, inner_q, inner_reach) = jax.lax.while_loop(
        more, advance, (jnp.int32(0), first, unvisited))
    return inner, inner_q, inner_reach, leaves, leaf_q, leaf_reach
