"""A batch of B samples as visit counts: one top-down pass over the history tree.

The mean update of B Monte-Carlo CFR samples depends on the samples only through
n(h), how many of them visit each history h, and q(h), the probability that one
sample visits h (see `jaxsolve.sampling`): every sampled value is a sum over visited
leaves of a per-leaf term weighted by 1/q(z), so the batch mean weights leaf z by
n(z) / (q(z) B). The counts follow the scheme: at the root n = B; a node that
**expands** passes its count to every child; a node that **samples** splits its
count among its children in proportion to its sampling probabilities. The cost is
one pass over the tree whatever B is, against B walks for the frontier walk of
`jaxsolve.sampling.walk`: the better choice once B samples visit, in total, more
histories than the tree has.

Two ways to split a count n over probabilities p:

* ``"multinomial"``: n_a ~ Multinomial(n, p), drawn independently at every node.
  The counts then have exactly the distribution of B independent samples.
* ``"systematic"`` (the default; far cheaper): one uniform u per node, n_a =
  floor(n cdf_a + u) - floor(n cdf_{a-1} + u), the systematic resampling of
  particle filters. Each n_a is floor(n p_a) or its ceiling, E[n_a | n] = n p_a
  exactly (so every estimate stays unbiased), and the B samples are negatively
  correlated instead of independent: taken in random order each still follows the
  scheme, but they spread over the actions as evenly as integers allow.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsolve import validate
from jaxsolve.tree import GameTree

SPLITS = ("systematic", "multinomial")


def visit_counts(tree: GameTree, rows: jax.Array, expanded: jax.Array,
                 row_of_node: jax.Array, key: jax.Array, batch_size: int,
                 split: str = "systematic") -> tuple[jax.Array, jax.Array]:
    """Visit counts and visit probabilities of B samples of a scheme.

    One step per depth. A node of depth d + 1 reads its parent's count, visit
    probability and uniform and its own slot's cumulative probabilities, so the
    systematic split is a handful of gathers per node.

    Args:
      tree: the compiled game.
      rows: `[R, W]` sampling distributions over children slots (W =
        `tree.children.shape[-1]`).
      expanded: `[R]` bool, the rows whose nodes expand.
      row_of_node: `[N]` int, each node's row (any row for terminals).
      key: PRNG key.
      batch_size: B, static.
      split: "systematic" or "multinomial".

    Returns:
      (counts, q): `[N]` n(h), whole numbers in the dtype of `rows`, and `[N]` the
        probability that one sample visits h (1 at the root).
    """
    validate.static("visit_counts", "split", split, validate.one_of_rule(*SPLITS))
    offsets = tree.sizes.level_offsets
    dtype = rows.dtype
    width = rows.shape[-1]
    cdf = jnp.cumsum(rows, axis=-1)
    total = cdf[:, -1:]
    # Normalised so that the last action with positive probability ends at exactly
    # 1 (x / x == 1 in floating point) and zero-probability actions repeat the
    # previous boundary: the counts of a node's children then telescope to
    # floor(n + u) - floor(u) = n whatever the rounding in the cumulative sum.
    cdf = (cdf / jnp.where(total > 0, total, 1.0)).reshape(-1)
    flat_rows = rows.reshape(-1)
    parent = jnp.asarray(tree.parent)
    slot = jnp.asarray(tree.parent_action)
    counts = [jnp.full((1,), float(batch_size), dtype)]
    q = [jnp.ones((1,), dtype)]
    for d in range(len(offsets) - 2):
        lo, hi, end = offsets[d], offsets[d + 1], offsets[d + 2]
        up = parent[hi:end] - lo  # each child's parent, as an index into depth d
        row = row_of_node[parent[hi:end]]
        n, expand = counts[-1][up], expanded[row]
        at = row * width + slot[hi:end]
        p = flat_rows[at]
        level_key = jax.random.fold_in(key, d)
        if split == "systematic":
            u = jax.random.uniform(level_key, (hi - lo,), dtype)[up]
            before = jnp.where(slot[hi:end] > 0, cdf[at - 1], 0.0)
            drawn = jnp.floor(n * cdf[at] + u) - jnp.floor(n * before + u)
        else:
            drawn = _multinomial_children(level_key, counts[-1], rows[row_of_node[lo:hi]], up,
                                          slot[hi:end])
        counts.append(jnp.where(expand, n, drawn))
        q.append(q[-1][up] * jnp.where(expand, 1.0, p))
    return jnp.concatenate(counts), jnp.concatenate(q)


def _multinomial_children(key, counts, probs, up, slot):
    """Multinomial(n, p) at every node of one depth (counts [L], probs [L, W]),
    read out for each child (parent index `up`, slot `slot`)."""
    drawn = jax.random.multinomial(key, counts, probs, dtype=probs.dtype)
    return drawn[up, slot]
