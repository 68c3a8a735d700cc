"""The update rules, written once and shared by the full-width kernel
(`jaxsolve.kernel`, on each player's packed sequences or on padded `[I, A]` rows)
and the sampling solvers (`jaxsolve.sampling`): regret matching, instantaneous and
accumulated regrets, the average strategy's compensated sum and its rescaling (see
`jaxsolve.solvers` for why float32 needs both), and the last-iterate update of
magnetic mirror descent.

A rule sees an infoset's entries through `Rows`: elementwise arithmetic on the
entries, and `rows.total(x)` / `rows.max(x)` / `rows.uniform(dtype)` for what
depends on the whole infoset. Two layouts implement it: `PaddedRows`, `[..., I, A]`
arrays with a legal mask, and `jaxsolve.packing.PackedRows`, one player's legal
sequences in a flat array without padding. A rule written on `Rows` runs on both.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp

from jaxsolve import sequences as seq


class Rows(Protocol):
    """How an update rule reduces over each infoset's entries, whatever their layout.

    `x` below is an array of entries in the layout at hand (`[S]` packed sequences
    or `[..., I, A]` padded rows); each method's result broadcasts against it.
    """

    def total(self, x: jax.Array) -> jax.Array:
        """The sum of each infoset's (legal) entries, at each of its entries.

        Args:
          x: entries in the layout at hand.

        Returns:
          An array that broadcasts against `x`.
        """

    def max(self, x: jax.Array) -> jax.Array:
        """The largest of each infoset's (legal) entries, at each of its entries.

        Args:
          x: entries in the layout at hand.

        Returns:
          An array that broadcasts against `x`.
        """

    def uniform(self, dtype: Any) -> jax.Array:
        """1 / the infoset's number of legal actions at each legal entry, 0 elsewhere.

        Args:
          dtype: the float dtype of the result.

        Returns:
          An array shaped like the entries.
        """

    def restrict(self, x: jax.Array) -> jax.Array:
        """`x` with the illegal entries 0 (the identity where there are none).

        Args:
          x: entries in the layout at hand.

        Returns:
          An array shaped like `x`.
        """


class PaddedRows(NamedTuple):
    """`Rows` of `[..., I, A]` arrays, row i infoset i, with a legal mask.

    Attributes:
      legal: `[..., I, A]` bool, the legal actions.
    """

    legal: jax.Array

    def total(self, x: jax.Array) -> jax.Array:
        """Each row's sum over its legal entries.

        Args:
          x: `[..., I, A]` entries.

        Returns:
          `[..., I, 1]` sums.
        """
        return seq.row_sum(jnp.where(self.legal, x, 0.0), keepdims=True)

    def max(self, x: jax.Array) -> jax.Array:
        """Each row's largest legal entry.

        Args:
          x: `[..., I, A]` entries.

        Returns:
          `[..., I, 1]` maxima.
        """
        return seq.row_max(jnp.where(self.legal, x, -jnp.inf))[..., None]

    def uniform(self, dtype: Any) -> jax.Array:
        """Uniform over each row's legal actions.

        (`legal / legal.sum()` would be float64 under jax_enable_x64, turning a
        float32 state's policy into float64.)

        Args:
          dtype: the float dtype of the result.

        Returns:
          `[..., I, A]` policy, 0 at illegal actions.
        """
        legal = jnp.asarray(self.legal, dtype)
        return legal / seq.row_sum(legal, keepdims=True)

    def restrict(self, x: jax.Array) -> jax.Array:
        """`x` with 0 at the illegal actions.

        Args:
          x: `[..., I, A]` entries.

        Returns:
          `[..., I, A]` array.
        """
        return jnp.where(self.legal, x, 0.0)


def as_rows(rows: Rows | jax.Array) -> Rows:
    """`rows` itself, or a legal mask `[..., I, A]` as `PaddedRows`.

    Args:
      rows: a `Rows`, or a bool legal mask.

    Returns:
      A `Rows`.
    """
    return rows if hasattr(rows, "total") else PaddedRows(jnp.asarray(rows))


def regret_matching(regrets: jax.Array, rows: Rows | jax.Array) -> jax.Array:
    """Regret matching: the policy proportional to the positive regrets.

    The built-in solvers' rule, and the model of a rule of your own
    (`jaxsolve.cfr_variant`): elementwise arithmetic and `rows`' reductions only.

    Args:
      regrets: accumulated regrets: one player's packed entries `[S]`, or `[..., I, A]`.
      rows: their `Rows`, or for `[..., I, A]` regrets the bool legal mask.

    Returns:
      The policy, shaped like `regrets`: uniform over the legal actions at an infoset
        without positive regret, 0 at illegal actions.

    Examples:
      >>> import jax.numpy as jnp, jaxsolve
      >>> jaxsolve.regret_matching(jnp.array([[3.0, -1.0, 1.0], [-2.0, -1.0, 0.0]]),
      ...                          jnp.array([[True, True, True], [True, True, False]]))
      Array([[0.75, 0.  , 0.25],
             [0.5 , 0.5 , 0.  ]], dtype=float32)
    """
    rows = as_rows(rows)
    positive = rows.restrict(jnp.maximum(regrets, 0.0))
    total = rows.total(positive)
    return jnp.where(total > 0, positive / jnp.where(total > 0, total, 1.0),
                     rows.uniform(positive.dtype))


def uniform(legal: jax.Array, dtype: jax.typing.DTypeLike) -> jax.Array:
    """Uniform over the legal actions, in `dtype`: the fallback of regret matching and of
    the average policy (`PaddedRows.uniform`).

    Args:
      legal: `[..., I, A]` bool, the legal actions.
      dtype: float dtype of the result.

    Returns:
      `[..., I, A]` array.
    """
    return PaddedRows(legal).uniform(dtype)


RESCALE_ABOVE = 2.0**40


def instant_regrets(policy: jax.Array, values: jax.Array, rows: Rows | None = None, *,
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
      policy: `[n, A]` the policy played at the infosets (0 at illegal actions), or
        one player's packed entries `[S]`.
      values: their counterfactual values, likewise.
      rows: their `Rows`; None for `[n, A]` rows whose illegal entries are 0.
      width: A, the tree's width, when the entries are not `[n, A]`.

    Returns:
      The regrets, shaped like `values`.
    """
    expected = (rows.total(policy * values) if rows is not None
                else seq.row_sum(policy * values, keepdims=True))
    regrets = values - expected
    width = values.shape[-1] if width is None else width
    tolerance = 4 * width * jnp.finfo(values.dtype).eps * jnp.abs(expected)
    return jnp.where(jnp.abs(regrets) <= tolerance, 0.0, regrets)


def accumulate_regrets(regrets: jax.Array, instant: jax.Array, mine: jax.Array,
                       t: jax.Array, *, floor: bool, alpha: float | None,
                       beta: float | None, discount_offset: Any = 1.0) -> jax.Array:
    """The regrets after one update of the updating player's entries.

    `regrets + instant` where `mine`, floored at 0 if `floor` (CFR+), then discounted if
    `alpha` is not None (DCFR: positive entries times t^alpha / (t^alpha + c), c the
    `discount_offset`, 1 in DCFR and 1.5 in DCFR+; negative ones times
    t^beta / (t^beta + 1)); other entries kept.

    Args:
      regrets: `[I, A]` accumulated regrets.
      instant: `[I, A]` this iteration's instantaneous regrets.
      mine: `[I, A]` bool, the updating player's legal actions.
      t: `[]` float, the 1-based iteration.
      floor: clip at 0 (CFR+).
      alpha: DCFR's exponent for positive regrets (a number or a traced scalar), or
        None for no discount.
      beta: DCFR's exponent for negative regrets (used with `alpha`), likewise.
      discount_offset: c in the positive entries' discount t^alpha / (t^alpha + c)
        (used with `alpha`), a number >= 0 or a traced scalar.

    Returns:
      `[I, A]` regrets.
    """
    updated = regrets + instant
    if floor:
        updated = jnp.maximum(updated, 0.0)
    if alpha is not None:
        pos, neg = t**alpha, t**beta
        factor = jnp.where(updated >= 0, pos / (pos + discount_offset), neg / (neg + 1))
        updated = updated * factor.astype(updated.dtype)  # a traced knob's dtype aside
    return jnp.where(mine, updated, regrets)


def weighted_prediction(instant: jax.Array, weight: Any = 1.0) -> jax.Array:
    """What a predictive rule adds to the regrets to play next: the instantaneous
    regrets just observed times the prediction weight (1 in PCFR+, 1/3 in SAPCFR+).

    A weight of the Python number 1 returns `instant` itself: PCFR+'s program and
    iterates are untouched.

    Args:
      instant: this iteration's instantaneous regrets.
      weight: the prediction weight, a number or a traced scalar.

    Returns:
      The prediction, shaped and typed like `instant`.
    """
    if isinstance(weight, (int, float)) and weight == 1.0:
        return instant
    return (instant * weight).astype(instant.dtype)  # a traced knob's dtype aside


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


def rescale_factor(total_weight: jax.Array) -> jax.Array:
    """2^-40 once `total_weight` passes 2^40, else 1: what `rescale_average`
    multiplies the average's sums by.

    Args:
      total_weight: `[]` sum of the weights so far.

    Returns:
      `[]` the factor, in `total_weight`'s dtype.
    """
    return jnp.where(total_weight > RESCALE_ABOVE, jnp.asarray(2.0**-40, total_weight.dtype),
                     jnp.asarray(1.0, total_weight.dtype))


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
    factor = rescale_factor(total_weight)
    return average * factor, carry * factor, total_weight * factor, weight_scale * factor


def magnetic_mirror_descent(policy: jax.Array, magnet: jax.Array, values: jax.Array,
                            reach: jax.Array, rows: Rows, *, temperature: jax.Array,
                            learning_rate: jax.Array, magnet_learning_rate: jax.Array,
                            floor: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One step of magnetic mirror descent at every infoset, in behavioural form with
    Q-value feedback (Sokota et al., ICLR 2023), as the authors' code does it.

    With Q = values / reach (the expected payoff of each action given that the
    infoset is reached), eta the learning rate, tau the temperature and mu the
    magnet learning rate:

        e = (log pi + eta * tau * log mag + eta * Q) / (1 + eta * tau)
        pi' = project(exp(e - max e))
        mag' = project(mag^(1 - mu) * pi'^mu)

    where project(x) = max(x, floor) / sum(max(x, floor)) over the legal actions.
    The floor applies to exp(e - max e), whose largest entry is 1, so it bounds each
    probability below by about floor / A, and log pi stays finite. An infoset with
    `reach` 0 (never reached by chance and the other players) has no Q: its policy
    and magnet are kept.

    Args:
      policy: the current policy: one player's packed entries `[S]`, or `[..., I, A]`
        (0 at illegal actions).
      magnet: the magnet, likewise.
      values: the counterfactual values of the policy's entries (payoffs weighted by
        chance's and the other players' reach), likewise.
      reach: chance's and the other players' probability of reaching each entry's
        infoset, likewise (broadcasting against `values`).
      rows: their `Rows`.
      temperature: `[]` tau >= 0, how strongly the magnet pulls.
      learning_rate: `[]` eta > 0, the step size.
      magnet_learning_rate: `[]` mu in [0, 1], how far the magnet moves towards the new
        policy.
      floor: `[]` the least unnormalised weight of an action, >= 0.

    Returns:
      (policy, magnet) after the step, shaped like `policy`, 0 at illegal actions.
    """
    legal = rows.restrict(jnp.ones_like(policy)) > 0

    def log(x):  # illegal entries are 0 and are dropped below
        return jnp.log(jnp.where(legal, x, 1.0))

    def project(x):
        x = rows.restrict(jnp.maximum(x, floor))
        return x / rows.total(x)

    seen = reach > 0
    q = values / jnp.where(seen, reach, 1.0)
    pull = learning_rate * temperature
    energy = (log(policy) + pull * log(magnet) + learning_rate * q) / (1 + pull)
    new_policy = project(rows.restrict(jnp.exp(energy - rows.max(energy))))
    new_magnet = project(magnet**(1 - magnet_learning_rate)
                         * new_policy**magnet_learning_rate)
    return jnp.where(seen, new_policy, policy), jnp.where(seen, new_magnet, magnet)
