"""What every solver is made of: the `Solver` type (a pair of pure functions), the
library's states (`CFRState` of the full-width CFR family, `MCCFRState` of the
sampling solvers, `MMDState` of magnetic mirror descent), and the checks that a state
fits a tree and the solver given it.

The full-width solvers (`jaxsolve.solvers`) and the sampling ones
(`jaxsolve.sampling`) are both built on these; `jaxsolve.solvers` gathers them all
by name (`SOLVERS`).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import numpy as np

from jaxsolve.errors import ArgumentTypeError
from jaxsolve.tree import GameTree
from jaxsolve.validate import INT32_MAX, fail, kind_of


class CFRState(NamedTuple):
    """Solver state, a pytree of arrays.

    Attributes:
      regrets: [I, A] accumulated (possibly discounted or floored) regrets.
      average: [I, A] weighted sum of the players' own-reach-weighted strategies,
        times `weight_scale` (only ratios within a row matter).
      average_carry: [I, A] Kahan compensation of that sum (its lost low bits).
      prediction: [I, A] what the next policy adds to the regrets: the last
        instantaneous regrets times the prediction weight (predictive CFR+: 1;
        SAPCFR+: 1/3), else zeros.
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


# CFRState's fields first, so `average_policy`, `current_policy` and the policy
# transforms accept both states; then what sampling (`jaxsolve.sampling`) adds.
MCCFRState = NamedTuple("MCCFRState", [
    *((field, jax.Array) for field in CFRState._fields),
    ("key", jax.Array), ("touched", jax.Array), ("expand", jax.Array),
    ("expand_chance", jax.Array), ("frontier", jax.Array)])
MCCFRState.__doc__ = """Solver state of a sampling solver (a pytree of arrays).

    Attributes:
      regrets: [I, A] as in `jaxsolve.CFRState`.
      average: [I, A] as in `jaxsolve.CFRState`.
      average_carry: [I, A] as in `jaxsolve.CFRState`.
      prediction: [I, A] as in `jaxsolve.CFRState`.
      iteration: [] int32, steps completed (one step = B samples per player).
      total_weight: [] float, as in `jaxsolve.CFRState`.
      weight_scale: [] float, as in `jaxsolve.CFRState`.
      key: [2] uint32, the PRNG key of the next step (same key, same run).
      touched: [2] float, histories visited so far (over all samples and players) as
        a compensated sum (total, round-off carry), so that float32 keeps counting
        past 2^24; read it with `jaxsolve.sampling.histories_touched(state)`.
      expand: [P, I] bool, row p: the infosets p's traversals expand.
      expand_chance: [P, C] bool, row p: the chance nodes p's traversals expand.
      frontier: [K] int32 zeros; its length K is the frontier capacity.
    """


class MMDState(NamedTuple):
    """State of magnetic mirror descent (`jaxsolve.mmd`), a pytree of arrays.

    A last-iterate method keeps no regrets and no average: its current policy is what
    converges.

    Attributes:
      policy: [I, A] the current policy, each row a distribution over the infoset's
        legal actions (0 at the illegal ones): what the next iteration plays.
      magnet: [I, A] the magnet, the policy the update is pulled towards, likewise.
      iteration: [] int32, iterations completed.
    """

    policy: jax.Array
    magnet: jax.Array
    iteration: jax.Array


class Solver(NamedTuple):
    """A solver: a pair of pure functions, like optax's GradientTransformation.

    `init(tree, key=None) -> state` and `step(tree, state) -> state`, whatever the
    solver: a solver that samples (`samples=True`, the Monte-Carlo CFR family of
    `jaxsolve.sampling`) draws its samples from the key, held in its state (None:
    `jax.random.PRNGKey(0)`); the full-width solvers draw nothing and take the key only
    so that every solver is called alike. The built-in factories are cached, so
    `cfr_plus() is cfr_plus()` and a solver can be a static jit argument (`run`'s
    compiled loop takes it as one): jit compares solvers by their functions, so build
    your own solver once and reuse it, or each new one compiles anew.

    Any state works with `run`; `average_policy` needs only an `[I, A]` field `average`
    (a weighted sum of own-reach-weighted strategies, normalised per row). `cfr_variant`
    builds a solver from the CFR family's update with your own regret-to-policy rule;
    for an update outside the family, write init and step over a state of your own
    (`jaxsolve.sequences` has the building blocks).

    Attributes:
      init: `(tree, key=None) -> state`, the state before the first step.
      step: `(tree, state) -> state`, one iteration.
      name: the solver's name, used in messages.
      state_type: the class of the states init returns; `run` refuses any other (None:
        not checked).
      current: `(tree, state) -> [I, A]`, the policy the next step plays, for
        `current_policy(tree, state, solver)` and `final_policy(..., kind="current",
        solver=...)`; None means regret matching on `state.regrets + state.prediction`,
        as every built-in solver plays.
      check_state: `(tree, state, where) -> None`, if given, raises ArgumentError for a
        concrete state of the right type that this solver still cannot continue (a
        sampling solver's state records its sampling scheme: another scheme's is
        refused).
      steps: `(tree, state, n) -> state`, if given, takes n steps at once with the
        iterates of n `step` calls; `run` and `run_until` loop with it (the built-in CFR
        family keeps each player's legal sequences packed for the length of the loop,
        `jaxsolve.packing`). None: a loop of `step`.
      samples: whether the solver draws from the key of `init`.
      last_iterate: whether the solver's current policy is what converges (`mmd`),
        not an average: `run_until`, `final_policy`'s default and the command line
        then evaluate `current_policy`. Its state need not have an `average`.
    """

    init: Callable[..., Any]
    step: Callable[[GameTree, Any], Any]
    name: str
    state_type: type | None = None
    current: Callable[[GameTree, Any], jax.Array] | None = None
    check_state: Callable[[GameTree, Any, str], None] | None = None
    steps: Callable[[GameTree, Any, Any], Any] | None = None
    samples: bool = False
    last_iterate: bool = False


# ---------------------------------------------------------------------- checks of states
# The fields of the library's states shaped [I, A] like the tree's policies.
_STATE_ROWS = ("regrets", "average", "average_carry", "prediction", "policy", "magnet")
_STATE_FLOATS = _STATE_ROWS + ("total_weight", "weight_scale")


def float_dtype() -> np.dtype:
    """The float type solver states are made of.

    Returns:
      float64 under `jax_enable_x64`, else float32 (JAX's default, what users run).
    """
    return np.dtype(jax.dtypes.canonicalize_dtype(np.float64))


def _library_state(state: Any) -> bool:
    """Whether `state` is one of the library's own states (CFRState, MCCFRState,
    MMDState), whose field names mean what `_STATE_FLOATS` says. A state of one's own
    may use those names for anything: only the fields a function `needs` are checked
    there."""
    return isinstance(state, (CFRState, MCCFRState, MMDState))


def solver_state(tree: GameTree, state: Any, where: str, *, expected: type | None = None,
                 solver_name: str | None = None, needs: tuple = ("regrets", "average")) -> Any:
    """`state`, checked as a solver state for `tree`.

    Of type `expected` (what the solver's init returns) if given, else any state with
    the fields `needs`; its arrays shaped for the tree (every `[I, A]` field and float
    weight of the library's own states, only the fields `needs` of a state of one's
    own).

    Args:
      tree: the compiled game.
      state: the state to check.
      where: the public function's name, for messages.
      expected: the state's required type, or None.
      solver_name: the solver's name, for messages.
      needs: the fields a state of one's own must have.

    Returns:
      `state`, unchanged.

    Raises:
      ArgumentTypeError: the state is of the wrong type, lacks a field, or mixes float
        dtypes.
      ArgumentError: an `[I, A]` field is shaped for another tree (or batched).
    """
    if expected is not None and type(state) is not expected:
        # Sampling solvers' init takes a key: name the call the user has to make.
        call = "init(tree, key)" if "key" in getattr(expected, "_fields", ()) else "init(tree)"
        fail(where, f"{solver_name or 'this solver'} needs the {expected.__name__} from its "
                    f"own {call}, got {kind_of(state)}", ArgumentTypeError)
    if not needs and not jax.tree.leaves(state):
        fail(where, f"expected a solver state (a pytree of arrays), got {kind_of(state)}",
             ArgumentTypeError)
    if not all(hasattr(state, field) for field in needs):
        fail(where, "expected a solver state (the CFRState or MCCFRState of solver.init or "
                    f"jaxsolve.run, or a state of your own with "
                    f"{' and '.join(f'.{f}' for f in needs)} [I, A]), got {kind_of(state)}",
             ArgumentTypeError)
    # One float dtype for the rows and weights: a loaded state with one field of
    # another precision (float16 regrets) failed deep inside the compiled loop, whose
    # carry must keep its types.
    own = _library_state(state)
    floats = {field: np.dtype(getattr(state, field).dtype) for field in _STATE_FLOATS
              if (own or field in needs) and hasattr(getattr(state, field, None), "dtype")}
    kinds = sorted({str(d) for d in floats.values()})
    if len(kinds) > 1 or (kinds and not np.issubdtype(np.dtype(kinds[0]), np.floating)):
        listed = ", ".join(f"{f} {d}" for f, d in floats.items())
        fail(where, f"the state's arrays must share one float dtype, got {listed} (cast "
                    "them all, e.g. jax.tree.map(lambda x: x.astype(jnp.float64) if "
                    "jnp.issubdtype(x.dtype, jnp.floating) else x, state))",
             ArgumentTypeError)
    want = (tree.sizes.num_infosets, tree.sizes.num_actions)
    for field in _STATE_ROWS:
        if not hasattr(state, field) or not (own or field in needs):
            continue
        got = tuple(np.shape(getattr(state, field)))
        if got != want:
            why = (f"the state has a batch axis of {got[0]}; call through jax.vmap"
                   if got[1:] == want else "the state was initialised on another game")
            fail(where, f"state.{field} is {list(got)} but the tree is {list(want)}: {why}")
    return state


def state_of(solver: Any, tree: GameTree, state: Any, where: str, *,
             needs: tuple = ()) -> Any:
    """`state`, checked as a state `solver` (checked) can continue on `tree`.

    Of the type its init returns (any pytree of arrays with the fields `needs` where the
    solver names no type: a custom solver's own state), shaped for the tree
    (`solver_state`), and passing the solver's own `check_state` (e.g. a sampling
    scheme's masks).

    Args:
      solver: the `Solver`.
      tree: the compiled game.
      state: the state to check.
      where: the public function's name, for messages.
      needs: the fields a state of one's own must have.

    Returns:
      `state`, unchanged.

    Raises:
      ArgumentError: as `solver_state` and `solver.check_state` raise.
    """
    solver_state(tree, state, where, expected=solver.state_type, solver_name=solver.name,
                 needs=needs)
    if solver.check_state is not None:
        solver.check_state(tree, state, where)
    return state


def room_for(state: Any, num_iterations: Any, where: str) -> None:
    """Refuses a concrete count that would take the state's iteration counter past
    2**31 - 1.

    The counter is int32 (it travels into jitted code as one): past its largest value
    it would wrap to a negative count, and the discounts and average weights read off
    it would turn meaningless without a word. Traced states and counts (inside a jit
    of your own) pass unchecked.

    Args:
      state: a solver state with an `iteration` (a batch's may have a leading axis).
      num_iterations: the iterations about to run, an integer already checked.
      where: the public function's name, which starts the error's message.

    Raises:
      ArgumentError: `num_iterations` more would not fit the counter.
    """
    iteration = getattr(state, "iteration", None)
    if iteration is None or any(isinstance(x, jax.core.Tracer)
                                for x in (iteration, num_iterations)):
        return
    done = int(np.max(np.asarray(iteration))) if np.size(iteration) else 0
    left = INT32_MAX - done
    if int(num_iterations) > left:
        fail(where, f"the state has run {done:,} iterations and counts them in int32: at "
                    f"most {left:,} more fit, got {int(num_iterations):,} (start again from "
                    "a new state, or warm-start one from this state's average)")
