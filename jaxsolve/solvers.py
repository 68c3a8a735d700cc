"""The full-width solvers as pure init/step pairs over a GameTree: the CFR family and
magnetic mirror descent.

Every solver of the CFR family is one update rule with different knobs:

| solver | updates | accumulated regrets | average weight | reference |
|---|---|---|---|---|
| cfr | simultaneous or alternating | R += r | 1 | Zinkevich et al. 2007 |
| cfr_plus | alternating | R = max(R + r, 0) | t | Tammelin 2014 |
| lcfr | alternating | R += r, then R *= t/(t+1) | t | Brown & Sandholm 2019 |
| dcfr | alternating | R += r, then R *= t^a/(t^a+1) where R >= 0, t^b/(t^b+1) else | t^gamma | Brown & Sandholm 2019 |
| pcfr_plus | alternating | R = max(R + r, 0); play RM(max(R + m, 0)), m = last r | t^2 | Farina, Kroer & Sandholm 2021 |
| dcfr_plus | alternating | R = max(R + r, 0) * t^a/(t^a+1.5) | t^4 | Xu et al. 2024 |
| pdcfr_plus | alternating | R = max(R + r, 0) * t^a/(t^a+1); play RM(max(R + m, 0)) | t^5 | Xu et al. 2024 |
| sapcfr_plus | alternating | R = max(R + r, 0); play RM(max(R + m/3, 0)) | t^2 | Meng et al. 2026 |

Each is a `jaxsolve.kernel.Rule` run by the one kernel (`jaxsolve.kernel`), as is
every `cfr_variant` of your own: the same code at the same speed. So is `mmd`,
magnetic mirror descent (Sokota et al. 2023), whose rule keeps the current policy and
a magnet instead of regrets and an average: its last iterate converges. The conventions
are OpenSpiel's (`CFRSolver`, `CFRPlusSolver`, `LCFRSolver`, `DCFRSolver`), so that
iterates agree to floating-point precision: with alternating updates player p's
regrets are computed against the *already updated* policies of players before p, and
p's average-strategy contribution uses p's own reach.

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

from jaxsolve import base, kernel
from jaxsolve import sequences as seq
from jaxsolve import validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.base import CFRState, MMDState, Solver
from jaxsolve.errors import ArgumentTypeError
from jaxsolve.kernel import Mirror, Rule
from jaxsolve.sampling import SAMPLING_SOLVERS
from jaxsolve.tree import GameTree
from jaxsolve.updates import PaddedRows, Rows, regret_matching, uniform


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
    tree_arguments.game_tree(tree, f"{solver_name}.init", batch_ok=True)
    if key is not None:
        validate.prng_key(key, f"{solver_name}.init")
    shape = (tree.sizes.num_infosets, tree.sizes.num_actions)
    dtype = base.float_dtype()
    # One buffer per field, not one shared: a caller may donate the state
    # (`donate_argnums`), and XLA refuses to donate one buffer twice.
    return CFRState(*(jnp.zeros(shape, dtype) for _ in range(4)), jnp.zeros((), jnp.int32),
                    jnp.zeros((), dtype), jnp.ones((), dtype))


def _mmd_init(tree: GameTree, key: jax.Array | None = None, *,
              solver_name: str = "mmd") -> MMDState:
    """The uniform policy and magnet: magnetic mirror descent before its first iteration.

    Args:
      tree: the compiled game (a batched tree is accepted: its games share `legal`).
      key: checked and unused, as in `init`.
      solver_name: the solver's name, for error messages.

    Returns:
      An `MMDState`: `policy` and `magnet` `[I, A]` uniform over each infoset's legal
        actions; `iteration` 0.

    Raises:
      ArgumentError: `tree` is not a GameTree, or `key` is not a PRNG key.
    """
    tree_arguments.game_tree(tree, f"{solver_name}.init", batch_ok=True)
    if key is not None:
        validate.prng_key(key, f"{solver_name}.init")
    legal = jnp.asarray(tree.legal)
    legal = legal.reshape((-1,) + legal.shape[-2:])[0]
    dtype = base.float_dtype()
    # One buffer per field, as in `init`.
    return MMDState(uniform(legal, dtype), uniform(legal, dtype), jnp.zeros((), jnp.int32))


def current_policy(tree: GameTree, state: CFRState | MMDState,
                   solver: Solver | None = None) -> jax.Array:
    """The policy the next iteration plays.

    Regret matching on `state.regrets` (plus `state.prediction` where the state has one,
    PCFR+'s; a state of your own needs only `.regrets` `[I, A]`), or `solver.current`
    where the solver has its own rule (`cfr_variant`; without `solver`, such a state
    would get regret matching, which is not what it plays). An `MMDState` holds its
    policy: `state.policy`, the policy that converges (`mmd`).

    Args:
      tree: the compiled game.
      state: a solver state on `tree` with `regrets` `[I, A]`, or an `MMDState`.
      solver: the solver whose state it is; needed only for one with its own rule.

    Returns:
      `[I, A]` float array: each row a distribution over the infoset's legal actions.

    Raises:
      ArgumentError: `tree`, `state` or `solver` is not what it should be.
    """
    tree_arguments.game_tree(tree, "current_policy")
    if solver is not None and check_solver(solver, "current_policy").current is not None:
        return solver.current(tree, state)
    if isinstance(state, MMDState):
        return base.solver_state(tree, state, "current_policy", needs=()).policy
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
    tree_arguments.game_tree(tree, "average_policy")
    if isinstance(state, MMDState):
        validate.fail("average_policy", "magnetic mirror descent keeps no average: its "
                      "current policy is what converges (jaxsolve.current_policy(tree, "
                      "state))", ArgumentTypeError)
    base.solver_state(tree, state, "average_policy", needs=("average",))
    legal = jnp.asarray(tree.legal)
    avg = jnp.where(legal, state.average, 0.0)
    total = seq.row_sum(avg, keepdims=True)
    return jnp.where(total > 0, avg / jnp.where(total > 0, total, 1.0),
                     uniform(legal, avg.dtype))


def reported_kind(solver: Solver | None, state: Any = None) -> str:
    """Which policy of a solver converges, and so is reported by default: "current"
    (`current_policy`) for a last-iterate solver (`Solver.last_iterate`, e.g. `mmd`)
    or its `MMDState`, else "average" (`average_policy`).

    Args:
      solver: the solver, or None.
      state: its state, or None.

    Returns:
      "current" or "average", a kind of `jaxsolve.final_policy`.
    """
    last = (solver is not None and solver.last_iterate) or isinstance(state, MMDState)
    return "current" if last else "average"


def _state_type(rule: Rule) -> type:
    """The state of `rule`'s solver: `MMDState` for a mirror rule, else `CFRState`."""
    return CFRState if rule.mirror is None else MMDState


def _checked_steps(tree: GameTree, state: CFRState | MMDState, num_iterations, *,
                   rule: Rule) -> CFRState | MMDState:
    """`kernel.steps` after the checks of the tree and the state."""
    where = f"{rule.name}.step"
    tree_arguments.game_tree(tree, where)
    base.solver_state(tree, state, where, expected=_state_type(rule), solver_name=rule.name,
                      needs=())
    return kernel.steps(tree, state, num_iterations, rule)


def _checked_step(tree: GameTree, state: CFRState | MMDState, *,
                  rule: Rule) -> CFRState | MMDState:
    """One iteration of the kernel: `Solver.step` of the full-width solvers."""
    return _checked_steps(tree, state, 1, rule=rule)


def _current(tree: GameTree, state: CFRState, *, rule: Rule) -> jax.Array:
    """The policy `rule` plays next: its rule on the regrets plus the prediction."""
    base.solver_state(tree, state, f"{rule.name}.current", expected=CFRState,
                      solver_name=rule.name)
    return kernel.play(rule, state.regrets + state.prediction,
                       PaddedRows(jnp.asarray(tree.legal)))


def _mirror_current(tree: GameTree, state: MMDState, *, rule: Rule) -> jax.Array:
    """The policy a mirror rule plays next: its state's."""
    return base.solver_state(tree, state, f"{rule.name}.current", expected=MMDState,
                             solver_name=rule.name, needs=()).policy


def _solver_of(rule: Rule) -> Solver:
    """The `Solver` of the kernel with `rule`."""
    mirror = rule.mirror is not None
    return Solver(functools.partial(_mmd_init if mirror else init, solver_name=rule.name),
                  functools.partial(_checked_step, rule=rule), rule.name, _state_type(rule),
                  functools.partial(_mirror_current if mirror else _current, rule=rule),
                  steps=functools.partial(_checked_steps, rule=rule), last_iterate=mirror)


_cached_solver = functools.cache(_solver_of)


def _solver(rule: Rule) -> Solver:
    """`_solver_of(rule)`, the same object for equal rules of Python numbers (a
    static jit argument compiles once); a rule with a traced knob is built anew."""
    knobs = (rule.alpha, rule.beta, rule.gamma, rule.discount_offset,
             rule.prediction_weight) + (tuple(rule.mirror) if rule.mirror else ())
    if any(validate.traced(k) for k in knobs):
        return _solver_of(rule)
    return _cached_solver(rule)


# gamma (iteration t weighs t^gamma in the average), discount_offset, prediction_weight
_AT_LEAST_0 = validate.number_rule(0)


def _knob(name: str, value, where: str, rule: validate.Rule = validate.number_rule()):
    """A knob of an iteration: a number `rule` accepts (any finite one by default), or
    a traced scalar, taken as it is (its value is not known until the program runs)."""
    if validate.traced(value):
        if jnp.ndim(value) != 0:
            validate.fail(where, f"{name} must be a scalar, got shape {jnp.shape(value)}")
        return value
    return validate.static(where, name, value, rule)


def _label(value) -> str:
    """A knob as a solver's name shows it."""
    if validate.traced(value):
        return "traced"
    return "schedule" if callable(value) else f"{value:g}"


def cfr_variant(name: str, policy_rule: Callable[[jax.Array, Rows], jax.Array]
                = regret_matching, *, alternating: bool = True, floor: bool = False,
                alpha: float | None = None, beta: float | None = None, gamma: float = 1.0,
                predictive: bool = False, discount_offset: float = 1.0,
                prediction_weight: float = 1.0) -> Solver:
    """A member of the CFR family with your own knobs and regret-to-policy rule.

    Each iteration, for each player in turn (all at once if not `alternating`): play
    `policy_rule(R + m, rows)` (m is the prediction: 0 unless `predictive`, else
    `prediction_weight` times the player's last instantaneous regrets), compute that
    player's instantaneous counterfactual regrets r (`jaxsolve.counterfactual_values`:
    q - v), update R += r (then max(R, 0) if `floor`; then, if `alpha` is given, the
    DCFR discounts: positive entries times t^alpha / (t^alpha + c), c the
    `discount_offset`, negative ones times t^beta / (t^beta + 1)), and add
    t^gamma * own reach * policy to the average (Kahan-compensated, rescaled as the
    module docstring says). t is the 1-based iteration.

    The built-ins are members, run by the same kernel (`jaxsolve.kernel`): `cfr_plus()`
    is `cfr_variant("cfr+", floor=True)`, `lcfr()` is alpha = beta = gamma = 1,
    `dcfr_plus()` is floor, alpha 1.5, gamma 4 and discount_offset 1.5, `sapcfr_plus()`
    is floor, predictive, gamma 2 and prediction_weight 1/3. A variant of your own runs
    the same code at the same speed.

    **The rule** takes `(regrets, rows)` and returns the policy shaped like `regrets`.
    `regrets` holds one entry per legal action: in the kernel, one player's legal
    sequences packed into a flat array (`jaxsolve.packing`), and `[I, A]` rows where a
    player forgets. Write the rule with elementwise arithmetic and `rows`' reductions
    (`jaxsolve.updates.Rows`), and it runs on both: `rows.total(x)` sums each
    infoset's entries, `rows.max(x)` takes their largest, both at each of its entries,
    and `rows.uniform(dtype)` is 1 / its number of legal actions. The solver's
    `current` applies the same rule, so `current_policy(tree, state, solver)` is what
    the next iteration plays. CFR with Hedge (exponential weights):

        def hedge(regrets, rows, eta=0.5):
            z = jnp.exp(eta * (regrets - rows.max(regrets)))
            return z / rows.total(z)
        solver = jaxsolve.cfr_variant("cfr-hedge", hedge, gamma=0.0)
        state = jaxsolve.run(solver, tree, solver.init(tree), 500)

    A rule's own parameter and the knobs alpha, beta, gamma, discount_offset and
    prediction_weight can be traced: build the solver inside a `jax.vmap`ped function
    and call `run` there, e.g.
    `jax.vmap(lambda eta: run(cfr_variant("h", functools.partial(hedge, eta=eta)),
    tree, state, n))(etas)` solves every eta in one compiled call. `alternating`,
    `floor` and `predictive` shape the program: Python bools. Not cached: build a
    variant once and reuse it, or `run` compiles again for each new one.

    Args:
      name: the solver's name (non-empty), used in messages and `Solver.name`.
      policy_rule: `(regrets, rows) -> policy`, as above; `jaxsolve.regret_matching` is
        the built-ins' rule.
      alternating: update one player after the other (True) or all at once.
      floor: clip the accumulated regrets at zero after each update (CFR+).
      alpha: DCFR's exponent for positive regrets; None for no discount.
      beta: DCFR's exponent for negative regrets (finite or -inf); given with `alpha`.
      gamma: iteration t weighs t^gamma in the average; >= 0.
      predictive: play on the regrets plus the prediction (PCFR+).
      discount_offset: c in the positive regrets' discount t^alpha / (t^alpha + c);
        >= 0, used with `alpha`. 1 (the default) is DCFR's, 1.5 DCFR+'s.
      prediction_weight: w in the prediction w * r, r the last instantaneous regrets;
        >= 0, used with `predictive`. 1 (the default) is PCFR+'s, 1/3 SAPCFR+'s.

    Returns:
      A `Solver` whose state is a `CFRState`.

    Raises:
      ArgumentError: a knob out of range (`alpha` and `beta` go together; `gamma`,
        `discount_offset` and `prediction_weight` >= 0; a `discount_offset` other than
        1 needs `alpha`, a `prediction_weight` other than 1 needs `predictive`), and,
        when traced, a rule that fails on its rows or whose result is not a float
        array shaped like its regrets.
    """
    where = "cfr_variant"
    if not isinstance(name, str) or not name:
        validate.fail(where, f"name must be a non-empty string, got {name!r}")
    if not callable(policy_rule):
        validate.fail(where, f"policy_rule must be a function (regrets, rows) -> policy, "
                             f"got {type(policy_rule).__name__}")
    flags = {k: validate.static(where, k, v, validate.FLAG_RULE) for k, v in
             (("alternating", alternating), ("floor", floor), ("predictive", predictive))}
    if (alpha is None) != (beta is None):
        validate.fail(where, "alpha and beta go together (DCFR's discounts of positive and "
                             f"negative regrets), got alpha={alpha!r}, beta={beta!r}")
    if alpha is not None:
        alpha, beta = _discounts(alpha, beta, where)
    gamma = _knob("gamma", gamma, where, _AT_LEAST_0)
    discount_offset = _knob("discount_offset", discount_offset, where, _AT_LEAST_0)
    prediction_weight = _knob("prediction_weight", prediction_weight, where, _AT_LEAST_0)
    for knob, value, needs, given in (("discount_offset", discount_offset, "alpha",
                                       alpha is not None),
                                      ("prediction_weight", prediction_weight,
                                       "predictive=True", flags["predictive"])):
        if not given and (validate.traced(value) or value != 1.0):
            validate.fail(where, f"{knob} needs {needs} (it would change nothing without), "
                                 f"got {knob}={_label(value)}")
    return _solver_of(Rule(policy_rule, alpha=alpha, beta=beta, gamma=gamma,
                           discount_offset=discount_offset,
                           prediction_weight=prediction_weight, name=name, **flags))


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
    alternating = validate.static("cfr", "alternating", alternating, validate.FLAG_RULE)
    return _solver(Rule(regret_matching, alternating=alternating, gamma=0.0,
                        name="cfr" if not alternating else "cfr-alt"))


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
    return _solver(Rule(regret_matching, floor=True, gamma=1.0, name="cfr+"))


def lcfr() -> Solver:
    """Linear CFR (Brown & Sandholm 2019, "Solving Imperfect-Information Games via
    Discounted Regret Minimization"): DCFR with alpha = beta = gamma = 1.

    Returns:
      The `Solver` (cached: every call gives the same object).
    """
    return _solver(Rule(regret_matching, alpha=1.0, beta=1.0, gamma=1.0, name="lcfr"))


def dcfr(alpha: float = 1.5, beta: float = 0.0, gamma: float = 2.0) -> Solver:
    """Discounted CFR (Brown & Sandholm 2019). Defaults are the paper's 1.5, 0, 2.

    After each iteration positive regrets are multiplied by t^alpha / (t^alpha + 1),
    negative ones by t^beta / (t^beta + 1), and iteration t enters the average with
    weight t^gamma.

    Each exponent may be traced: built inside a `jax.vmap`ped function, one compiled
    call solves every setting (`jax.vmap(lambda a: run(dcfr(a), tree, state, n))`).

    Args:
      alpha: exponent of the discount of positive regrets; any finite real.
      beta: exponent of the discount of negative regrets; any finite real, or -inf
        (negative regrets dropped after every iteration, as CFR+ does; t^-inf = 0 is
        exact).
      gamma: exponent of the average's weights; >= 0: with decreasing weights the
        average never forgets the first iterates.

    Returns:
      The `Solver` (cached for Python numbers: equal arguments give the same object).

    Raises:
      ArgumentError: an exponent out of range (alpha = inf gives inf / inf).

    Examples:
      >>> import jax, jax.numpy as jnp, jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> def solve(alpha):
      ...     solver = jaxsolve.dcfr(alpha, 0.0, 2.0)
      ...     state = jaxsolve.run(solver, tree, solver.init(tree), 200)
      ...     return jaxsolve.exploitability(tree, jaxsolve.average_policy(tree, state))
      >>> jax.vmap(solve)(jnp.array([1.0, 1.5, 2.0])).shape
      (3,)
    """
    alpha, beta = _discounts(alpha, beta, "dcfr")
    gamma = _knob("gamma", gamma, "dcfr", _AT_LEAST_0)
    return _solver(Rule(regret_matching, alpha=alpha, beta=beta, gamma=gamma,
                        name=f"dcfr({_label(alpha)},{_label(beta)},{_label(gamma)})"))


def _discounts(alpha, beta, where: str) -> tuple[Any, Any]:
    """DCFR's exponents: alpha finite, beta finite or -inf (negative regrets dropped);
    traced scalars as they are."""
    minus_infinity = isinstance(beta, (float, np.floating)) and beta == -math.inf
    return (_knob("alpha", alpha, where),
            -math.inf if minus_infinity else _knob("beta", beta, where))


def pcfr_plus(gamma: float = 2.0) -> Solver:
    """Predictive CFR+ (Farina, Kroer & Sandholm 2021, "Faster Game Solving via Predictive
    Blackwell Approachability").

    CFR+ whose next policy also counts the last instantaneous regret as a prediction;
    quadratic averaging by default.

    Args:
      gamma: iteration t weighs t^gamma in the average; a finite number >= 0, or a
        traced scalar.

    Returns:
      The `Solver` (cached for Python numbers: equal arguments give the same object).

    Raises:
      ArgumentError: `gamma` is not a finite number >= 0.
    """
    gamma = _knob("gamma", gamma, "pcfr_plus", _AT_LEAST_0)
    return _solver(Rule(regret_matching, floor=True, predictive=True, gamma=gamma,
                        name=_name("pcfr+", (gamma, 2.0))))


# The constant c of DCFR+'s discount t^alpha / (t^alpha + c), as the authors' code has
# it (rpSebastian/PDCFRPlus at d81089530a2a, `pdcfrplus/cfr/dcfr_plus.py`); DCFR's is 1.
_DCFR_PLUS_OFFSET = 1.5


def dcfr_plus(alpha: float = 1.5, gamma: float = 4.0) -> Solver:
    """DCFR+ (Xu, Li, Liu, Fu, Fu, Xing & Cheng, IJCAI 2024, "Minimizing Weighted
    Counterfactual Regret with Optimistic Online Mirror Descent"): CFR+ whose regrets
    are discounted as DCFR's positive ones, with the authors' additive constant 1.5.

    In the authors' code (github.com/rpSebastian/PDCFRPlus, `dcfr_plus.py`), at
    iteration t = 1, 2, ...:

        R^t = max(R^{t-1} * (t-1)^alpha / ((t-1)^alpha + 1.5) + r^t, 0)
        policy^{t+1} = RM(R^t)

    and iteration t weighs t^gamma in the average. The kernel keeps
    S^t = R^t * t^alpha / (t^alpha + 1.5), the same positive multiple of R^t, so the
    same policies: `S^t = max(S^{t-1} + r^t, 0) * t^alpha / (t^alpha + 1.5)`, i.e.
    `cfr_variant(floor=True, alpha=alpha, beta=0, discount_offset=1.5, gamma=gamma)`
    (beta is idle: floored regrets are never negative). DCFR's constant is 1;
    `cfr_variant`'s `discount_offset` sets another.

    Args:
      alpha: the exponent in t^alpha / (t^alpha + 1.5); finite, or a traced scalar.
      gamma: the average's exponent; finite and >= 0, or a traced scalar.

    Returns:
      The `Solver` (cached for Python numbers: equal arguments give the same object).

    Raises:
      ArgumentError: alpha or gamma out of range.
    """
    return _floored_discount("dcfr_plus", alpha, gamma, (1.5, 4.0), name="dcfr+",
                             discount_offset=_DCFR_PLUS_OFFSET)


def pdcfr_plus(alpha: float = 2.3, gamma: float = 5.0) -> Solver:
    """Predictive DCFR+ (Xu, Li, Liu, Fu, Fu, Xing & Cheng, IJCAI 2024, "Minimizing
    Weighted Counterfactual Regret with Optimistic Online Mirror Descent"): DCFR+'s
    discounted, floored regrets played with PCFR+'s prediction.

    In the authors' code (github.com/rpSebastian/PDCFRPlus, `pdcfr_plus.py`), with
    d(s) = (s-1)^alpha / ((s-1)^alpha + 1) and r^t the instantaneous regrets of
    iteration t = 1, 2, ...:

        R^t = max(R^{t-1} * d(t) + r^t, 0)
        policy^{t+1} = RM(max(R^t * d(t+1) + r^t, 0))

    and iteration t weighs t^gamma in the average. The kernel keeps
    S^t = R^t * d(t+1): `S^t = max(S^{t-1} + r^t, 0) * t^alpha / (t^alpha + 1)`, and
    plays RM(S^t + r^t), i.e. `cfr_variant(floor=True, predictive=True, alpha=alpha,
    beta=0, gamma=gamma)` (beta is idle: floored regrets are never negative).

    Args:
      alpha: the exponent of d; any finite number, or a traced scalar.
      gamma: the exponent of the average's weights t^gamma; a number >= 0, or a traced
        scalar.

    Returns:
      The `Solver` (cached for Python numbers: equal arguments give the same object).

    Raises:
      ArgumentError: alpha or gamma out of range.
    """
    return _floored_discount("pdcfr_plus", alpha, gamma, (2.3, 5.0), name="pdcfr+",
                             predictive=True)


def _floored_discount(where: str, alpha, gamma, defaults: tuple[float, float], *,
                      name: str, **knobs) -> Solver:
    """The solver of floored regrets discounted by t^alpha / (t^alpha + c) (beta is
    idle: floored regrets are never negative), named `name` at the `defaults` of
    (alpha, gamma)."""
    alpha = _knob("alpha", alpha, where)
    gamma = _knob("gamma", gamma, where, _AT_LEAST_0)
    return _solver(Rule(regret_matching, floor=True, alpha=alpha, beta=0.0, gamma=gamma,
                        name=_name(name, (alpha, defaults[0]), (gamma, defaults[1])),
                        **knobs))


def sapcfr_plus(prediction_weight: float = 1 / 3, gamma: float = 2.0) -> Solver:
    """Simple asymmetric PCFR+ (Meng, Yang, Zhang, Ge & Gao, AAAI 2026, "Faster Game
    Solving via Asymmetry of Step Sizes", arXiv 2503.12770): PCFR+ whose prediction
    is scaled by a constant weight.

    With r^t the instantaneous regrets of iteration t = 1, 2, ... (r^0 = 0, R^0 = 0)
    and w the prediction weight:

        R^t = max(R^{t-1} + r^t, 0)
        policy^{t+1} = RM(max(R^t + w * r^t, 0))

    and iteration t weighs t^gamma in the average; alternating updates. The paper's
    SAPCFR+ is w = 1 / (1 + 2) = 1/3 with quadratic averaging (gamma = 2); w = 1 is
    `pcfr_plus()`. The same as `cfr_variant(floor=True, predictive=True,
    prediction_weight=w, gamma=gamma)`.

    Args:
      prediction_weight: w, the weight of the last instantaneous regrets in the next
        policy; a finite number >= 0, or a traced scalar.
      gamma: iteration t weighs t^gamma in the average; a finite number >= 0, or a
        traced scalar.

    Returns:
      The `Solver` (cached for Python numbers: equal arguments give the same object).

    Raises:
      ArgumentError: a setting out of range.
    """
    weight = _knob("prediction_weight", prediction_weight, "sapcfr_plus", _AT_LEAST_0)
    gamma = _knob("gamma", gamma, "sapcfr_plus", _AT_LEAST_0)
    return _solver(Rule(regret_matching, floor=True, predictive=True, gamma=gamma,
                        prediction_weight=weight,
                        name=_name("sapcfr+", (weight, 1 / 3), (gamma, 2.0))))


# The defaults of `mmd`: the authors' "moving magnet" setting, the one their Nash
# examples (github.com/ssokota/mmd, examples/efg/nash.py) use on every game.
_MMD_DEFAULTS = {"temperature": 1.0, "learning_rate": 0.1, "magnet_learning_rate": 0.05}
# The least unnormalised weight of an action, as the authors' code floors it
# (mmd/utils.py, SMALL_POSITIVE).
_MMD_FLOOR = 1e-10
_MMD_RULES = {"temperature": _AT_LEAST_0, "learning_rate": validate.number_rule(above=0),
              "magnet_learning_rate": validate.number_rule(0, 1),
              "floor": validate.number_rule(0, below=1)}


def mmd(temperature: float | Callable = 1.0, learning_rate: float | Callable = 0.1,
        magnet_learning_rate: float | Callable = 0.05, floor: float = _MMD_FLOOR) -> Solver:
    """Magnetic mirror descent (Sokota, D'Orazio, Kolter, Loizou, Lanctot, Mitliagkas,
    Brown & Kroer, ICLR 2023, "A Unified Approach to Reinforcement Learning, Quantal
    Response Equilibria, and Two-Player Zero-Sum Games"): a last-iterate method. Its
    **current policy** converges: for a fixed temperature tau and magnet, to the
    (agent) quantal response equilibrium (QRE) relative to the magnet, where
    pi(a) proportional to mag(a) exp(Q(a) / tau) at every infoset (the update's fixed point);
    towards a Nash equilibrium as the temperature anneals to 0 or the magnet follows
    the policy. `current_policy(tree, state)` is its answer; its state keeps no
    average.

    The behavioural form with Q-value feedback and simultaneous updates, as the
    authors' code does it (github.com/ssokota/mmd, `mmd/efg/learners.py`). Each
    iteration t = 1, 2, ... values the current profile once; at every infoset I,
    with Q(I, a) = the counterfactual value of (I, a) over the probability that
    chance and the other players reach I (the expected payoff of a at I), tau the
    temperature, eta the learning rate and mu the magnet learning rate at t:

        e(a) = (log pi(a) + eta * tau * log mag(a) + eta * Q(I, a)) / (1 + eta * tau)
        pi'  = project(exp(e - max e))
        mag' = project(mag^(1 - mu) * pi'^mu)

    project(x) = max(x, floor) / sum(max(x, floor)) over the legal actions, so each
    probability stays above about floor / A and log pi finite. The policy and the
    magnet start uniform. An infoset that chance and the other players never reach
    has no Q-value: it keeps its policy and magnet. (For a player who forgets, Q is
    still that ratio; the authors' code also weighs the histories by the player's own
    reach, which only perfect recall makes equal across an infoset.) Each iteration costs about twice a
    CFR iteration's leaf sums (one more, with payoff 1, gives the reach).

    The authors' code floors OpenSpiel's whole action rows, the illegal actions too,
    and plays the legal entries without renormalising them; here illegal actions carry
    no probability and each row sums to 1. Where every infoset has all actions legal
    (Kuhn poker) the iterates are the same; on Leduc poker the exploitability after
    each of 200 iterations differs from the authors' by at most 2e-10.

    Settings: the defaults are the authors' "moving magnet" (temperature 1, learning
    rate 0.1, magnet learning rate 0.05), which their examples use for Nash
    equilibria on every game. Their other Nash setting anneals the temperature with a
    fixed magnet: `mmd(lambda t: 1 / jnp.sqrt(t), lambda t: 1 / jnp.sqrt(t), 0.0)` on
    Kuhn poker (temperature 5 / sqrt(t) on Leduc). For a QRE, keep the temperature
    and the magnet fixed: `mmd(temperature=0.1, learning_rate=0.1,
    magnet_learning_rate=0.0)` converges to the QRE of temperature 0.1 relative to
    the uniform magnet.

    Args:
      temperature: tau >= 0, how strongly the magnet pulls: a number, a traced
        scalar, or a schedule, a function of the 1-based iteration t (a `[]` float
        array) written in jax.numpy.
      learning_rate: eta > 0, the step size; likewise.
      magnet_learning_rate: mu in [0, 1], how far the magnet moves towards each new
        policy (0: it stays uniform); likewise.
      floor: the least unnormalised weight of an action, in [0, 1) (the authors'
        1e-10 by default); a number or a traced scalar.

    Returns:
      The `Solver`, whose state is an `MMDState` and whose `last_iterate` is True
        (cached for Python numbers and equal schedules: a schedule is a new solver
        each time it is a new function, so build a solver with one once and reuse it,
        or `run` compiles again).

    Raises:
      ArgumentError: a setting out of range. A schedule's values are not checked.

    Examples:
      >>> import jax.numpy as jnp, jaxsolve
      >>> from jaxsolve import games
      >>> kuhn = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> annealed = jaxsolve.mmd(lambda t: 1 / jnp.sqrt(t), lambda t: 1 / jnp.sqrt(t), 0.0)
      >>> last = jaxsolve.run(annealed, kuhn, annealed.init(kuhn), 1000)
      >>> float(jaxsolve.exploitability(kuhn, jaxsolve.current_policy(kuhn, last))) < 0.01
      True
    """
    where = "mmd"
    knobs = {name: value if callable(value) and not validate.traced(value)
             else _knob(name, value, where, _MMD_RULES[name])
             for name, value in (("temperature", temperature),
                                 ("learning_rate", learning_rate),
                                 ("magnet_learning_rate", magnet_learning_rate),
                                 ("floor", floor))}
    label = _name("mmd", *((knobs[k], default) for k, default in _MMD_DEFAULTS.items()),
                  (knobs["floor"], _MMD_FLOOR))
    return _solver(Rule(None, alternating=False, mirror=Mirror(**knobs), name=label))


def _name(short: str, *knobs: tuple[Any, float]) -> str:
    """`short` where every knob has its default value, else `short(k1,k2,...)`."""
    if all(not validate.traced(v) and v == default for v, default in knobs):
        return short
    return f"{short}({','.join(_label(v) for v, _ in knobs)})"


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
        init on this tree, a concrete count that is not an integer >= 0
        (`ArgumentTypeError`, also a TypeError, for an argument of the wrong kind), or
        one that would take the state's int32 iteration counter past 2**31 - 1.
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
    tree_arguments.game_tree(tree, "run")
    base.state_of(solver, tree, state, "run")
    validate.iterations(num_iterations, "run")
    base.room_for(state, num_iterations, "run")
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
    "dcfr+": dcfr_plus,
    "pdcfr+": pdcfr_plus,
    "sapcfr+": sapcfr_plus,
    "mmd": mmd,
    **SAMPLING_SOLVERS,
}
"""Every built-in solver by CLI name: the full-width ones above (the CFR family, then
magnetic mirror descent), then the sampling solvers of `jaxsolve.sampling`
(`SAMPLING_SOLVERS`, each takes `batch_size`)."""


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
