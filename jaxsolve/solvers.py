"""The CFR family as pure init/step pairs over a GameTree.

Every solver here is one update rule with different knobs:

=========  ===========  ===============================  ===============  ==========
solver     updates      accumulated regrets              average weight   reference
=========  ===========  ===============================  ===============  ==========
cfr        simultaneous R += r                           1                Zinkevich et al. 2007
           or alternating
cfr_plus   alternating  R = max(R + r, 0)                t                Tammelin 2014
lcfr       alternating  R += r, then R *= t/(t+1)        t                Brown & Sandholm 2019
dcfr       alternating  R += r, then R *= t^a/(t^a+1)    t^gamma          Brown & Sandholm 2019
                        where R >= 0, t^b/(t^b+1) else
pcfr_plus  alternating  R = max(R + r, 0); play          t^2              Farina, Kroer &
                        RM(max(R + m, 0)), m = last r                     Sandholm 2021
=========  ===========  ===============================  ===============  ==========

The conventions are OpenSpiel's (`CFRSolver`, `CFRPlusSolver`, `LCFRSolver`,
`DCFRSolver`), so that iterates agree to floating-point precision: with alternating
updates player p's regrets are computed against the *already updated* policies of
players before p, and p's average-strategy contribution uses p's own reach.

The average strategy is a weighted sum kept accurate in float32: additions are
Kahan-compensated (a plain float32 sum of 10^5 terms loses about three digits,
enough to make a Leduc CFR+ average 15x more exploitable than in float64), and
whenever the total weight passes 2^40 the sum, its compensation and the weights are
all multiplied by 2^-40, which is exact in binary floating point. So 10^6
iterations with weights growing like t^2 stay finite, and no probability changes.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import sequences as seq
from jaxsolve import validate
from jaxsolve.tree import GameTree


class CFRState(NamedTuple):
    """Solver state, a pytree of arrays.

    Attributes:
      regrets: [I, A] accumulated (possibly discounted or floored) regrets.
      average: [I, A] weighted sum of the players' own-reach-weighted strategies,
        times `weight_scale` (only ratios within a row matter).
      average_carry: [I, A] Kahan compensation of that sum (its lost low bits).
      prediction: [I, A] last instantaneous regrets (predictive CFR+), else zeros.
      iteration: [] int32, iterations completed.
      total_weight: [] float, sum of the averaging weights so far, times weight_scale.
      weight_scale: [] float, a power of two keeping the sums in range.
    """

    regrets: jax.Array
    average: jax.Array
    average_carry: jax.Array
    prediction: jax.Array
    iteration: jax.Array
    total_weight: jax.Array
    weight_scale: jax.Array


class Solver(NamedTuple):
    """A solver: a pair of pure functions, like optax's GradientTransformation.

    init(tree) -> state and step(tree, state) -> state. Factories are cached, so
    `cfr_plus() is cfr_plus()` and a solver can be a static jit argument.
    `state_type` is the class of the states init returns; `run` refuses any other
    (None: not checked).
    """

    init: Callable[[GameTree], CFRState]
    step: Callable[[GameTree, CFRState], CFRState]
    name: str
    state_type: type | None = None


def regret_matching(regrets: jax.Array, legal: jax.Array) -> jax.Array:
    """[I, A] policy proportional to positive regrets; uniform over legal where none."""
    positive = jnp.where(legal, jnp.maximum(regrets, 0.0), 0.0)
    total = positive.sum(axis=-1, keepdims=True)
    uniform = legal / legal.sum(axis=-1, keepdims=True)
    return jnp.where(total > 0, positive / jnp.where(total > 0, total, 1.0), uniform)


_RESCALE_ABOVE = 2.0**40


def _float_dtype():
    return jnp.zeros(()).dtype  # float64 under jax_enable_x64, else float32


def init(tree: GameTree, *, solver_name: str = "solver") -> CFRState:
    """Zero regrets and average; the first iteration plays uniformly. Needs only the
    tree's sizes, so a batched tree gives the (shared) state of each of its games."""
    validate.game_tree(tree, f"{solver_name}.init", batch_ok=True)
    shape = (tree.sizes.num_infosets, tree.sizes.num_actions)
    dtype = _float_dtype()
    zeros = jnp.zeros(shape, dtype)
    return CFRState(zeros, zeros, zeros, zeros, jnp.zeros((), jnp.int32),
                    jnp.zeros((), dtype), jnp.ones((), dtype))


def current_policy(tree: GameTree, state: CFRState) -> jax.Array:
    """[I, A] the policy the next iteration plays (with the prediction for PCFR+)."""
    validate.game_tree(tree, "current_policy")
    validate.solver_state(tree, state, "current_policy")
    return regret_matching(state.regrets + state.prediction, jnp.asarray(tree.legal))


def average_policy(tree: GameTree, state: CFRState) -> jax.Array:
    """[I, A] the average strategy; uniform over legal where never reached."""
    validate.game_tree(tree, "average_policy")
    validate.solver_state(tree, state, "average_policy")
    legal = jnp.asarray(tree.legal)
    avg = jnp.where(legal, state.average, 0.0)
    total = avg.sum(axis=-1, keepdims=True)
    uniform = legal / legal.sum(axis=-1, keepdims=True)
    return jnp.where(total > 0, avg / jnp.where(total > 0, total, 1.0), uniform)


def _step(tree: GameTree, state: CFRState, *, alternating: bool, floor: bool,
          alpha: float | None, beta: float | None, gamma: float, predictive: bool,
          solver_name: str = "solver") -> CFRState:
    where = f"{solver_name}.step"
    validate.game_tree(tree, where)
    validate.solver_state(tree, state, where, expected=CFRState, solver_name=solver_name)
    dtype = state.regrets.dtype
    legal = jnp.asarray(tree.legal)
    owner = jnp.asarray(tree.infoset_player)
    chance = seq.chance_reach(tree, dtype)
    t = (state.iteration + 1).astype(dtype)
    weight = t**gamma * state.weight_scale

    regrets, average, carry = state.regrets, state.average, state.average_carry
    prediction = state.prediction
    num_players = tree.sizes.num_players
    groups = [[p] for p in range(num_players)] if alternating else [list(range(num_players))]
    for players in groups:
        policy = regret_matching(regrets + prediction, legal)
        flat = seq.flatten(tree, policy)
        reach = seq.player_reach(tree, flat)
        own = seq.own_reach(tree, flat)
        for p in players:
            weights = seq.leaf_weights(tree, reach, chance, p)
            values = seq.counterfactual_values(tree, flat, weights, p)
            mine = (owner == p)[:, None] & legal
            expected = (policy * values).sum(axis=-1, keepdims=True)
            instant = jnp.where(mine, values - expected, 0.0)
            regrets = accumulate_regrets(regrets, instant, mine, t, floor=floor,
                                         alpha=alpha, beta=beta)
            if predictive:
                prediction = jnp.where(mine, instant, prediction)
            average, carry = kahan_add(average, carry, weight * own[:, None] * policy, mine)
    average, carry, total, scale = rescale_average(average, carry, state.total_weight + weight,
                                                   state.weight_scale)
    return CFRState(regrets, average, carry, prediction, state.iteration + 1, total, scale)


def accumulate_regrets(regrets, instant, mine, t, *, floor: bool, alpha, beta):
    """[I, A] regrets + instant at `mine`, floored (CFR+) and/or discounted (DCFR)."""
    updated = regrets + instant
    if floor:
        updated = jnp.maximum(updated, 0.0)
    if alpha is not None:
        pos, neg = t**alpha, t**beta
        updated = updated * jnp.where(updated >= 0, pos / (pos + 1), neg / (neg + 1))
    return jnp.where(mine, updated, regrets)


def kahan_add(total, carry, term, mask):
    """Compensated `total + term` where `mask`: `carry` holds what earlier additions
    lost to rounding and is fed back in, so float32 sums of 10^6 terms keep their
    digits. Returns the new (total, carry)."""
    term = jnp.where(mask, term - carry, 0.0)
    summed = total + term
    return summed, jnp.where(mask, (summed - total) - term, carry)


def rescale_average(average, carry, total_weight, weight_scale):
    """Multiplies the average sums by 2^-40 (exact) once the weights pass 2^40."""
    factor = jnp.where(total_weight > _RESCALE_ABOVE,
                       jnp.asarray(2.0**-40, total_weight.dtype), 1.0)
    return average * factor, carry * factor, total_weight * factor, weight_scale * factor


@functools.cache
def _solver(name: str, **knobs) -> Solver:
    return Solver(functools.partial(init, solver_name=name),
                  functools.partial(_step, solver_name=name, **knobs), name, CFRState)


def cfr(alternating: bool = False) -> Solver:
    """Vanilla CFR (Zinkevich et al. 2007, "Regret Minimization in Games with
    Incomplete Information"). Simultaneous updates by default, as in the textbook
    and seed 001; `alternating=True` matches OpenSpiel's `CFRSolver`."""
    alternating = validate.flag("alternating", alternating, "cfr")
    return _solver("cfr" if not alternating else "cfr-alt", alternating=alternating,
                   floor=False, alpha=None, beta=None, gamma=0.0, predictive=False)


def cfr_plus() -> Solver:
    """CFR+ (Tammelin 2014, "Solving Large Imperfect Information Games Using CFR+"):
    alternating updates, regrets floored at zero, linear averaging."""
    return _solver("cfr+", alternating=True, floor=True, alpha=None, beta=None,
                   gamma=1.0, predictive=False)


def lcfr() -> Solver:
    """Linear CFR (Brown & Sandholm 2019, "Solving Imperfect-Information Games via
    Discounted Regret Minimization"): DCFR with alpha = beta = gamma = 1."""
    return _solver("lcfr", alternating=True, floor=False, alpha=1.0, beta=1.0,
                   gamma=1.0, predictive=False)


def dcfr(alpha: float = 1.5, beta: float = 0.0, gamma: float = 2.0) -> Solver:
    """Discounted CFR (Brown & Sandholm 2019). Defaults are the paper's 1.5, 0, 2.

    After each iteration positive regrets are multiplied by t^alpha / (t^alpha + 1),
    negative ones by t^beta / (t^beta + 1), and iteration t enters the average with
    weight t^gamma. alpha and beta are any finite reals, and beta may also be -inf
    (negative regrets dropped after every iteration, as CFR+ does; t^-inf = 0 is
    exact). gamma must be >= 0: with decreasing weights the average never forgets
    the first iterates. Raises ArgumentError otherwise (alpha = inf gives inf / inf).
    """
    alpha = validate.finite_real("alpha", alpha, "dcfr")
    beta = -math.inf if _is_minus_infinity(beta) else validate.finite_real("beta", beta, "dcfr")
    gamma = validate.finite_real("gamma", gamma, "dcfr", low=0.0)
    return _solver(f"dcfr({alpha:g},{beta:g},{gamma:g})", alternating=True, floor=False,
                   alpha=alpha, beta=beta, gamma=gamma, predictive=False)


def _is_minus_infinity(value) -> bool:
    return isinstance(value, (float, np.floating)) and value == -math.inf


def pcfr_plus(gamma: float = 2.0) -> Solver:
    """Predictive CFR+ (Farina, Kroer & Sandholm 2021, "Faster Game Solving via
    Predictive Blackwell Approachability"): CFR+ whose next policy also counts the
    last instantaneous regret as a prediction; quadratic averaging by default.
    `gamma` (iteration t weighs t^gamma in the average) must be a finite number >= 0."""
    return _solver("pcfr+", alternating=True, floor=True, alpha=None, beta=None,
                   gamma=validate.finite_real("gamma", gamma, "pcfr_plus", low=0.0),
                   predictive=True)


def run(solver: Solver, tree: GameTree, state: CFRState, num_iterations) -> CFRState:
    """`num_iterations` steps in one compiled loop (jit it; the count may be traced).

        run = jax.jit(jaxsolve.run, static_argnums=0)   # one compilation for any count
        state = run(solver, tree, solver.init(tree), 1000)
        state = run(solver, tree, state, 500)           # continues: 1500 iterations

    The state carries its iteration count (`state.iteration`), so a second call goes
    on where the first stopped, as one call of the total would (the weighted averages
    of linear and discounted CFR included).

    Raises ArgumentError (a ValueError; ArgumentTypeError also a TypeError) for what
    is not a Solver, a GameTree or the state of this solver's init on this tree, or
    a concrete count that is not an integer >= 0."""
    solver = validate.solver(solver, "run")
    validate.game_tree(tree, "run")
    validate.solver_state(tree, state, "run", expected=solver.state_type,
                          solver_name=solver.name)
    validate.iterations(num_iterations, "run")
    return jax.lax.fori_loop(0, num_iterations, lambda _, s: solver.step(tree, s), state)


SOLVERS: dict[str, Callable[..., Solver]] = {
    "cfr": cfr,
    "cfr-alt": functools.partial(cfr, alternating=True),
    "cfr+": cfr_plus,
    "lcfr": lcfr,
    "dcfr": dcfr,
    "pcfr+": pcfr_plus,
}
"""Full-width solvers by CLI name; `jaxsolve.sampling` adds its sampling solvers
(each takes `batch_size`) to this dict when imported, as `jaxsolve` does."""
