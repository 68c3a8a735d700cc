"""Monte-Carlo CFR: one sampling scheme with CFR, chance sampling, external and
outcome sampling as special cases (Lanctot et al. 2009, "Monte Carlo Sampling for
Regret Minimization in Extensive Games").

The scheme: when player p traverses, every decision node and chance node either
**expands** all its actions or **samples** one. A sample is thus a set Q of leaves;
a leaf z is in Q with probability q(z), the product of the sampling probabilities
at the sampled nodes on its path. Every counterfactual value is then
estimated without bias by weighting each leaf of Q by 1/q(z):

    v~(I, a) = sum_{z in Q below Ia} u_p(z) pi_{-p}(z) pi_c(z) pi_p(z | Ia) / q(z)

which is the full-width formula of `jaxsolve.sequences` restricted to the leaves
of Q, so the same code computes both. Sampled regrets `v~(I, a) - sum_b s(I, b)
v~(I, b)` are linear in v~ and hence unbiased too.

| scheme | traverser's nodes | opponents' nodes | chance nodes |
|---|---|---|---|
| full CFR | expand | expand | expand |
| chance-sampled CFR | expand | expand | sample |
| external sampling (ES) | expand | sample (policy) | sample |
| outcome sampling (OS) | sample (explore) | sample (policy) | sample |

Opponents sample from their current policy, chance from its probabilities and the
traverser, where it samples, from `exploration * uniform + (1 - exploration) *
policy` so that every action keeps a chance to be tried. A mask of one's own
(`sampled_cfr(mask=..., chance_mask=...)`) chooses per infoset and per chance node.

Array form. A sample is a breadth-first walk over the history arrays holding a
frontier of K slots (K, the *capacity*, is the most leaves one sample can reach
under the scheme, computed from the tree when the solver is initialised: 1 for
outcome sampling, the size of the traverser's subtree for external sampling). At
each depth every slot either expands into all its children or samples one, and the
children are compacted into the K slots with a cumulative sum. A batch of B samples
is `vmap` of that walk; the leaves of all B samples then go through the terminal-view
formulas above in one segment sum. Alternatively (`traversal="counts"`) the batch
is drawn as visit counts n(h) in one pass down the tree (`jaxsolve.visit_counts`)
and every leaf of the full terminal view is weighted by n(z) / (q(z) B): the same
estimate at a cost independent of B, cheaper once B walks would examine more than
about a third as many slots as the tree has histories (`traversal="auto"` chooses
by that count, `choose_traversal`).

Average strategy. The increment at an infoset I of player r is estimated by
sum over the visited histories h in I of pi_r(h) / q(h) times the current policy at
I: its expectation is |I| pi_r(I) sigma(I), the CFR average's increment up to a
factor fixed per infoset (which normalisation removes). External sampling updates
the opponents' infosets (which it samples on-policy, so pi_r / q stays bounded),
outcome sampling the traverser's, as OpenSpiel's solvers do.
"""

from __future__ import annotations

import dataclasses

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from jaxsolve import base
from jaxsolve import sequences as seq
from jaxsolve import validate
from jaxsolve.base import MCCFRState, Solver
from jaxsolve.errors import ArgumentError, ArgumentTypeError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import GameTree
from jaxsolve.updates import accumulate_regrets, kahan_add, regret_matching, rescale_average
from jaxsolve.visit_counts import SPLITS, visit_counts

AVERAGING = ("traverser", "opponents")
TRAVERSALS = ("auto", "frontier", "counts")

# Regret and averaging rules a sampling solver can use (knobs of solvers._step).
RULES = {
    "cfr": dict(floor=False, alpha=None, beta=None, gamma=0.0),  # plain sums, uniform average
    "cfr+": dict(floor=True, alpha=None, beta=None, gamma=1.0),  # floored, linear average
    "dcfr": dict(floor=False, alpha=1.5, beta=0.0, gamma=2.0),  # discounted (1.5, 0, 2)
}


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


# ----------------------------------------------------------------- the scheme
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


# ----------------------------------------------------------------- sampling
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


def _uniforms(tree: GameTree, key, batch_size: int, capacity_: int, dtype):
    """[B, D-1, K] one draw of random numbers for a batch of walks (far cheaper than
    a key per slot)."""
    levels = max(len(tree.sizes.level_offsets) - 2, 0)
    return jax.random.uniform(key, (batch_size, levels, capacity_), dtype)


def _expand_chance_row(expand_chance, traverser: int):
    return jnp.pad(expand_chance[traverser], (0, max(1 - expand_chance.shape[1], 0)))


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


# ----------------------------------------------------------------- the solver
def _init(tree: GameTree, key=None, *, scheme: Callable, exploration: float,
          solver_name: str = "sampled-cfr") -> MCCFRState:
    where = f"{solver_name}.init"
    # The scheme reads the tree's history arrays, of one game only.
    validate.game_tree(tree, where, histories=True)
    key = jax.random.PRNGKey(0) if key is None else validate.prng_key(key, where)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):  # a typed key: the state holds its words
        # as a raw threefry key ([2] uint32, what jax.random takes untyped); another
        # implementation's words (rbg's are [4]) would be read as threefry's and fail.
        impl = str(jax.random.key_impl(key))
        if impl != "threefry2x32":
            validate.fail(where, f"key must be a threefry key (jax.random.key(0) or "
                                 f"jax.random.PRNGKey(0)), got one of impl={impl!r}",
                          ArgumentTypeError)
        key = jax.random.key_data(key)
    expand, expand_c, cap = scheme(tree)
    owner = _host(tree, "infoset_player")
    sampled_own = ~expand[owner, np.arange(len(owner))]
    if exploration <= 0 and sampled_own.any():
        i = int(np.nonzero(sampled_own)[0][0])
        raise ArgumentError(f"the scheme samples the traverser's own actions (e.g. at infoset "
                        f"{tree.names.infosets[i]!r}) but exploration=0: actions the policy "
                        "never plays would never be tried; pass exploration > 0")
    shape = (tree.sizes.num_infosets, tree.sizes.num_actions)
    dtype = base.float_dtype()
    # One buffer per field (a donated state may not hold one buffer twice).
    return MCCFRState(*(jnp.zeros(shape, dtype) for _ in range(4)), jnp.zeros((), jnp.int32),
                      jnp.zeros((), dtype), jnp.ones((), dtype), jnp.asarray(key, jnp.uint32),
                      jnp.zeros((2,), dtype), jnp.asarray(expand), jnp.asarray(expand_c),
                      jnp.zeros((cap,), jnp.int32))


def _dense_step(tree: GameTree, state: MCCFRState, *, batch_size: int, exploration: float,
                averaging: str, floor: bool, alpha, beta, gamma: float,
                traversal: str = "frontier", split: str = "systematic",
                solver_name: str = "sampled-cfr") -> MCCFRState:
    """The step computed full width from `estimate` ([I, A] arrays per player): the
    step of the "counts" traversal, and the reference the frontier's sparse `_step`
    is tested against."""
    _check_step(tree, state, solver_name)
    averaging = _averaging_here(averaging, tree)
    dtype = state.regrets.dtype
    legal = jnp.asarray(tree.legal)
    owner = jnp.asarray(tree.infoset_player)
    t = (state.iteration + 1).astype(dtype)
    weight = t**gamma * state.weight_scale
    key, step_key = jax.random.split(state.key)
    regrets, average, carry, touched = state.regrets, state.average, state.average_carry, state.touched
    for p in range(tree.sizes.num_players):  # alternating: p sees the updates before it
        policy = regret_matching(regrets, legal)
        est = estimate(tree, policy, p, jax.random.fold_in(step_key, p), expand=state.expand,
                       expand_chance=state.expand_chance, capacity_=state.frontier.shape[0],
                       batch_size=batch_size, exploration=exploration, traversal=traversal,
                       split=split)
        mine = (owner == p)[:, None] & legal
        instant = jnp.where(mine, est.values - (policy * est.values).sum(-1, keepdims=True), 0.0)
        regrets = accumulate_regrets(regrets, instant, mine, t, floor=floor, alpha=alpha,
                                     beta=beta)
        averaged = (owner == p) if averaging == "traverser" else (owner != p)
        average, carry = kahan_add(average, carry, weight * est.reach_weights[:, None] * policy,
                                   averaged[:, None] & legal)
        touched = _count(touched, est.touched)
    average, carry, total, scale = rescale_average(average, carry, state.total_weight + weight,
                                                   state.weight_scale)
    return state._replace(regrets=regrets, average=average, average_carry=carry,
                          iteration=state.iteration + 1, total_weight=total,
                          weight_scale=scale, key=key, touched=touched)


def _sequence_probs(tree: GameTree, regrets, sequences):
    """Regret-matching probabilities of `sequences` (any shape; the empty sequence
    gives 1), computed from the rows they touch only.

    Returns (probs [...], rows [..., A] the policy rows, infosets [...], valid [...]).
    """
    A = tree.sizes.num_actions
    valid = sequences < tree.sizes.empty_sequence
    infosets = jnp.where(valid, sequences // A, 0)
    rows = regret_matching(regrets[infosets], jnp.asarray(tree.legal)[infosets])
    probs = jnp.take_along_axis(rows, (sequences % A)[..., None], axis=-1)[..., 0]
    return jnp.where(valid, probs, 1.0), rows, infosets, valid


def _traverse(tree: GameTree, regrets, average, carry, traverser: int, uniforms, weight, *,
              expand, expand_chance, capacity_: int, exploration: float, averaging: str,
              floor: bool):
    """One player's sampled update, touching only the rows the samples visit.

    Per step this costs O(B K D A) for B samples of frontier K over D levels, not
    O(I A): policies are regret-matched row by row where needed, regrets are
    scatter-added and the average's increments are added to the rows they touch with
    the same compensation as `_dense_step`'s (`_compensated_rows_add`). It equals
    `_dense_step`'s update (tested). Returns (regrets, average, carry, touched).
    """
    dtype = regrets.dtype
    B = uniforms.shape[0]
    legal = jnp.asarray(tree.legal)
    index = jnp.asarray(tree.node_index)
    player = jnp.asarray(tree.node_player)
    A, I = tree.sizes.num_actions, tree.sizes.num_infosets

    def rows(i):
        policy = regret_matching(regrets[i], legal[i])
        return _explore(tree, policy, i, traverser, exploration), _pad_rows(tree, policy)

    inner, inner_q, inner_reach, leaves, leaf_q, leaf_reach = walk(
        tree, rows, _chance_rows(tree, dtype), expand[traverser],
        _expand_chance_row(expand_chance, traverser), capacity_, uniforms)

    # Average strategy first: it uses the policy before this player's update.
    nodes = inner.reshape(-1)
    who = player[jnp.maximum(nodes, 0)]
    mine = who == traverser if averaging == "traverser" else who != traverser
    counted = (nodes >= 0) & (who >= 0) & mine
    infoset = jnp.where(counted, index[jnp.maximum(nodes, 0)], I)  # I: dropped
    own = inner_reach.reshape(-1)
    policy = regret_matching(regrets[jnp.minimum(infoset, I - 1)], legal[jnp.minimum(infoset, I - 1)])
    scale = jnp.where(counted, weight * own / (inner_q.reshape(-1) * B), 0.0)
    average, carry = _compensated_rows_add(average, carry, infoset,
                                           scale[:, None] * policy, legal)

    # Regrets: each sampled leaf z adds, at every own sequence (I, a) on its path,
    # c = u_p pi_{-p} pi_c pi_p(z | Ia) / (q B) to v(I, a); the regret row of I gets
    # c at a minus c * sigma(I, a) at every legal action (the policy's value).
    reached = leaves.reshape(-1) >= 0
    z = jnp.where(reached, index[jnp.maximum(leaves.reshape(-1), 0)], 0)
    leaf_reach = leaf_reach.reshape(-1, tree.sizes.num_players + 1)
    others = jnp.prod(jnp.where(jnp.arange(tree.sizes.num_players + 1) == traverser, 1.0,
                                leaf_reach), axis=-1)
    u = jnp.asarray(tree.utilities, dtype)[z, traverser]
    weight_z = jnp.where(reached, u * others / (leaf_q.reshape(-1) * B), 0.0)
    seqs = jnp.asarray(tree.terminal_sequences)[traverser, z]  # [n, L]
    mine_probs, path_rows, at, valid = _sequence_probs(tree, regrets, seqs)

    inclusive = jnp.flip(jnp.cumprod(jnp.flip(mine_probs, -1), axis=-1), -1)
    after = jnp.concatenate([inclusive[:, 1:], jnp.ones_like(inclusive[:, :1])], axis=-1)
    c = jnp.where(valid, weight_z[:, None] * after, 0.0)  # [n, L]
    taken = jax.nn.one_hot(seqs % A, A, dtype=dtype)
    played = jnp.take_along_axis(path_rows, (seqs % A)[..., None], -1)
    delta = c[..., None] * (taken - played * legal[at])  # [n, L, A]
    at = jnp.where(valid, at, I)  # padding: an out-of-range row, dropped
    regrets = regrets.at[at].add(delta, mode="drop")
    if floor:  # CFR+ floors the rows just updated (the others are already >= 0)
        floored = jnp.maximum(regrets[jnp.minimum(at, I - 1)], 0.0)
        regrets = regrets.at[at].set(floored, mode="drop")
    touched = ((nodes >= 0).sum() + reached.sum()).astype(dtype)
    return regrets, average, carry, touched


def _compensated_rows_add(average, carry, rows, increments, legal):
    """`kahan_add` of increments [n, A] to the rows `rows` [n] (I: dropped) of
    average and carry [I, A], touching only those rows: the increments of one row are
    summed first (over the rows made unique by a sort of the n row ids), so each
    touched row takes one compensated addition, as `_dense_step` adds each row's sum
    once. Returns the new (average, carry)."""
    num_rows = average.shape[0]
    unique, inverse = jnp.unique(rows, size=rows.shape[0], fill_value=num_rows,
                                 return_inverse=True)
    summed = jax.ops.segment_sum(increments, inverse.reshape(-1), num_segments=rows.shape[0])
    kept = jnp.minimum(unique, num_rows - 1)
    total, compensation = kahan_add(average[kept], carry[kept], summed,
                                    (unique < num_rows)[:, None] & legal[kept])
    return (average.at[unique].set(total, mode="drop"),
            carry.at[unique].set(compensation, mode="drop"))


def _check_step(tree: GameTree, state, solver_name: str) -> None:
    """A step needs the MCCFRState of its own init on this tree."""
    where = f"{solver_name}.step"
    validate.game_tree(tree, where, histories=True)
    base.solver_state(tree, state, where, expected=MCCFRState, solver_name=solver_name)
    if np.shape(state.touched) != (2,):  # checked at trace time: shapes are known
        validate.fail(where, f"state.touched has shape {np.shape(state.touched)}, not (2,): "
                             "a state of a jaxsolve before the compensated count; give it "
                             "state._replace(touched=jnp.stack([state.touched, "
                             "jnp.zeros_like(state.touched)]))")


def _count(touched, seen):
    """touched [2] (total, carry) plus `seen` histories, compensated (`kahan_add`): a
    plain float32 sum stops growing at 2^28 when a step adds ~10^4."""
    total, carry = kahan_add(touched[0], touched[1], seen.astype(touched.dtype), True)
    return jnp.stack([total, carry])


def histories_touched(state: MCCFRState) -> jax.Array:
    """Histories a sampling solver's state has visited so far, over all its steps, samples
    and players (the x-axis of a cost-fair convergence plot).

    Args:
      state: an `MCCFRState`.

    Returns:
      `[]` float array.
    """
    return state.touched[0] - state.touched[1]


def _averaging_here(averaging: str, tree: GameTree) -> str:
    """"opponents" averages nothing in a one-player game (it has no opponents, so the
    average would stay uniform whatever the regrets learn): there the traverser's own
    infosets are averaged instead, which the same estimate covers (module docstring)."""
    return "traverser" if averaging == "opponents" and tree.sizes.num_players == 1 else averaging


def _step(tree: GameTree, state: MCCFRState, *, batch_size: int, exploration: float,
          averaging: str, floor: bool, alpha, beta, gamma: float, traversal: str,
          split: str, solver_name: str = "sampled-cfr") -> MCCFRState:
    _check_step(tree, state, solver_name)
    averaging = _averaging_here(averaging, tree)
    K = state.frontier.shape[0]
    if traversal == "auto":
        traversal = choose_traversal(tree, batch_size, K)
    if traversal == "counts" or alpha is not None:  # discounting touches every row anyway
        return _dense_step(tree, state, batch_size=batch_size, exploration=exploration,
                           averaging=averaging, floor=floor, alpha=alpha, beta=beta,
                           gamma=gamma, traversal=traversal, split=split,
                           solver_name=solver_name)
    dtype = state.regrets.dtype
    t = (state.iteration + 1).astype(dtype)
    weight = t**gamma * state.weight_scale
    key, step_key = jax.random.split(state.key)
    regrets, average, carry = state.regrets, state.average, state.average_carry
    touched = state.touched
    for p in range(tree.sizes.num_players):  # alternating: p sees the updates before it
        uniforms = _uniforms(tree, jax.random.fold_in(step_key, p), batch_size, K, dtype)
        regrets, average, carry, seen = _traverse(
            tree, regrets, average, carry, p, uniforms, weight, expand=state.expand,
            expand_chance=state.expand_chance, capacity_=K, exploration=exploration,
            averaging=averaging, floor=floor)
        touched = _count(touched, seen)
    total = state.total_weight + weight
    # Rescaling touches every row, so it runs only on the rare steps that need it.
    average, carry, total, scale = jax.lax.cond(
        total > 2.0**40, lambda: rescale_average(average, carry, total, state.weight_scale),
        lambda: (average, carry, total, state.weight_scale))
    return state._replace(regrets=regrets, average=average, average_carry=carry,
                          iteration=state.iteration + 1, total_weight=total,
                          weight_scale=scale, key=key, touched=touched)


def _solver_name(name: str, value, where: str):
    if value is not None and not isinstance(value, str):
        validate.fail(where, f"name must be a string, got {value!r}", ArgumentTypeError)
    return value


# How each setting of a sampling solver is checked, as checker(name, value, where)
# -> the value for the solver's knobs. mask and chance_mask are checked by init,
# against the tree.
_SETTINGS = {
    "batch_size": functools.partial(validate.integer, minimum=1, maximum=validate.INT32_MAX),
    "expand_own": validate.flag,
    "expand_opponents": validate.flag,
    "expand_chance": validate.flag,
    "exploration": functools.partial(validate.finite_real, low=0.0, high=1.0),
    "averaging": functools.partial(validate.choice, choices=AVERAGING),
    "rule": functools.partial(validate.choice, choices=tuple(RULES)),
    "traversal": functools.partial(validate.choice, choices=TRAVERSALS),
    "split": functools.partial(validate.choice, choices=SPLITS),
    "name": _solver_name,
}


def _checked_settings(where: str, **settings) -> dict:
    """`settings` checked (see _SETTINGS) and converted; unknown keys pass unchanged,
    for sampled_cfr's signature to refuse."""
    return {key: _SETTINGS[key](key, value, where) if key in _SETTINGS else value
            for key, value in settings.items()}


# Samples per player per step where none is given, in Python and on the command line
# alike (`jaxsolve solve --batch`).
DEFAULT_BATCH_SIZE = 256


def sampled_cfr(batch_size: int = DEFAULT_BATCH_SIZE, *, expand_own: bool = True,
                expand_opponents: bool = True, expand_chance: bool = False,
                mask: npt.ArrayLike | None = None, chance_mask: npt.ArrayLike | None = None,
                exploration: float = 0.0, averaging: str = "traverser",
                rule: str = "cfr", traversal: str = "auto", split: str = "systematic",
                name: str | None = None) -> Solver:
    """Monte-Carlo CFR with a scheme of one's own: which nodes sample, which expand all.

    Args:
      batch_size: B samples per player per step, walked in parallel; the regret
        and average increments are their mean (default DEFAULT_BATCH_SIZE, 256, as
        `jaxsolve solve --batch`).
      expand_own: whether the traverser expands its own infosets where no mask is
        given (default True: with the next two, chance-sampled CFR).
      expand_opponents: whether the traverser expands the opponents' infosets where
        no mask is given (default True).
      expand_chance: whether the traverser expands chance nodes where no
        chance_mask is given (default False).
      mask: bool [I] or [P, I] (row p: when p traverses); True expands the infoset.
      chance_mask: bool [C] or [P, C] per chance node.
      exploration: weight of the uniform policy mixed into the traverser's own
        sampling policy (needed > 0 wherever the traverser samples).
      averaging: whose infosets a traversal adds to the average strategy:
        "traverser" or "opponents" (see the module docstring; in a one-player
        game "opponents" averages the traverser's, as there are no others).
        Where opponents are sampled, prefer "opponents": "traverser" weights each
        visit by 1/q of the sampled opponents' actions, a high-variance average
        (Leduc, own infosets expanded, B=256, 300 steps: exploitability 0.33
        against 0.057).
      rule: "cfr" (plain regret sums, uniform average), "cfr+" (floored at zero,
        linear average) or "dcfr" (discounted with 1.5, 0, 2).
      traversal: how a batch is drawn: "frontier" (B independent breadth-first
        walks; cost grows with B times the histories one sample reaches), "counts"
        (one pass over the tree splitting B visit counts, `jaxsolve.visit_counts`;
        cost independent of B) or "auto" (the cheaper: see `choose_traversal`).
      split: how "counts" splits a count at a sampled node: "systematic"
        (default, cheap, unbiased, negatively correlated samples) or "multinomial"
        (exactly B independent samples, slower).
      name: the solver's name; default "sampled-cfr".

    Returns:
      Solver with init(tree, key=None) -> MCCFRState and step(tree, state).

    Raises:
      ArgumentError: a setting out of range or of the wrong kind (masks are checked
        by init, against the tree).
    """
    checked = _checked_settings(
        "sampled_cfr", batch_size=batch_size, expand_own=expand_own,
        expand_opponents=expand_opponents, expand_chance=expand_chance,
        exploration=exploration, averaging=averaging, rule=rule, traversal=traversal,
        split=split, name=name)
    knobs = (checked["batch_size"], checked["expand_own"], checked["expand_opponents"],
             checked["expand_chance"], checked["exploration"], averaging, rule, traversal,
             split, name or "sampled-cfr")
    if mask is None and chance_mask is None:  # hashable knobs: share one Solver
        return _cached(*knobs)
    return _make(*knobs, mask=mask, chance_mask=chance_mask)


def _make(batch_size, expand_own, expand_opponents, expand_chance, exploration, averaging,
          rule, traversal, split, name, mask=None, chance_mask=None) -> Solver:
    settings = dict(expand_own=expand_own, expand_opponents=expand_opponents,
                    expand_chance=expand_chance, mask=mask, chance_mask=chance_mask)
    scheme = functools.partial(make_scheme, **settings)
    init = functools.partial(_init, scheme=scheme, exploration=exploration, solver_name=name)
    step = functools.partial(_step, batch_size=batch_size, exploration=exploration,
                             averaging=averaging, traversal=traversal, split=split,
                             solver_name=name, **RULES[rule])
    check = functools.partial(_check_scheme, masks=functools.partial(scheme_masks, **settings),
                              solver_name=name)
    return Solver(init, step, name, MCCFRState, check_state=check, samples=True)


def _check_scheme(tree: GameTree, state: MCCFRState, where: str, *, masks: Callable,
                  solver_name: str) -> None:
    """The state's sampling scheme is this solver's: which infosets and chance nodes
    each traverser expands lives in the state (`expand`, `expand_chance`, from init),
    so a state of another sampling solver would run that solver's scheme, or one this
    solver's init refuses, under this solver's name. Concrete states only."""
    if validate.traced(state.expand) or validate.traced(state.expand_chance):
        return
    expand, expand_c = masks(tree)
    if not (np.array_equal(np.asarray(state.expand), expand)
            and np.array_equal(np.asarray(state.expand_chance), expand_c)):
        validate.fail(where, f"the state samples other nodes than {solver_name} does (its "
                             "expand masks come from another sampling solver's init); "
                             f"continue it with that solver, or start from "
                             f"{solver_name}'s own init(tree, key)")


_cached = functools.cache(_make)


# What each named scheme fixes: passing one of these to its wrapper is refused
# (sampled_cfr takes them all). exploration is fixed where the traverser samples
# none of its own actions, so it would change nothing.
_SCHEME_KNOBS = ("expand_own", "expand_opponents", "expand_chance", "mask", "chance_mask",
                 "averaging")


def _refuse_fixed(where: str, kwargs: dict, fixed: tuple) -> None:
    clash = [key for key in fixed if key in kwargs]
    if clash:
        validate.fail(where, f"{where} fixes {', '.join(clash)} (they define its sampling "
                             "scheme); for another scheme use jaxsolve.sampled_cfr(...)")


def external_sampling(batch_size: int = DEFAULT_BATCH_SIZE, **kwargs: Any) -> Solver:
    """External-sampling MCCFR: the traverser expands all its actions, opponents and
    chance are sampled once per visited history; opponents' averages updated (in a
    one-player game, which has none, the traverser's).

    Args:
      batch_size: B samples per player per step.
      **kwargs: `rule`, `traversal`, `split`, `name` as in `sampled_cfr`; the scheme
        (expand_*, masks, averaging, exploration) is fixed and refused.
    Returns:
      Solver "es-mccfr" with init(tree, key=None) -> MCCFRState (key None means
      jax.random.PRNGKey(0)) and step(tree, state).
    """
    _refuse_fixed("external_sampling", kwargs, _SCHEME_KNOBS + ("exploration",))
    _checked_settings("external_sampling", batch_size=batch_size, **kwargs)
    return sampled_cfr(batch_size, expand_own=True, expand_opponents=False,
                       expand_chance=False, averaging="opponents",
                       name=kwargs.pop("name", "es-mccfr"), **kwargs)


def outcome_sampling(batch_size: int = DEFAULT_BATCH_SIZE, exploration: float = 0.6,
                     **kwargs: Any) -> Solver:
    """Outcome-sampling MCCFR: one trajectory per sample, the traverser's own actions
    sampled with `exploration` (OpenSpiel's default 0.6); the traverser's average
    updated with weight own reach / sampling probability.

    Args:
      batch_size: B trajectories per player per step.
      exploration: in (0, 1], the uniform policy's weight in the traverser's
        sampling policy.
      **kwargs: `rule`, `traversal`, `split`, `name` as in `sampled_cfr`; the scheme
        (expand_*, masks, averaging) is fixed and refused.
    Returns:
      Solver "os-mccfr" with init(tree, key=None) -> MCCFRState (key None means
      jax.random.PRNGKey(0)) and step(tree, state).
    """
    _refuse_fixed("outcome_sampling", kwargs, _SCHEME_KNOBS)
    _checked_settings("outcome_sampling", batch_size=batch_size, exploration=exploration,
                      **kwargs)
    return sampled_cfr(batch_size, expand_own=False, expand_opponents=False,
                       expand_chance=False, exploration=exploration, averaging="traverser",
                       name=kwargs.pop("name", "os-mccfr"), **kwargs)


def chance_sampling(batch_size: int = DEFAULT_BATCH_SIZE, **kwargs: Any) -> Solver:
    """Chance-sampled CFR: full width over decisions, one chance outcome per sample.

    Args:
      batch_size: B chance samples per player per step.
      **kwargs: `rule`, `traversal`, `split`, `name` as in `sampled_cfr`; the scheme
        (expand_*, masks, averaging, exploration) is fixed and refused.
    Returns:
      Solver "cs-cfr" with init(tree, key=None) -> MCCFRState (key None means
      jax.random.PRNGKey(0)) and step(tree, state).
    """
    _refuse_fixed("chance_sampling", kwargs, _SCHEME_KNOBS + ("exploration",))
    _checked_settings("chance_sampling", batch_size=batch_size, **kwargs)
    return sampled_cfr(batch_size, expand_own=True, expand_opponents=True,
                       expand_chance=False, averaging="traverser",
                       name=kwargs.pop("name", "cs-cfr"), **kwargs)


# By CLI name. Chance sampling is left out: on games with a wide decision tree its
# frontier is nearly the whole tree per sample (use it through the API).
SAMPLING_SOLVERS = {"os-mccfr": outcome_sampling, "es-mccfr": external_sampling}
