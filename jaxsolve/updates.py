"""The CFR family's update rules, shared by the full-width solvers
(`jaxsolve.solvers`) and the sampling ones (`jaxsolve.sampling`): regret matching,
instantaneous and accumulated regrets, and the average strategy's compensated sum
and its rescaling (see `jaxsolve.solvers` for why float32 needs both).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from jaxsolve import sequences as seq


def row_totals(x: jax.Array) -> jax.Array:
    """The sum of each row: how the update rules below total an infoset's entries
    unless told otherwise.

    Args:
      x: `[..., I, A]` array.

    Returns:
      `[..., I, 1]` array.
    """
    return seq.row_sum(x, keepdims=True)


def regret_matching(regrets: jax.Array, legal: jax.Array, *,
                    totals: Callable[[jax.Array], jax.Array] = row_totals,
                    fallback: jax.Array | None = None) -> jax.Array:
    """Regret matching: the policy proportional to the positive regrets.

    Args:
      regrets: `[..., I, A]` accumulated regrets.
      legal: `[..., I, A]` bool, the legal actions.
      totals: the sum of each infoset's entries, broadcastable against `regrets`;
        another layout of the entries (`jaxsolve.packing`) passes its own.
      fallback: the policy of an infoset without positive regret; uniform over the
        legal actions if None.

    Returns:
      `[..., I, A]` policy; `fallback` at a row without positive regret, 0 at
        illegal actions.
    """
    positive = jnp.where(legal, jnp.maximum(regrets, 0.0), 0.0)
    total = totals(positive)
    if fallback is None:
        fallback = uniform(legal, positive.dtype)
    return jnp.where(total > 0, positive / jnp.where(total > 0, total, 1.0), fallback)


def uniform(legal: jax.Array, dtype: jax.typing.DTypeLike) -> jax.Array:
    """Uniform over the legal actions, in `dtype`: the fallback of regret matching and of
    the average policy.

    (`legal / legal.sum()` would be float64 under jax_enable_x64, turning a float32
    state's policy into float64.)

    Args:
      legal: `[..., I, A]` bool, the legal actions.
      dtype: float dtype of the result.

    Returns:
      `[..., I, A]` array.
    """
    legal = jnp.asarray(legal, dtype)
    return legal / seq.row_sum(legal, keepdims=True)


RESCALE_ABOVE = 2.0**40


def instant_regrets(policy: jax.Array, values: jax.Array, *,
                    totals: Callable[[jax.Array], jax.Array] = row_totals,
                    width: int | None = None) -> jax.Array:
    """Instantaneous regrets q - v of infosets under `policy` (v: the policy-weighted sum
    of each row of `values`).

    A regret within round-off of the row's value, |q - v| <= 4 * A * eps * |v|, is
    exactly 0. Actions of equal value then have equal regrets: the values of equal
    subtrees, summed in another order, can differ in their last bits, and CFR+ (regrets
    floored at 0, the policy proportional to the positive ones) turns such a residue of
    1e-17 into a pure strategy on an action no better than the others, which on games
    with many ties (Spoof) slows convergence a thousandfold.

    Args:
      policy: `[n, A]` the policy played at the infosets.
      values: `[n, A]` their counterfactual values.
      totals: as in `regret_matching`.
      width: A, the tree's width, when the entries are not `[n, A]`.

    Returns:
      `[n, A]` regrets.
    """
    expected = totals(policy * values)
    regrets = values - expected
    width = values.shape[-1] if width is None else width
    tolerance = 4 * width * jnp.finfo(values.dtype).eps * jnp.abs(expected)
    return jnp.where(jnp.abs(regrets) <= tolerance, 0.0, regrets)


def accumulate_regrets(regrets: jax.Array, instant: jax.Array, mine: jax.Array,
                       t: jax.Array, *, floor: bool, alpha: float | None,
                       beta: float | None) -> jax.Array:
    """The regrets after one update of the updating player's entries.

    `regrets + instant` where `mine`, floored at 0 if `floor` (CFR+), then discounted if
    `alpha` is not None (DCFR: positive entries times t^alpha / (t^alpha + 1), negative
    ones times t^beta / (t^beta + 1)); other entries kept.

    Args:
      regrets: `[I, A]` accumulated regrets.
      instant: `[I, A]` this iteration's instantaneous regrets.
      mine: `[I, A]` bool, the updating player's legal actions.
      t: `[]` float, the 1-based iteration.
      floor: clip at 0 (CFR+).
      alpha: DCFR's exponent for positive regrets, or None for no discount.
      beta: DCFR's exponent for negative regrets (used with `alpha`).

    Returns:
      `[I, A]` regrets.
    """
    updated = regrets + instant
    if floor:
        updated = jnp.maximum(updated, 0.0)
    if alpha is not None:
        pos, neg = t**alpha, t**beta
        updated = updated * jnp.where(updated >= 0, pos / (pos + 1), neg / (neg + 1))
    return jnp.where(mine, updated, regrets)


def kahan_add(total: jax.Array, carry: jax.Array, term: jax.Array,
              mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Compensated `total + term` where `mask`; elsewhere unchanged.

    `carry` holds what earlier additions lost to rounding and is fed back in, so float32
    sums of 10^6 terms keep their digits. The solvers add weight * own reach * policy
    this way.

    Args:
      total: `[I, A]` the running sum.
      carry: `[I, A]` its compensation; start from 0.
      term: `[I, A]` what to add.
      mask: `[I, A]` bool, the entries to add to.

    Returns:
      (total, carry): the new `[I, A]` sum and compensation.
    """
    term = jnp.where(mask, term - carry, 0.0)
    summed = total + term
    return summed, jnp.where(mask, (summed - total) - term, carry)


def rescale_average(average: jax.Array, carry: jax.Array, total_weight: jax.Array,
                    weight_scale: jax.Array
                    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The average's sums, all multiplied by 2^-40 (exact in binary floating point) once
    `total_weight` passes 2^40, else unchanged.

    Call it after each iteration's additions, with weights drawn as
    t^gamma * weight_scale.

    Args:
      average: `[I, A]` weighted sum of strategies.
      carry: `[I, A]` its Kahan compensation.
      total_weight: `[]` sum of the weights so far.
      weight_scale: `[]` the power of two the weights are drawn with.

    Returns:
      (average, carry, total_weight, weight_scale), rescaled together.
    """
    factor = jnp.where(total_weight > RESCALE_ABOVE,
                       jnp.asarray(2.0**-40, total_weight.dtype), 1.0)
    return average * factor, carry * factor, total_weight * factor, weight_scale * factor
