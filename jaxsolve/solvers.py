"""The CFR family as pure init/step pairs over a GameTree.

Every solver here is one update rule with different knobs:

| solver | updates | accumulated regrets | average weight | reference |
|---|---|---|---|---|
| cfr | simultaneous or alternating | R += r | 1 | Zinkevich et al. 2007 |
| cfr_plus | alternating | R = max(R + r, 0) | t | Tammelin 2014 |
| lcfr | alternating | R += r, then R *= t/(t+1) | t | Brown & Sandholm 2019 |
| dcfr | alternating | R += r, then R *= t^a/(t^a+1) where R >= 0, t^b/(t^b+1) else | t^gamma | Brown & Sandholm 2019 |
| pcfr_plus | alternating | R = max(R + r, 0); play RM(max(R + m, 0)), m = last r | t^2 | Farina, Kroer & Sandholm 2021 |

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
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import base, packing
from jaxsolve import sequences as seq
from jaxsolve import validate
from jaxsolve.base import CFRState, Solver
from jaxsolve.errors import ArgumentError, ArgumentTypeError
from jaxsolve.sampling import SAMPLING_SOLVERS
from jaxsolve.tree import GameTree
from jaxsolve.updates import (RESCALE_ABOVE, accumulate_regrets, instant_regrets, kahan_add,
                              regret_matching, rescale_average, uniform)


def init(tree: GameTree, key: jax.Array | None = None, *,
         solver_name: str = "solver") -> CFRState:
    """Zero regrets and average: the state of a full-width solver before its first iteration.

    The first iteration plays uniformly. Needs only the tree's sizes, so a batched tree
    gives the (shared) state of each of its games.

    Args:
      tree: the compiled game (a batched tree is accepted).
      key: checked and unused: a full-width solver draws nothing (every solver's init
        takes one, see `Solver`).
      solver_name: the solver's name, for error messages.

    Returns:
      A `CFRState` of zeros: `regrets`, `average`, `average_carry` and `prediction` are
        `[I, A]`; `iteration` is 0.

    Raises:
      ArgumentError: `tree` is not a GameTree, or `key` is not a PRNG key.
    """
    validate.game_tree(tree, f"{solver_name}.init", batch_ok=True)
    if key is not None:
        validate.prng_key(key, f"{solver_name}.init")
    shape = (tree.sizes.num_infosets, tree.sizes.num_actions)
    dtype = base.float_dtype()
    # One buffer per field, not one shared: a caller may donate the state
    # (`donate_argnums`), and XLA refuses to donate one buffer twice.
    return CFRState(*(jnp.zeros(shape, dtype) for _ in range(4)), jnp.zeros((), jnp.int32),
                    jnp.zeros((), dtype), jnp.ones((), dtype))


def current_policy(tree: GameTree, state: CFRState, solver: Solver | None = None) -> jax.Array:
    """The policy the next iteration plays.

    Regret matching on `state.regrets` (plus `state.prediction` where the state has one,
    PCFR+'s; a state of your own needs only `.regrets` `[I, A]`), or `solver.current`
    where the solver has its own rule (`cfr_variant`; without `solver`, such a state
    would get regret matching, which is not what it plays).

    Args:
      tree: the compiled game.
      state: a solver state on `tree` with `regrets` `[I, A]`.
      solver: the solver whose state it is; needed only for one with its own rule.

    Returns:
      `[I, A]` float array: each row a distribution over the infoset's legal actions.

    Raises:
      ArgumentError: `tree`, `state` or `solver` is not what it should be.
    """
    validate.game_tree(tree, "current_policy")
    if solver is not None and check_solver(solver, "current_policy").current is not None:
        return solver.current(tree, state)
    base.solver_state(tree, state, "current_policy", needs=("regrets",))
    # A state of one's own needs only .regrets; CFRState's prediction is zeros except
    # for PCFR+.
    regrets = state.regrets + getattr(state, "prediction", 0.0)
    return regret_matching(regrets, jnp.asarray(tree.legal))


def average_policy(tree: GameTree, state: CFRState) -> jax.Array:
    """The average strategy of a solver state: the policy that converges to equilibrium.

    Args:
      tree: the compiled game.
      state: a solver state on `tree` with `average` `[I, A]` (unnormalised).

    Returns:
      `[I, A]` float array: each row `state.average` normalised over the infoset's legal
        actions; uniform over them where the infoset was never reached.

    Raises:
      ArgumentError: `tree` is not a GameTree, or `state` lacks an `[I, A]` `average`.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> solver = jaxsolve.cfr_plus()
      >>> policy = jaxsolve.average_policy(tree, jaxsolve.run(solver, tree, solver.init(tree), 1000))
      >>> policy.shape
      (12, 2)
      >>> tree.names.infosets[1], [round(float(p), 3) for p in policy[1]]
      ('p0 card=1 history=', [1.0, 0.0])
    """
    validate.game_tree(tree, "average_policy")
    base.solver_state(tree, state, "average_policy", needs=("average",))
    legal = jnp.asarray(tree.legal)
    avg = jnp.where(legal, state.average, 0.0)
    total = seq.row_sum(avg, keepdims=True)
    return jnp.where(total > 0, avg / jnp.where(total > 0, total, 1.0),
                     uniform(legal, avg.dtype))


def _policy(policy_rule: Callable, regrets: jax.Array, legal: jax.Array,
            solver_name: str) -> jax.Array:
    """policy_rule(regrets, legal), checked (when traced, once) to be [I, A] floats."""
    policy = policy_rule(regrets, legal)
    if getattr(policy, "shape", None) != regrets.shape or not jnp.issubdtype(
            policy.dtype, jnp.floating):
        raise ArgumentError(f"{solver_name}: policy_rule(regrets, legal) must return a float "
                            f"array shaped like regrets {list(regrets.shape)}, got "
                            f"{getattr(policy, 'shape', type(policy).__name__)}"
                            f"{' ' + str(policy.dtype) if hasattr(policy, 'dtype') else ''}")
    return policy.astype(regrets.dtype)


def _step(tree: GameTree, state: CFRState, *, alternating: bool, floor: bool,
          alpha: float | None, beta: float | None, gamma: float, predictive: bool,
          policy_rule: Callable = regret_matching, solver_name: str = "solver") -> CFRState:
    where = f"{solver_name}.step"
    validate.game_tree(tree, where)
    base.solver_state(tree, state, where, expected=CFRState, solver_name=solver_name)
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
        # Only PCFR+ plays on a prediction; the others' is zeros, not worth a pass.
        policy = _policy(policy_rule, regrets + prediction if predictive else regrets, legal,
                         solver_name)
        flat = seq.flatten(tree, policy)
        own = seq.own_reach(tree, flat)
        plan = seq.realization_plan(tree, flat)
        for p in players:
            weights = seq.others_weights(tree, flat, plan, chance, p)
            values = seq.counterfactual_values(tree, flat, weights, p)
            mine = (owner == p)[:, None] & legal
            instant = jnp.where(mine, instant_regrets(policy, values), 0.0)
            regrets = accumulate_regrets(regrets, instant, mine, t, floor=floor,
                                         alpha=alpha, beta=beta)
            if predictive:
                prediction = jnp.where(mine, instant, prediction)
            average, carry = kahan_add(average, carry, weight * own[:, None] * policy, mine)
    average, carry, total, scale = rescale_average(average, carry, state.total_weight + weight,
                                                   state.weight_scale)
    return CFRState(regrets, average, carry, prediction, state.iteration + 1, total, scale)


@functools.cache
def _solver(name: str, **knobs) -> Solver:
    return Solver(functools.partial(init, solver_name=name),
                  functools.partial(_step, solver_name=name, **knobs), name, CFRState,
                  steps=functools.partial(_steps, solver_name=name, **knobs))


def _current(tree: GameTree, state: CFRState, *, policy_rule: Callable,
             solver_name: str) -> jax.Array:
    base.solver_state(tree, state, f"{solver_name}.current", expected=CFRState,
                          solver_name=solver_name)
    return _policy(policy_rule, state.regrets + state.prediction, jnp.asarray(tree.legal),
                   solver_name)


def cfr_variant(name: str, policy_rule: Callable[[jax.Array, jax.Array], jax.Array]
                = regret_matching, *, alternating: bool = True, floor: bool = False,
                alpha: float | None = None, beta: float | None = None, gamma: float = 1.0,
                predictive: bool = False) -> Solver:
    """A member of the CFR family with your own knobs and regret-to-policy rule.

    Each iteration, for each player in turn (all at once if not `alternating`): play
    `policy_rule(R + m, legal)` (m is the prediction, 0 unless `predictive`), compute that
    player's instantaneous counterfactual regrets r (`jaxsolve.counterfactual_values`:
    q - v), update R += r (then max(R, 0) if `floor`; then the DCFR discounts
    t^alpha / (t^alpha + 1) on positive and t^beta / (t^beta + 1) on negative entries if
    `alpha` is given), and add t^gamma * own reach * policy to the average
    (Kahan-compensated, rescaled as the module docstring says). The built-ins are
    members: `cfr_plus()` is `cfr_variant("cfr+", floor=True)`, `lcfr()` is
    alpha = beta = gamma = 1. `policy_rule` sees every row, other players' too; only the
    acting player's rows of its result are used. The solver's `current` applies the same
    rule, so `current_policy(tree, state, solver)` is what the next iteration plays.

    CFR with Hedge (exponential weights) on the counterfactual regrets:

        def hedge(regrets, legal, eta=0.5):
            z = jnp.where(legal, eta * regrets, -jnp.inf)
            return jax.nn.softmax(z, axis=-1)   # 0 on illegal actions
        solver = jaxsolve.cfr_variant("cfr-hedge", hedge, gamma=0.0)
        state = jaxsolve.run(solver, tree, solver.init(tree), 500)

    A rule's own parameter can be swept under vmap: build the solver inside the vmapped
    function (the rule's parameter is then traced; the knobs alpha, beta, gamma and floor
    must stay Python numbers: sweep them by building one solver per value) and call `run`
    there, e.g. `jax.vmap(lambda eta: run(cfr_variant("h", functools.partial(hedge,
    eta=eta)), tree, init(tree), n))`. Not cached: build a variant once and reuse it, or
    `run` compiles again for each new one.

    Args:
      name: the solver's name (non-empty), used in messages and `Solver.name`.
      policy_rule: `(regrets [I, A] float, legal [I, A] bool) -> policy [I, A] float`.
      alternating: update one player after the other (True) or all at once.
      floor: clip the accumulated regrets at zero after each update (CFR+).
      alpha: DCFR's exponent for positive regrets; None for no discount.
      beta: DCFR's exponent for negative regrets (finite or -inf); given with `alpha`.
      gamma: iteration t weighs t^gamma in the average; >= 0.
      predictive: play on the regrets plus the last instantaneous regret (PCFR+).

    Returns:
      A `Solver` whose state is a `CFRState`.

    Raises:
      ArgumentError: a knob out of range (`alpha` and `beta` go together; `gamma` >= 0),
        and, when traced, a rule whose result is not an `[I, A]` float array.
    """
    where = "cfr_variant"
    if not isinstance(name, str) or not name:
        validate.fail(where, f"name must be a non-empty string, got {name!r}")
    if not callable(policy_rule):
        validate.fail(where, f"policy_rule must be a function (regrets, legal) -> policy, "
                             f"got {type(policy_rule).__name__}")
    flags = {k: validate.flag(k, v, where) for k, v in
             (("alternating", alternating), ("floor", floor), ("predictive", predictive))}
    if (alpha is None) != (beta is None):
        validate.fail(where, "alpha and beta go together (DCFR's discounts of positive and "
                             f"negative regrets), got alpha={alpha!r}, beta={beta!r}")
    if alpha is not None:
        alpha, beta = _discounts(alpha, beta, where)
    gamma = validate.finite_real("gamma", gamma, where, low=0.0)
    knobs = dict(flags, alpha=alpha, beta=beta, gamma=gamma, policy_rule=policy_rule)
    return Solver(functools.partial(init, solver_name=name),
                  functools.partial(_step, solver_name=name, **knobs), name, CFRState,
                  functools.partial(_current, policy_rule=policy_rule, solver_name=name))


def cfr(alternating: bool = False) -> Solver:
    """Vanilla CFR (Zinkevich et al. 2007, "Regret Minimization in Games with Incomplete
    Information").

    Args:
      alternating: update one player after the other. False (the default) updates both
        at once, as in the paper; True matches OpenSpiel's `CFRSolver`.

    Returns:
      The `Solver` (cached: equal arguments give the same object).

    Raises:
      ArgumentError: `alternating` is not a bool.
    """
    alternating = validate.flag("alternating", alternating, "cfr")
    return _solver("cfr" if not alternating else "cfr-alt", alternating=alternating,
                   floor=False, alpha=None, beta=None, gamma=0.0, predictive=False)


def cfr_plus() -> Solver:
    """CFR+ (Tammelin 2014, "Solving Large Imperfect Information Games Using CFR+"):
    alternating updates, regrets floored at zero, linear averaging.

    Returns:
      The `Solver` (cached: every call gives the same object).

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> solver = jaxsolve.cfr_plus()
      >>> state = jaxsolve.run(solver, tree, solver.init(tree), 1000)
      >>> policy = jaxsolve.average_policy(tree, state)
      >>> print(f"{float(jaxsolve.exploitability(tree, policy)):.1e}")
      8.7e-05
    """
    return _solver("cfr+", alternating=True, floor=True, alpha=None, beta=None,
                   gamma=1.0, predictive=False)


def lcfr() -> Solver:
    """Linear CFR (Brown & Sandholm 2019, "Solving Imperfect-Information Games via
    Discounted Regret Minimization"): DCFR with alpha = beta = gamma = 1.

    Returns:
      The `Solver` (cached: every call gives the same object).
    """
    return _solver("lcfr", alternating=True, floor=False, alpha=1.0, beta=1.0,
                   gamma=1.0, predictive=False)


def dcfr(alpha: float = 1.5, beta: float = 0.0, gamma: float = 2.0) -> Solver:
    """Discounted CFR (Brown & Sandholm 2019). Defaults are the paper's 1.5, 0, 2.

    After each iteration positive regrets are multiplied by t^alpha / (t^alpha + 1),
    negative ones by t^beta / (t^beta + 1), and iteration t enters the average with
    weight t^gamma.

    Args:
      alpha: exponent of the discount of positive regrets; any finite real.
      beta: exponent of the discount of negative regrets; any finite real, or -inf
        (negative regrets dropped after every iteration, as CFR+ does; t^-inf = 0 is
        exact).
      gamma: exponent of the average's weights; >= 0: with decreasing weights the
        average never forgets the first iterates.

    Returns:
      The `Solver` (cached: equal arguments give the same object).

    Raises:
      ArgumentError: an exponent out of range (alpha = inf gives inf / inf).
    """
    alpha, beta = _discounts(alpha, beta, "dcfr")
    gamma = validate.finite_real("gamma", gamma, "dcfr", low=0.0)
    return _solver(f"dcfr({alpha:g},{beta:g},{gamma:g})", alternating=True, floor=False,
                   alpha=alpha, beta=beta, gamma=gamma, predictive=False)


def _discounts(alpha, beta, where: str) -> tuple[float, float]:
    """DCFR's exponents: alpha finite, beta finite or -inf (negative regrets dropped)."""
    minus_infinity = isinstance(beta, (float, np.floating)) and beta == -math.inf
    return (validate.finite_real("alpha", alpha, where),
            -math.inf if minus_infinity else validate.finite_real("beta", beta, where))


def pcfr_plus(gamma: float = 2.0) -> Solver:
    """Predictive CFR+ (Farina, Kroer & Sandholm 2021, "Faster Game Solving via Predictive
    Blackwell Approachability").

    CFR+ whose next policy also counts the last instantaneous regret as a prediction;
    quadratic averaging by default.

    Args:
      gamma: iteration t weighs t^gamma in the average; a finite number >= 0.

    Returns:
      The `Solver` (cached: equal arguments give the same object).

    Raises:
      ArgumentError: `gamma` is not a finite number >= 0.
    """
    return _solver("pcfr+", alternating=True, floor=True, alpha=None, beta=None,
                   gamma=validate.finite_real("gamma", gamma, "pcfr_plus", low=0.0),
                   predictive=True)


def run(solver: Solver, tree: GameTree, state: CFRState,
        num_iterations: int | jax.Array) -> CFRState:
    """`num_iterations` steps of a solver in one compiled loop.

    The loop is compiled once per solver and tree shape (and names), for any count: a
    concrete count (int or NumPy integer) is passed as an int32 array. Inside your own
    `jax.jit`, `vmap` or `shard_map` it is inlined, and the count may be traced.

    The state carries its iteration count (`state.iteration`), so a second call goes on
    where the first stopped, as one call of the total would (the weighted averages of
    linear and discounted CFR included). The built-in full-width solvers share
    `CFRState`, so one may go on from another's state on the same tree: a warm start
    (CFR+ from plain CFR's regrets and average, say), accepted on purpose.

    Args:
      solver: a `Solver`, e.g. `jaxsolve.cfr_plus()`.
      tree: the compiled game.
      state: the state of `solver.init` on this tree, or of an earlier `run`.
      num_iterations: how many steps; an integer >= 0, or a traced integer.

    Returns:
      The state after the steps, of the same type and shapes as `state`.

    Raises:
      ArgumentError: what is not a Solver, a GameTree or the state of this solver's
        init on this tree, or a concrete count that is not an integer >= 0
        (`ArgumentTypeError`, also a TypeError, for an argument of the wrong kind).
        Inside your own `jit` these checks see tracers, so a traced negative count runs
        no iteration without a word, and an argument that is no array fails in JAX's
        own words: call `run` directly where you can (it is compiled either way).

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> solver = jaxsolve.cfr_plus()
      >>> state = jaxsolve.run(solver, tree, solver.init(tree), 100)
      >>> state = jaxsolve.run(solver, tree, state, 50)   # goes on: 150 iterations
      >>> int(state.iteration), state.regrets.shape
      (150, (12, 2))
    """
    solver = check_solver(solver, "run")
    validate.game_tree(tree, "run")
    base.state_of(solver, tree, state, "run")
    validate.iterations(num_iterations, "run")
    return _run_steps(solver, tree, state, count_argument(num_iterations))


def count_argument(count: int | jax.Array) -> np.ndarray | jax.Array:
    """A checked concrete count as an int32 array, a traced count as it is.

    500, np.int32(500) and np.int64(500) then share one compilation (each kind would be
    its own jit cache entry).

    Args:
      count: an integer already checked (>= 0), or a tracer.

    Returns:
      A 0-d int32 NumPy array, or `count` itself when traced.
    """
    return count if validate.traced(count) else np.asarray(count, np.int32)


# Jitted here, not left to the caller: the loop body is a new function on every call,
# so an unjitted `run` would trace and compile the whole loop again each time.
@functools.partial(jax.jit, static_argnums=0)
def _run_steps(solver: Solver, tree: GameTree, state, num_iterations):
    return loop_steps(solver, tree, state, num_iterations)


def loop_steps(solver: Solver, tree: GameTree, state: Any,
               num_iterations: int | jax.Array) -> Any:
    """`num_iterations` steps of `solver` (its `steps` where it has one), unjitted.

    Args:
      solver: the solver.
      tree: the compiled game.
      state: the solver's state on `tree`.
      num_iterations: how many steps; may be traced.

    Returns:
      The state after the steps.
    """
    if solver.steps is not None:
        return solver.steps(tree, state, num_iterations)
    return jax.lax.fori_loop(0, num_iterations, lambda _, s: solver.step(tree, s), state)


SOLVERS: dict[str, Callable[..., Solver]] = {
    "cfr": cfr,
    "cfr-alt": functools.partial(cfr, alternating=True),
    "cfr+": cfr_plus,
    "lcfr": lcfr,
    "dcfr": dcfr,
    "pcfr+": pcfr_plus,
    **SAMPLING_SOLVERS,
}
"""Every built-in solver by CLI name: the full-width ones above, then the sampling
solvers of `jaxsolve.sampling` (`SAMPLING_SOLVERS`, each takes `batch_size`)."""


def check_solver(value: Any, where: str) -> Solver:
    """`value`, checked to be a `jaxsolve.Solver`.

    A factory not yet called or a solver's name is refused with the call that makes one.

    Args:
      value: what the caller passed as the solver.
      where: the public function's name, for the message.

    Returns:
      `value`, a `Solver`.

    Raises:
      ArgumentTypeError: `value` is not a Solver.
    """
    if isinstance(value, Solver):
        return value
    expected = "expected a Solver such as jaxsolve.cfr_plus(), got"
    if isinstance(value, str):
        by_name = f" (by name: jaxsolve.SOLVERS[{value!r}]())" if value in SOLVERS else ""
        validate.fail(where, f"{expected} {value!r}{by_name}", ArgumentTypeError)
    if callable(value):  # e.g. jaxsolve.cfr_plus, the factory, not cfr_plus() the solver
        name = getattr(value, "__name__", None)
        got = f"the function {name}: call it: jaxsolve.{name}()" if name else (
            f"{value!r}: call it to make the Solver")
        validate.fail(where, f"{expected} {got}", ArgumentTypeError)
    validate.fail(where, f"{expected} {validate.kind_of(value)}", ArgumentTypeError)


# ------------------------------------------------------------------ the loop by player
def _steps(tree: GameTree, state: CFRState, num_iterations, *, solver_name: str, **knobs):
    """`num_iterations` of `_step` with each player's entries packed for the loop.

    Each player's regrets, average and policy live in arrays of its own legal
    sequences, packed without padding by own depth (`jaxsolve.packing`), so a player's
    update touches its entries alone and its backup works on contiguous slices; the
    tree holds the leaves' and infosets' sequence ids in each player's packing. The
    arithmetic is `_step`'s, in the same order. Trees without the packed arrays
    (infosets not grouped by player and depth, or a player who forgets) loop over
    `_step` itself."""
    step = functools.partial(_step, solver_name=solver_name, **knobs)
    sizes = tree.sizes
    if not packing.available(tree):
        return jax.lax.fori_loop(0, num_iterations, lambda _, s: step(tree, s), state)
    where = f"{solver_name}.step"
    validate.game_tree(tree, where)
    base.solver_state(tree, state, where, expected=CFRState, solver_name=solver_name)
    layouts = [packing.layout(tree, p) for p in range(sizes.num_players)]
    packed = [packing.packed(tree, p) for p in range(sizes.num_players)]
    fixed = _player_arrays(tree, layouts, packed, state.regrets.dtype)
    # Only PCFR+ reads and writes the prediction; the others' zeros stay as they are.
    names = ("regrets", "average", "average_carry") + (
        ("prediction",) if knobs["predictive"] else ())
    split = tuple(tuple(getattr(state, f).reshape(-1)[q.sequences] for q in packed)
                  for f in names)
    carry = (split, state.iteration, state.total_weight, state.weight_scale)
    body = functools.partial(_player_step, layouts=layouts, fixed=fixed, sizes=sizes, **knobs)
    split, iteration, total, scale = jax.lax.fori_loop(0, num_iterations,
                                                       lambda _, c: body(c), carry)
    joined = {}
    for name, parts in zip(names, split):
        flat = getattr(state, name).reshape(-1)
        for q, part in zip(packed, parts):
            flat = flat.at[q.sequences].set(part)
        joined[name] = flat.reshape(state.regrets.shape)
    return state._replace(**joined, iteration=iteration, total_weight=total,
                          weight_scale=scale)


def _player_arrays(tree: GameTree, layouts: list[packing.Packing],
                   packed: list[packing.Packed], dtype) -> dict:
    """What the loop reads, in each player's packed numbering (`packing.Packed`: the
    player's sequences are its packed entries, the empty sequence S)."""
    chance = seq.chance_reach(tree, dtype)
    payoffs = jnp.asarray(tree.utilities, dtype)
    players = range(len(packed))
    slots = [packing.slots(tree, p) for p in players]

    def in_layout(x, p, fill):  # a [Z] array as player p's leaf sums read it
        if slots[p] is None:
            return x
        return jnp.concatenate([x, jnp.full((1,), fill, x.dtype)])[slots[p].leaves]

    return {
        "ancestors": [q.ancestors for q in packed],
        "parent": [q.parent for q in packed],
        "last": [q.last for q in packed],
        "slots": slots,
        # per player p, its leaves' chance * payoff and each other player's last
        # sequence, laid out as p adds them up (by leaf, or in its slots); the empty
        # slots weigh 0
        "chance_payoff": [in_layout(chance * payoffs[:, p], p, 0) for p in players],
        "others_last": [[None if q == p else in_layout(packed[q].last, p, layouts[q].size)
                         for q in players] for p in players],
        # regret matching's policy where no regret is positive: 1 / legal actions
        "uniform": [layout.spread(1 / layout.row_sum(jnp.ones(layout.size, dtype)))
                    for layout in layouts],
        "tree": tree,
    }


def _player_step(carry, *, layouts, fixed, sizes, alternating: bool, floor: bool, alpha, beta,
                 gamma: float, predictive: bool):
    """One `_step` of regret matching on the players' packed arrays (see `_steps`)."""
    arrays, iteration, total_weight, scale = carry
    regrets, average, compensation = (list(x) for x in arrays[:3])
    prediction = list(arrays[3]) if predictive else None
    dtype = regrets[0].dtype
    t = (iteration + 1).astype(dtype)
    weight = t**gamma * scale
    players = range(len(layouts))
    groups = [[p] for p in players] if alternating else [list(players)]
    policy, own, plan = [None] * len(layouts), [None] * len(layouts), [None] * len(layouts)
    stale = set(players)
    for group in groups:
        for q in sorted(stale):  # the players whose regrets changed since their last policy
            policy[q] = regret_matching(regrets[q] + prediction[q] if predictive else regrets[q],
                                        True, totals=_totals(layouts[q]),
                                        fallback=fixed["uniform"][q])
            own[q], plan[q] = packing.realization_plan(layouts[q], policy[q],
                                                      fixed["ancestors"][q])
        stale = set(group)
        for p in group:
            layout = layouts[p]
            weights = fixed["chance_payoff"][p]
            for q in players:
                if q != p:
                    weights = weights * plan[q][fixed["others_last"][p][q]]
            if fixed["slots"][p] is None:
                sums = jax.ops.segment_sum(weights, fixed["last"][p],
                                           num_segments=layout.size + 1)
            else:
                sums = packing.slot_sums(layout, fixed["slots"][p], weights)
            sums = seq.terminal_sum(fixed["tree"], sums)[:-1]
            values = _own_backup(layout, sums, policy[p], fixed["parent"][p])
            instant = instant_regrets(policy[p], values, totals=_totals(layout),
                                      width=sizes.num_actions)
            regrets[p] = accumulate_regrets(regrets[p], instant, True, t, floor=floor,
                                            alpha=alpha, beta=beta)
            if predictive:
                prediction[p] = instant
            average[p], compensation[p] = kahan_add(
                average[p], compensation[p], weight * layout.spread(own[p]) * policy[p], True)
    total_weight = total_weight + weight
    factor = jnp.where(total_weight > RESCALE_ABOVE, jnp.asarray(2.0**-40, dtype), 1.0)
    average = [x * factor for x in average]
    compensation = [x * factor for x in compensation]
    arrays = (tuple(regrets), tuple(average), tuple(compensation)) + (
        (tuple(prediction),) if predictive else ())
    return arrays, iteration + 1, total_weight * factor, scale * factor


def _totals(layout: packing.Packing) -> Callable[[jax.Array], jax.Array]:
    """Each infoset's sum at each of its packed entries (`updates.regret_matching`'s
    `totals`)."""
    return lambda x: layout.spread(layout.row_sum(x))


def _own_backup(layout: packing.Packing, sums: jax.Array, policy: jax.Array,
                parent: jax.Array) -> jax.Array:
    """[S] counterfactual values of one player's packed sequences (`packing.backup`
    with each infoset's policy-weighted value)."""
    def expected(level, depth):
        return layout.row_sum(policy[layout.entries(depth)] * level, depth)

    return packing.backup(layout, sums, parent, expected)[0]
