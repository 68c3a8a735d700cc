"""Batched, jittable Monte-Carlo tree search: AlphaZero PUCT and Gumbel root selection.

The interface follows mctx: the model is a callback `recurrent_fn(params, key, action,
embedding) -> (RecurrentFnOutput, embedding)` with explicit `params`; values are
backed up as `q = reward + discount * value`, so two-player zero-sum games flip the
sign with `discount = -1` (and `discount = 0` into a terminal state). Differences:

* legal moves are masked at *every* node (mctx masks only the root): the callback
  returns each new node's `legal_action_mask`; a node with no legal move is terminal,
  its value is 0 (its outcome is the reward on the edge into it) and it is never
  expanded, so no simulation is spent beyond the end of the game;
* the whole batch walks the tree in lockstep and the backup is one vectorised scatter
  over the recorded path instead of a per-element while loop that carries the tree;
* ties are broken by the lowest action index instead of by 1e-7 random noise.

With masking that mctx's root-only masking cannot notice (the callback masks its own
logits) and no terminal state inside the tree, the visit counts equal mctx's
`muzero_policy` / `gumbel_muzero_policy` (tests/test_alphazero_search.py).

References: Silver et al. (2017/2018) for PUCT with Dirichlet root noise; Schrittwieser
et al. (2020), Appendix B, for the pb_c schedule and the min-max q normalisation;
Danihelka et al., "Policy improvement by planning with Gumbel" (ICLR 2022).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

UNVISITED = -1
ROOT = 0


class RootFnOutput(NamedTuple):
    prior_logits: jax.Array  # [B, A]
    value: jax.Array  # [B], for the player to move at the root
    embedding: Any  # pytree of [B, ...]
    legal_action_mask: jax.Array  # [B, A] bool


class RecurrentFnOutput(NamedTuple):
    reward: jax.Array  # [B], for the player who acted
    discount: jax.Array  # [B], -1 between alternating players, 0 into a terminal state
    prior_logits: jax.Array  # [B, A]
    value: jax.Array  # [B], for the player to move at the new state
    legal_action_mask: jax.Array  # [B, A] bool; all False at a terminal state


class PolicyOutput(NamedTuple):
    action: jax.Array  # [B] int32
    action_weights: jax.Array  # [B, A] policy target
    visit_counts: jax.Array  # [B, A] int32 at the root
    qvalues: jax.Array  # [B, A] root q-values (0 where unvisited)
    value: jax.Array  # [B] root value after search


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Tree:
    """Search tree; node i is created by simulation i (node 0 is the root)."""

    node_visits: jax.Array  # [B, N] int32
    raw_values: jax.Array  # [B, N] network value at expansion
    node_values: jax.Array  # [B, N] running mean of backed-up values
    children_index: jax.Array  # [B, N, A] int32, UNVISITED where not expanded
    children_visits: jax.Array  # [B, N, A] int32, node_visits of the child (0 if none)
    children_values: jax.Array  # [B, N, A], node_values of the child (0 if none)
    children_prior_logits: jax.Array  # [B, N, A], illegal at the dtype minimum
    children_rewards: jax.Array  # [B, N, A]
    children_discounts: jax.Array  # [B, N, A]
    legal: jax.Array  # [B, N, A] bool
    terminal: jax.Array  # [B, N] bool, no legal move
    embeddings: Any  # pytree of [B, N, ...]


class NodeView(NamedTuple):
    """Statistics of one node per batch element, gathered for action selection."""

    visits: jax.Array  # [B, A] int32 children visit counts
    qvalues: jax.Array  # [B, A] reward + discount * child value (0 if unvisited)
    prior_logits: jax.Array  # [B, A]
    legal: jax.Array  # [B, A] bool
    node_visit: jax.Array  # [B] int32
    node_value: jax.Array  # [B]
    raw_value: jax.Array  # [B]


def _rows(x, node):
    """x [B, N, ...] at node [B] -> [B, ...]."""
    return jnp.take_along_axis(x, node.reshape((-1,) + (1,) * (x.ndim - 1)), axis=1)[:, 0]


def _col(x, i):
    """x [B, N, ...] at the scalar column i -> [B, ...] (a dynamic slice)."""
    return jax.lax.dynamic_index_in_dim(x, i, 1, keepdims=False)


def _set_col(x, i, v):
    """x [B, N, ...] with column i (scalar, in range) set to v [B, ...]: an in-place
    dynamic-update-slice, without the bounds test that `x.at[:, i].set` adds."""
    return jax.lax.dynamic_update_index_in_dim(x, v.astype(x.dtype), i, 1)


def node_view(tree: Tree, node: Optional[jax.Array]) -> NodeView:
    """The statistics of `node` [B]; `node=None` is the root (static slices)."""
    rows = (lambda x: x[:, ROOT]) if node is None else (lambda x: _rows(x, node))
    q = rows(tree.children_rewards) + rows(tree.children_discounts) * rows(tree.children_values)
    return NodeView(
        rows(tree.children_visits), q, rows(tree.children_prior_logits), rows(tree.legal),
        rows(tree.node_visits), rows(tree.node_values), rows(tree.raw_values))


# --------------------------------------------------------------- q transformations
def q_by_parent_and_siblings(v: NodeView, epsilon: float = 1e-8) -> jax.Array:
    """Q in [0, 1] by min-max over V(node) and visited siblings; unvisited -> min."""
    seen = v.visits > 0
    safe = jnp.where(seen, v.qvalues, v.node_value[:, None])
    lo = jnp.minimum(v.node_value, jnp.min(safe, -1))[:, None]
    hi = jnp.maximum(v.node_value, jnp.max(safe, -1))[:, None]
    return (jnp.where(seen, v.qvalues, lo) - lo) / jnp.maximum(hi - lo, epsilon)


def q_completed_by_mix_value(v: NodeView, value_scale: float = 0.1,
                             maxvisit_init: float = 50.0, epsilon: float = 1e-8) -> jax.Array:
    """Gumbel MuZero's completed Q (unvisited -> mixed value), rescaled to [0, 1] and
    scaled by (maxvisit_init + max visits) * value_scale. As in mctx, illegal actions
    are completed too; they are masked afterwards."""
    seen = v.visits > 0
    probs = jnp.maximum(jax.nn.softmax(v.prior_logits), jnp.finfo(v.qvalues.dtype).tiny)
    n = jnp.sum(v.visits, -1)
    sum_probs = jnp.sum(jnp.where(seen, probs, 0.0), -1, keepdims=True)
    weighted = jnp.sum(jnp.where(seen, probs * v.qvalues / jnp.where(seen, sum_probs, 1.0), 0.0), -1)
    mixed = (v.raw_value + n * weighted) / (n + 1)
    q = jnp.where(seen, v.qvalues, mixed[:, None])
    lo, hi = jnp.min(q, -1, keepdims=True), jnp.max(q, -1, keepdims=True)
    q = (q - lo) / jnp.maximum(hi - lo, epsilon)
    return (maxvisit_init + jnp.max(v.visits, -1, keepdims=True)) * value_scale * q


def _masked_argmax(score, legal):
    """First index of the maximum legal score, as `jnp.argmax` (NaN-free scores), in
    two plain row reductions: XLA:CPU's variadic argmax reduction is several times
    slower than a max followed by a min over the matching indices."""
    score = jnp.where(legal, score, -jnp.inf)
    best = jnp.max(score, -1, keepdims=True)
    index = jnp.arange(score.shape[-1], dtype=jnp.int32)
    return jnp.min(jnp.where(score == best, index, score.shape[-1]), -1).astype(jnp.int32)


def _masked_logits(logits, legal):
    logits = logits - jnp.max(logits, -1, keepdims=True)
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


# ----------------------------------------------------------------- action selection
def puct_select(v: NodeView, pb_c_init: float = 1.25, pb_c_base: float = 19652.0) -> jax.Array:
    """AlphaZero/MuZero PUCT: argmax of Q + c(N) * P * sqrt(N) / (1 + n). [B]"""
    n = v.node_visit.astype(v.qvalues.dtype)[:, None]
    pb_c = pb_c_init + jnp.log((n + pb_c_base + 1.0) / pb_c_base)
    prior = jax.nn.softmax(jnp.where(v.legal, v.prior_logits, -jnp.inf))
    score = jnp.sqrt(n) * pb_c * prior / (v.visits + 1) + q_by_parent_and_siblings(v)
    return _masked_argmax(score, v.legal)


def gumbel_interior_select(v: NodeView) -> jax.Array:
    """Deterministic selection matching softmax(logits + completed Q). [B]"""
    probs = jax.nn.softmax(_masked_logits(v.prior_logits, v.legal) + q_completed_by_mix_value(v))
    score = probs - v.visits / (1 + jnp.sum(v.visits, -1, keepdims=True))
    return _masked_argmax(score, v.legal)


@functools.lru_cache(maxsize=None)
def considered_visits_table(max_considered: int, num_simulations: int):
    """[max_considered + 1, num_simulations] visit counts scheduled by Sequential
    Halving (Karnin et al. 2013) when m actions are considered."""
    rows = []
    for m in range(max_considered + 1):
        if m <= 1:
            rows.append(tuple(range(num_simulations)))
            continue
        log2m, seq, visits, k = int(math.ceil(math.log2(m))), [], [0] * m, m
        while len(seq) < num_simulations:
            for _ in range(max(1, int(num_simulations / (log2m * k)))):
                seq.extend(visits[:k])
                visits[:k] = [x + 1 for x in visits[:k]]
            k = max(2, k // 2)
        rows.append(tuple(seq[:num_simulations]))
    return tuple(rows)


def _score_considered(considered, gumbel, logits, q, visits):
    logits = logits - jnp.max(logits, -1, keepdims=True)
    penalty = jnp.where(visits == considered, 0.0, -jnp.inf)
    return jnp.maximum(-1e9, gumbel + logits + q) + penalty


def gumbel_root_select(v: NodeView, gumbel, num_simulations: int, max_considered: int):
    """Sequential Halving with Gumbel over the root's legal actions. [B]"""
    table = jnp.asarray(considered_visits_table(max_considered, num_simulations), jnp.int32)
    num_considered = jnp.minimum(max_considered, jnp.sum(v.legal, -1))
    sim = jnp.minimum(jnp.sum(v.visits, -1), num_simulations - 1)
    considered = table[num_considered, sim][:, None]
    score = _score_considered(considered, gumbel, v.prior_logits, q_completed_by_mix_value(v), v.visits)
    return _masked_argmax(score, v.legal)


# ----------------------------------------------------------------------- the search
def _init_tree(root: RootFnOutput, num_nodes: int) -> Tree:
    b, a = root.prior_logits.shape
    dt = root.value.dtype
    zeros = lambda x: jnp.zeros((b, num_nodes) + x.shape[1:], x.dtype).at[:, ROOT].set(x)
    return Tree(
        node_visits=jnp.zeros((b, num_nodes), jnp.int32).at[:, ROOT].set(1),
        raw_values=zeros(root.value), node_values=zeros(root.value),
        children_index=jnp.full((b, num_nodes, a), UNVISITED, jnp.int32),
        children_visits=jnp.zeros((b, num_nodes, a), jnp.int32),
        children_values=jnp.zeros((b, num_nodes, a), dt),
        children_prior_logits=zeros(_masked_logits(root.prior_logits, root.legal_action_mask)),
        children_rewards=jnp.zeros((b, num_nodes, a), dt),
        children_discounts=jnp.zeros((b, num_nodes, a), dt),
        legal=zeros(root.legal_action_mask),
        terminal=zeros(~jnp.any(root.legal_action_mask, -1)),
        embeddings=jax.tree.map(zeros, root.embedding))


def search(params, key: jax.Array, root: RootFnOutput, recurrent_fn: Callable, *,
           num_simulations: int, root_select: Callable, interior_select: Callable,
           max_depth: Optional[int] = None) -> Tree:
    """Runs `num_simulations` simulations from `root` and returns the tree.

    `root_select` / `interior_select` map a `NodeView` to actions [B]. `max_depth`
    (edges) caps the walk; a walk stopped by the cap, or by a terminal node, backs up
    the value stored at the node it reached instead of expanding a new one.
    """
    b, a = root.prior_logits.shape
    depth_cap = num_simulations if max_depth is None else min(max_depth, num_simulations)
    bidx = jnp.arange(b)
    n_nodes = num_simulations + 1

    def walk(tree):
        """Selection. Returns (parent [B], action [B], child [B], length [B], path
        [B, D+1] node ids, acts [B, D] the action on edge i+1)."""
        a0 = root_select(node_view(tree, None))
        child = tree.children_index[bidx, ROOT, a0]
        path = jnp.zeros((b, depth_cap + 1), jnp.int32)
        acts = jnp.zeros((b, depth_cap), jnp.int32).at[:, 0].set(a0)
        go = lambda c, d: (c != UNVISITED) & ~tree.terminal[bidx, jnp.maximum(c, 0)] & (d < depth_cap)
        init = (jnp.int32(1), jnp.zeros(b, jnp.int32), a0, child, jnp.ones(b, jnp.int32),
                go(child, 1), path, acts)

        def body(c):
            depth, node, act, child, length, active, path, acts = c
            node = jnp.where(active, child, node)
            path = _set_col(path, depth, jnp.where(active, node, _col(path, depth)))
            new_act = interior_select(node_view(tree, node))
            act = jnp.where(active, new_act, act)
            slot = jnp.minimum(depth, depth_cap - 1)
            acts = _set_col(acts, slot, jnp.where(active, act, _col(acts, slot)))
            child = jnp.where(active, tree.children_index[bidx, node, act], child)
            length = length + active.astype(jnp.int32)
            active = active & go(child, depth + 1)
            return depth + 1, node, act, child, length, active, path, acts

        _, node, act, child, length, _, path, acts = jax.lax.while_loop(
            lambda c: jnp.any(c[5]), body, init)
        return node, act, child, length, path, acts

    def simulation(sim, tree):
        parent, action, child, length, path, acts = walk(tree)
        # Expansion: every element calls the model; only unvisited edges are linked.
        expand = child == UNVISITED
        new = sim + 1
        emb = jax.tree.map(lambda x: x[bidx, parent], tree.embeddings)
        out, new_emb = recurrent_fn(params, jax.random.fold_in(key, sim), action, emb)
        terminal = ~jnp.any(out.legal_action_mask, -1)
        value = jnp.where(terminal, 0.0, out.value).astype(tree.node_values.dtype)
        at_new = lambda x, v: _set_col(x, new, v)
        link = jnp.where(expand, parent, n_nodes)  # existing edges: dropped
        edge = lambda x, v: x.at[bidx, link, action].set(v, mode="drop")
        tree = dataclasses.replace(
            tree,
            node_visits=at_new(tree.node_visits, expand.astype(jnp.int32)),
            raw_values=at_new(tree.raw_values, value), node_values=at_new(tree.node_values, value),
            children_prior_logits=at_new(tree.children_prior_logits,
                                         _masked_logits(out.prior_logits, out.legal_action_mask)),
            legal=at_new(tree.legal, out.legal_action_mask), terminal=at_new(tree.terminal, terminal),
            embeddings=jax.tree.map(at_new, tree.embeddings, new_emb),
            children_index=edge(tree.children_index, new),
            children_rewards=edge(tree.children_rewards, out.reward),
            children_discounts=edge(tree.children_discounts, out.discount))
        leaf = jnp.where(expand, new, child)
        path = path.at[bidx, length].set(leaf)
        return _backup(tree, path, acts, length, leaf, expand)

    def _backup(tree, path, acts, length, leaf, expand):
        """Walks every path up from its leaf in lockstep (aligned at the leaves):
        q <- r + g * q and a running-mean update of one node per element per level,
        whose statistics are also copied onto the edge into it (so that selection
        reads a node's children as one row). Only [B]-sized gathers and scatters,
        and only as many levels as the longest path of this simulation."""
        leaf_visits = tree.node_visits[bidx, leaf] + jnp.where(expand, 0, 1)
        visits = tree.node_visits.at[bidx, leaf].set(leaf_visits)
        leaf_value = tree.node_values[bidx, leaf]

        def body(c):
            j, q, child_count, child_value, visits, values, cvisits, cvalues = c
            d = length - 1 - j  # depth of the parent being updated, per element
            live = d >= 0
            dd = jnp.maximum(d, 0)
            parent, act = path[bidx, dd], acts[bidx, dd]
            q = tree.children_rewards[bidx, parent, act] + tree.children_discounts[bidx, parent, act] * q
            count = visits[bidx, parent]
            mean = (values[bidx, parent] * count + q) / (count + 1.0)
            idx = jnp.where(live, parent, n_nodes)  # out of range -> dropped
            visits = visits.at[bidx, idx].set(count + 1, mode="drop")
            values = values.at[bidx, idx].set(mean, mode="drop")
            cvisits = cvisits.at[bidx, idx, act].set(child_count, mode="drop")
            cvalues = cvalues.at[bidx, idx, act].set(child_value, mode="drop")
            return j + 1, q, count + 1, mean, visits, values, cvisits, cvalues

        init = (jnp.int32(0), leaf_value, leaf_visits, leaf_value, visits, tree.node_values,
                tree.children_visits, tree.children_values)
        levels = jnp.max(length)
        *_, visits, values, cvisits, cvalues = jax.lax.while_loop(
            lambda c: c[0] < levels, body, init)
        return dataclasses.replace(tree, node_visits=visits, node_values=values,
                                   children_visits=cvisits, children_values=cvalues)

    return jax.lax.fori_loop(0, num_simulations, simulation, _init_tree(root, n_nodes))


# ---------------------------------------------------------------------- the policies
def _summary(tree: Tree, action, weights) -> PolicyOutput:
    v = node_view(tree, None)
    return PolicyOutput(action=action, action_weights=weights, visit_counts=v.visits,
                        qvalues=jnp.where(v.visits > 0, v.qvalues, 0.0), value=v.node_value)


def alphazero_policy(params, key: jax.Array, root: RootFnOutput, recurrent_fn: Callable,
                     num_simulations: int, *, dirichlet_fraction: float = 0.25,
                     dirichlet_alpha: float = 0.3, pb_c_init: float = 1.25,
                     pb_c_base: float = 19652.0, temperature: float = 1.0,
                     max_depth: Optional[int] = None) -> PolicyOutput:
    """AlphaZero search: PUCT everywhere, Dirichlet noise mixed into the root prior.
    The action is sampled from visit_counts ** (1 / temperature) (argmax at 0); the
    policy target is the visit distribution. Shapes as in `RootFnOutput`."""
    noise_key, search_key, act_key = jax.random.split(key, 3)
    b, a = root.prior_logits.shape
    probs = jax.nn.softmax(root.prior_logits)
    if not (isinstance(dirichlet_fraction, (int, float)) and dirichlet_fraction == 0):
        # (Skipped when statically off: the gamma sampler is slow to compile.)
        noise = jax.random.dirichlet(noise_key, jnp.full((a,), dirichlet_alpha), (b,))
        probs = (1 - dirichlet_fraction) * probs + dirichlet_fraction * noise.astype(probs.dtype)
    logits = jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))
    root = root._replace(prior_logits=_masked_logits(logits, root.legal_action_mask))
    select = functools.partial(puct_select, pb_c_init=pb_c_init, pb_c_base=pb_c_base)
    tree = search(params, search_key, root, recurrent_fn, num_simulations=num_simulations,
                  root_select=select, interior_select=select, max_depth=max_depth)
    visits = node_view(tree, None).visits
    weights = visits / jnp.maximum(jnp.sum(visits, -1, keepdims=True), 1)
    if temperature == 0:
        action = _masked_argmax(visits.astype(jnp.float32), root.legal_action_mask)
    else:
        logits = jnp.log(jnp.maximum(weights, jnp.finfo(weights.dtype).tiny)) / temperature
        action = jax.random.categorical(act_key, logits).astype(jnp.int32)
    return _summary(tree, action, weights)


def gumbel_policy(params, key: jax.Array, root: RootFnOutput, recurrent_fn: Callable,
                  num_simulations: int, *, max_num_considered_actions: int = 16,
                  gumbel_scale: float = 1.0, max_depth: Optional[int] = None) -> PolicyOutput:
    """Gumbel AlphaZero: Sequential Halving with Gumbel at the root, deterministic
    improved-policy selection inside. The policy target is
    softmax(logits + completed Q); the action is the best surviving root action."""
    root = root._replace(prior_logits=_masked_logits(root.prior_logits, root.legal_action_mask))
    gumbel_key, search_key = jax.random.split(key)
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_key, root.prior_logits.shape,
                                              root.prior_logits.dtype)
    root_select = functools.partial(gumbel_root_select, gumbel=gumbel, num_simulations=num_simulations,
                                    max_considered=max_num_considered_actions)
    tree = search(params, search_key, root, recurrent_fn, num_simulations=num_simulations,
                  root_select=root_select, interior_select=gumbel_interior_select,
                  max_depth=max_depth)
    v = node_view(tree, None)
    q = q_completed_by_mix_value(v)
    considered = jnp.max(v.visits, -1, keepdims=True)
    action = _masked_argmax(_score_considered(considered, gumbel, root.prior_logits, q, v.visits),
                            root.legal_action_mask)
    weights = jax.nn.softmax(_masked_logits(root.prior_logits + q, root.legal_action_mask))
    return _summary(tree, action, weights)


__all__ = ["NodeView", "PolicyOutput", "RecurrentFnOutput", "RootFnOutput", "Tree",
           "alphazero_policy", "gumbel_interior_select", "gumbel_policy", "gumbel_root_select",
           "node_view", "puct_select", "q_by_parent_and_siblings", "q_completed_by_mix_value",
           "search"]
