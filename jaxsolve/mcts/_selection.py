"""Action selection for the batched MCTS: the statistics a rule sees (`NodeView`), the
q transformations, the PUCT and Gumbel rules, and Sequential Halving's schedule and
the waves it allows.

Every per-action array is actions-major, [A, B] (not mctx's [B, A]): XLA:CPU emits a
reduction over a short minor axis as a scalar loop per row, while along the major
axis it is a few vector instructions, so each reduction over actions below is
vectorised across the batch. A rule maps a `NodeView` to actions [B]. Ties go to the
lowest action index (mctx breaks them with tiny random noise instead).

Order-free reductions (min and max) share one variadic reduction (`_min_max`); float
sums whose order matters are plain `jnp.sum`, as in mctx, so that the q-values and
hence the visit counts are mctx's.

References: Silver et al. (2017/2018) for PUCT; Schrittwieser et al. (2020),
Appendix B, for the pb_c schedule and the min-max q normalisation; Danihelka et al.,
"Policy improvement by planning with Gumbel" (ICLR 2022) for completed Q, the
deterministic interior rule and Sequential Halving at the root.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple, Tuple

import jax
import jax.numpy as jnp


class NodeView(NamedTuple):
    """Statistics of one node per batch element, gathered for action selection.

    Actions-major: the per-action arrays are `[A, B]` (not mctx's `[B, A]`), so that a
    selector's reductions over actions (axis 0) run vectorised across the batch; a
    selector returns actions `[B]`. A legal logit of -inf counts as illegal.

    Attributes:
      visits: `[A, B]` children visit counts (float, integer-valued).
      qvalues: `[A, B]` reward + discount * child value (0 if unvisited).
      prior_logits: `[A, B]` masked (illegal at the dtype minimum, legal maximum 0).
      prior: `[A, B]` softmax(prior_logits); 0 where illegal.
      legal: `[A, B]` bool.
      node_visit: `[B]` (float, integer-valued); sum(visits) == node_visit - 1.
      node_value: `[B]` the node's value.
      raw_value: `[B]` the model's value of the node.
    """

    visits: jax.Array
    qvalues: jax.Array
    prior_logits: jax.Array
    prior: jax.Array
    legal: jax.Array
    node_visit: jax.Array
    node_value: jax.Array
    raw_value: jax.Array



def _min_max(x, y=None):
    """(min x, max x[, max y]) over axis 0 (actions), each [1, B], in one variadic
    reduction (exact in any order, unlike a float sum)."""
    big = jnp.array(jnp.inf, x.dtype)
    ops, inits = (x, x), (big, -big)
    if y is not None:
        ops, inits = (x, x, y), (big, -big, -big)

    def combine(a, b):
        out = (jnp.minimum(a[0], b[0]), jnp.maximum(a[1], b[1]))
        return out + ((jnp.maximum(a[2], b[2]),) if y is not None else ())

    return tuple(r[None] for r in jax.lax.reduce(ops, inits, combine, (0,)))


# --------------------------------------------------------------- q transformations
def q_by_parent_and_siblings(v: NodeView, epsilon: float = 1e-8) -> jax.Array:
    """Q in [0, 1] by min-max over V(node) and visited siblings; unvisited -> min.

    Args:
      v: the node's `NodeView`.
      epsilon: the least range divided by.

    Returns:
      `[A, B]` normalised q-values.
    """
    seen = v.visits > 0
    value = v.node_value[None]
    lo, hi = _min_max(jnp.where(seen, v.qvalues, value))
    lo = jnp.minimum(value, lo)
    hi = jnp.maximum(value, hi)
    return (jnp.where(seen, v.qvalues, lo) - lo) / jnp.maximum(hi - lo, epsilon)


def q_completed_by_mix_value(v: NodeView, value_scale: float = 0.1,
                             maxvisit_init: float = 50.0, epsilon: float = 1e-8) -> jax.Array:
    """Gumbel MuZero's completed Q (unvisited -> mixed value), rescaled to [0, 1] and scaled
    by (maxvisit_init + max visits) * value_scale.

    As in mctx, illegal actions are completed too; they are masked afterwards.

    Args:
      v: the node's `NodeView`.
      value_scale: sigma's scale.
      maxvisit_init: sigma's offset of the visit count.
      epsilon: the least range divided by.

    Returns:
      `[A, B]` completed, scaled q-values.
    """
    seen = v.visits > 0
    n = v.node_visit[None] - 1  # == sum(visits) wherever a selection is made
    # mctx weighs the visited q-values by the prior's probabilities. The softmax's
    # normaliser cancels in that weighted mean, so it is taken with exp(logits)
    # (legal maximum 0: in (0, 1]), and the two sums are siblings XLA computes in
    # one pass: two reductions fewer on the walk's critical path. (mctx floors
    # probabilities at the dtype's tiny, this floors exp(logits): they differ only
    # for a visited action whose prior is below ~1e-38.)
    # Illegal logits sit at the dtype minimum (exp 0) and are never visited: no mask.
    e = jnp.maximum(jnp.exp(v.prior_logits), jnp.finfo(v.qvalues.dtype).tiny)
    weight = jnp.sum(jnp.where(seen, e, 0.0), 0, keepdims=True)
    weighted = (jnp.sum(jnp.where(seen, e * v.qvalues, 0.0), 0, keepdims=True)
                / jnp.where(weight > 0, weight, 1.0))
    mixed = (v.raw_value[None] + n * weighted) / (n + 1)
    q = jnp.where(seen, v.qvalues, mixed)
    lo, hi, maxvisit = _min_max(q, v.visits)
    q = (q - lo) / jnp.maximum(hi - lo, epsilon)
    return (maxvisit_init + maxvisit) * value_scale * q


def masked_argmax(score: jax.Array, legal: jax.Array, axis: int = 0) -> jax.Array:
    """First index of the maximum legal score (action 0 if none is legal). [B]"""
    return jnp.argmax(jnp.where(legal, score, -jnp.inf), axis).astype(jnp.int32)


def masked_logits(logits: jax.Array, legal: jax.Array, axis: int = -1) -> jax.Array:
    """Logits minus their legal maximum, illegal ones at the dtype minimum.

    Args:
      logits: float array, actions along `axis`.
      legal: bool array of the same shape.
      axis: the actions' axis.

    Returns:
      An array shaped like `logits`; a row without legal actions is all at the dtype
        minimum.
    """
    top = jnp.max(jnp.where(legal, logits, -jnp.inf), axis, keepdims=True)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    return jnp.where(legal, logits - top, jnp.finfo(logits.dtype).min)


def softmax_legal(masked: jax.Array, legal: jax.Array, axis: int) -> jax.Array:
    """Softmax of masked logits (legal maximum 0, so no second max); 0 where illegal
    and everywhere at a node with no legal action."""
    e = jnp.where(legal, jnp.exp(masked), 0.0)
    total = jnp.sum(e, axis, keepdims=True)
    return e / jnp.where(total > 0, total, 1.0)


# ----------------------------------------------------------------- action selection
def puct_select(v: NodeView, pb_c_init: float = 1.25, pb_c_base: float = 19652.0) -> jax.Array:
    """AlphaZero/MuZero PUCT: argmax of Q + c(N) * P * sqrt(N) / (1 + n).

    Args:
      v: the node's `NodeView`.
      pb_c_init: the exploration constant.
      pb_c_base: the visit scale of its logarithmic growth.

    Returns:
      `[B]` int32 actions (the first of the best legal ones).
    """
    n = v.node_visit[None]
    pb_c = pb_c_init + jnp.log((n + pb_c_base + 1.0) / pb_c_base)
    score = jnp.sqrt(n) * pb_c * v.prior / (v.visits + 1) + q_by_parent_and_siblings(v)
    return masked_argmax(score, v.legal)


def gumbel_interior_select(v: NodeView) -> jax.Array:
    """Deterministic selection matching softmax(logits + completed Q).

    Args:
      v: the node's `NodeView`.

    Returns:
      `[B]` int32 actions.
    """
    probs = jax.nn.softmax(v.prior_logits + q_completed_by_mix_value(v), axis=0)
    score = probs - v.visits / v.node_visit[None]  # node_visit == 1 + sum(visits)
    return masked_argmax(score, v.legal)


@functools.lru_cache(maxsize=None)
def considered_visits_table(max_considered: int, num_simulations: int
                            ) -> tuple[tuple[int, ...], ...]:
    """The visit counts scheduled by Sequential Halving (Karnin et al. 2013) when m actions
    are considered, for every m up to `max_considered`. Cached.

    Args:
      max_considered: the most actions considered.
      num_simulations: the simulations scheduled.

    Returns:
      `[max_considered + 1, num_simulations]` as nested tuples: row m, entry i is the
        visit count simulation i considers.
    """
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


def score_considered(considered: jax.Array, gumbel_logits: jax.Array, q: jax.Array,
                     visits: jax.Array) -> jax.Array:
    """`gumbel_logits` = gumbel + masked logits (legal maximum 0), precomputed."""
    penalty = jnp.where(visits == considered[None], 0.0, -jnp.inf)
    return jnp.maximum(-1e9, gumbel_logits + q) + penalty


def gumbel_root_select(v: NodeView, gumbel_logits: jax.Array, schedule: jax.Array,
                       width: int = 1) -> jax.Array:
    """Sequential Halving with Gumbel over the root's legal actions.

    Args:
      v: the node's `NodeView`.
      gumbel_logits: `[A, B]` (actions-major, like the view) gumbel + masked root
        logits.
      schedule: `[B, num_simulations]` the visit count each simulation considers
        (`considered_visits_table` at the number of considered actions).
      width: actions per call; > 1 for a wave (`gumbel_waves`).

    Returns:
      `[B]` int32 actions; with `width` > 1, the `width` best-scoring actions
        `[B, width]`.
    """
    sim = jnp.minimum(v.node_visit.astype(jnp.int32) - 1, schedule.shape[-1] - 1)
    considered = jnp.take_along_axis(schedule, sim[:, None], 1)[:, 0]
    score = score_considered(considered, gumbel_logits, q_completed_by_mix_value(v), v.visits)
    if width == 1:
        return masked_argmax(score, v.legal)
    return jax.lax.top_k(jnp.where(v.legal, score, -jnp.inf).T, width)[1].astype(jnp.int32)


Plan = Tuple[Tuple[int, int], ...]  # (width, count) segments of waves, see `search`


@functools.lru_cache(maxsize=None)
def gumbel_waves(max_considered: int, num_simulations: int, num_considered: int) -> Plan:
    """The waves (`search`'s plan) in which Gumbel's Sequential Halving can run its
    simulations, when every root considers `num_considered` actions. Cached.

    The schedule is a run of simulations considering visit count c, then one with c + 1,
    ... The root picks, among the actions visited exactly c times, the best by gumbel +
    logit + sigma(completed q). Where as many actions have c visits as the run has
    simulations, the run visits each of them once whatever their order, and the walks go
    down different subtrees, so they cannot change each other's choices: one wave. That
    is the first run (all m considered actions unvisited: the m best by gumbel + logit,
    since every unvisited action has the same completed q) and every later round in
    which all surviving actions are visited. Where fewer simulations than candidates
    remain (the first round of each halving), each pick depends on the values the
    previous one backed up: one simulation per wave.

    Args:
      max_considered: `gumbel_policy`'s `max_num_considered_actions`.
      num_simulations: the simulations of the search.
      num_considered: the actions each root considers.

    Returns:
      The plan: a tuple of (width, count) segments.
    """
    row = considered_visits_table(max_considered, num_simulations)[num_considered]
    visits = [0] * max(num_considered, 1)  # of the considered actions
    widths, i = [], 0
    while i < len(row):
        c, run = row[i], 1
        while i + run < len(row) and row[i + run] == c:
            run += 1
        have = [j for j, n in enumerate(visits) if n == c]
        if len(have) < run:
            raise AssertionError(f"schedule {row} visits more actions than have {c} visits")
        widths += [run] if len(have) == run else [1] * run
        for j in have[:run]:
            visits[j] += 1
        i += run
    plan = []
    for w in widths:
        if plan and plan[-1][0] == w:
            plan[-1] = (w, plan[-1][1] + 1)
        else:
            plan.append((w, 1))
    return tuple(plan)



__all__ = ["NodeView", "Plan", "considered_visits_table", "gumbel_interior_select",
           "gumbel_root_select", "gumbel_waves", "masked_argmax", "masked_logits", "puct_select",
           "q_by_parent_and_siblings", "q_completed_by_mix_value", "score_considered",
           "softmax_legal"]
