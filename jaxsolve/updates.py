"""The CFR family's update rules, shared by the full-width solvers
(`jaxsolve.solvers`) and the sampling ones (`jaxsolve.sampling`): regret matching,
instantaneous and accumulated regrets, and the average strategy's compensated sum
and its rescaling (see `jaxsolve.solvers` for why float32 needs both).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsolve import sequences as seq


def regret_matching(regrets: jax.Array, legal: jax.Array) -> jax.Array:
    """[I, A] policy proportional to positive regrets; uniform over legal where none."""
    positive = jnp.where(legal, jnp.maximum(regrets, 0.0), 0.0)
    total = seq.row_sum(positive, keepdims=True)
    return jnp.where(total > 0, positive / jnp.where(total > 0, total, 1.0),
                     uniform(legal, positive.dtype))


def uniform(legal: jax.Array, dtype) -> jax.Array:
    """[I, A] uniform over the legal actions, in `dtype`: the fallback of regret
    matching and of the average policy. (legal / legal.sum() is float64 under
    jax_enable_x64, which turned a float32 state's policy into float64, and a custom
    solver built on regret_matching could not continue a float32 state.)"""
    legal = jnp.asarray(legal, dtype)
    return legal / seq.row_sum(legal, keepdims=True)


RESCALE_ABOVE = 2.0**40


def instant_regrets(policy: jax.Array, values: jax.Array) -> jax.Array:
    """[n, A] instantaneous regrets q - v of infosets with counterfactual values
    `values` [n, A] under `policy` [n, A] (v: the policy-weighted sum of each row).

    A regret within round-off of the row's value, |q - v| <= 4 * A * eps * |v|, is
    exactly 0. Actions of equal value then have equal regrets: the values of equal
    subtrees, summed in another order, can differ in their last bits, and CFR+
    (regrets floored at 0, the policy proportional to the positive ones) turns such
    a residue of 1e-17 into a pure strategy on an action no better than the others,
    which on games with many ties (Spoof) slows convergence a thousandfold."""
    expected = seq.row_sum(policy * values, keepdims=True)
    regrets = values - expected
    tolerance = 4 * values.shape[-1] * jnp.finfo(values.dtype).eps * jnp.abs(expected)
    return jnp.where(jnp.abs(regrets) <= tolerance, 0.0, regrets)


def accumulate_regrets(regrets, instant, mine, t, *, floor: bool, alpha, beta):
    """[I, A] regrets + instant where `mine` ([I, A] bool: the updating player's legal
    actions), floored at 0 if `floor` (CFR+), then discounted if `alpha` is not None
    (DCFR: positive entries times t^alpha / (t^alpha + 1), negative ones times
    t^beta / (t^beta + 1), t the 1-based iteration as a float); other entries kept."""
    updated = regrets + instant
    if floor:
        updated = jnp.maximum(updated, 0.0)
    if alpha is not None:
        pos, neg = t**alpha, t**beta
        updated = updated * jnp.where(updated >= 0, pos / (pos + 1), neg / (neg + 1))
    return jnp.where(mine, updated, regrets)


def kahan_add(total, carry, term, mask):
    """Compensated `total + term` where `mask` (all [I, A]; elsewhere unchanged):
    `carry` holds what earlier additions lost to rounding and is fed back in, so
    float32 sums of 10^6 terms keep their digits. Returns the new (total, carry);
    start from carry = 0. The solvers add weight * own reach * policy this way."""
    term = jnp.where(mask, term - carry, 0.0)
    summed = total + term
    return summed, jnp.where(mask, (summed - total) - term, carry)


def rescale_average(average, carry, total_weight, weight_scale):
    """(average, carry, total_weight, weight_scale), all multiplied by 2^-40 (exact in
    binary floating point) once `total_weight` passes 2^40, else unchanged; call it
    after each iteration's additions, with weights drawn as t^gamma * weight_scale."""
    factor = jnp.where(total_weight > RESCALE_ABOVE,
                       jnp.asarray(2.0**-40, total_weight.dtype), 1.0)
    return average * factor, carry * factor, total_weight * factor, weight_scale * factor
