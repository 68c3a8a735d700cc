"""Solving until a target exploitability: `run_until`, one compiled loop that stops itself.

`jaxsolve.run` runs a fixed count. A researcher asking "how many iterations does
CFR+ need to reach 1e-3 here?", or wanting a solve to stop as soon as it is good
enough, would otherwise call `run` in chunks from Python and evaluate between them.
`run_until` does that inside one `lax.while_loop`: blocks of `check_every`
iterations, the exact exploitability of the average policy (of the current one, for
a last-iterate solver) after each block, a stop
at the first block that reaches `target`. Under `jax.vmap` over a sweep's batch each
game stops on its own (JAX's batched while loop freezes the games that are done while
the others go on), so `iterations` answers the question for every point at once.

When to check is `check_gap`, one definition for the library and the command line:
blocks of a fixed `check_every`, or gaps that grow with the run
(`check_growth_percent`), so that a long run checks rarely, yet stops soon after the
target. An evaluation costs about one iteration, so the command line's schedule
(`CHECK_EVERY` and `CHECK_GROWTH_PERCENT`: every 10 iterations, or 10% of the
iterations done where that is more) spends at most a tenth of a run on its checks,
and stops at most 10 iterations or 10% past the check that first could have.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxsolve import base, validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.evaluate import exploitability
from jaxsolve.solvers import (Solver, average_policy, check_solver, count_argument,
                              current_policy, loop_steps)
from jaxsolve.tree import GameTree

DEFAULT_CHECK_EVERY = 10  # an evaluation costs about what a few CFR iterations cost
# The command line's schedule with a target (`jaxsolve solve` and `sweep --target`): a
# check every CHECK_EVERY iterations, or every CHECK_GROWTH_PERCENT % of the iterations
# done where that is more.
CHECK_EVERY = DEFAULT_CHECK_EVERY
CHECK_GROWTH_PERCENT = 10


def check_gap(iteration: int | jax.Array, check_every: int | jax.Array = DEFAULT_CHECK_EVERY,
              check_growth_percent: int | jax.Array = 0) -> int | jax.Array:
    """The iterations from a check at `iteration` to the next: `check_every`, or
    `check_growth_percent` % of `iteration` (rounded up) where that is more.

    With a growth of 0 the checks are `check_every` apart; with g > 0 they thin out
    as the run goes on (from iteration 100 x check_every / g the gaps grow by a factor
    1 + g/100 per check), so a run of N iterations checks about
    (100 / g) x (1 + ln(N g / (100 x check_every))) times. Exact
    integer arithmetic (no overflow below 2^31), on Python integers or in traced code,
    so that a loop in Python and one compiled by `run_until` check at the same
    iterations.

    Args:
      iteration: the iterations done at the check (of the whole run, not of one call);
        an integer >= 0, or an int32 array.
      check_every: the smallest gap; an integer >= 1.
      check_growth_percent: the gap's growth, in percent of `iteration`; 0 to 100.

    Returns:
      The gap, an integer >= `check_every` (an int32 array where an argument is one).

    Examples:
      >>> from jaxsolve.stopping import check_gap
      >>> [check_gap(i, 10, 10) for i in (0, 100, 101, 1000)]
      [10, 10, 11, 100]
    """
    grown = ((iteration // 100) * check_growth_percent
             + ((iteration % 100) * check_growth_percent + 99) // 100)
    if any(isinstance(x, jax.Array) for x in (iteration, check_every, check_growth_percent)):
        return jnp.maximum(check_every, grown)
    return max(check_every, grown)


def check_iterations(start: int, stop: int, check_every: int = DEFAULT_CHECK_EVERY,
                     check_growth_percent: int = 0) -> list[int]:
    """The iterations at which a run from `start` to `stop` checks: each `check_gap`
    after the one before, and `stop`, where the last gap is cut short.

    Args:
      start: the iterations done when the run starts (not itself a check here).
      stop: the most iterations.
      check_every: as for `check_gap`.
      check_growth_percent: as for `check_gap`.

    Returns:
      The iterations, ascending; empty when `stop <= start`.

    Examples:
      >>> from jaxsolve.stopping import check_iterations
      >>> check_iterations(90, 150, 10, 10)
      [100, 110, 121, 134, 148, 150]
    """
    checks, at = [], start
    while at < stop:
        at = min(stop, at + check_gap(at, check_every, check_growth_percent))
        checks.append(at)
    return checks


class Stopped(NamedTuple):
    """What `run_until` returns (a pytree: under vmap every field gains the batch axis).

    Attributes:
      state: the solver state at the stop (its `iteration` counts every step so far).
      iterations: `[]` int32 iterations this call ran: a sum of the schedule's gaps
        (with the default fixed schedule, a multiple of `check_every`), unless
        `max_iterations` cut the last block short, and 0 when the state given was
        already at the target.
      exploitability: `[]` the exploitability of `state`'s average policy (current
        policy, for a last-iterate solver); at most
        `target` unless the loop ran out of iterations.
    """

    state: Any
    iterations: jax.Array
    exploitability: jax.Array


def run_until(solver: Solver, tree: GameTree, state: Any, target: float | jax.Array,
              max_iterations: int | jax.Array,
              check_every: int | jax.Array = DEFAULT_CHECK_EVERY,
              check_growth_percent: int | jax.Array = 0) -> Stopped:
    """Steps in blocks of `check_every` (or blocks growing with the run) until the
    average policy's exploitability (the current policy's, for a last-iterate solver
    such as `mmd`) is at most `target`, or `max_iterations` steps have run; one
    compiled loop.

    Compiled once per solver and tree shape, as `run` is (inlined inside your own `jit`
    or `vmap`).

    The state given is evaluated first, so a state already at the target comes back
    unchanged after one evaluation. The blocks are `jaxsolve.run`'s iterations: the
    state at the stop equals `run(solver, tree, state, stopped.iterations)`. Every
    evaluation is `exploitability(tree, average_policy(tree, state))` (the solver's state
    needs an `[I, A]` field `average`, as every built-in's but `mmd`'s has), or for a
    solver whose `last_iterate` is True `exploitability(tree, current_policy(tree,
    state, solver))`. In float32 the
    exploitability of a converged policy is rounding noise of about 1e-7 times the
    payoffs' size, so a target below that runs to `max_iterations`.

    Args:
      solver: a `Solver`.
      tree: the compiled game.
      state: the state of `solver.init` on this tree, or of an earlier run.
      target: the exploitability to reach; a number >= 0, or traced (e.g. vmapped
        over).
      max_iterations: the most steps to run; an integer >= 0, may be traced.
      check_every: steps between evaluations (the least, with a growth); an integer
        >= 1, may be traced.
      check_growth_percent: 0 (the default) for blocks of exactly `check_every`; g in
        1..100 for blocks of `check_gap(i, check_every, g)` after a check at iteration
        i, counted by the state's `iteration` where it has one (so a run continued in
        several calls checks where one call would), else from this call's start. The
        command line uses `CHECK_GROWTH_PERCENT` (10). May be traced.

    Returns:
      A `Stopped`: the state, the iterations run and the last exploitability.

    Raises:
      ArgumentError: bad arguments, as `run` raises; concrete numbers out of range.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> solver = jaxsolve.cfr_plus()
      >>> stopped = jaxsolve.run_until(solver, tree, solver.init(tree), 1e-3, 10_000)
      >>> int(stopped.iterations), float(stopped.exploitability) <= 1e-3
      (130, True)
    """
    where = "run_until"
    solver = check_solver(solver, where)
    tree_arguments.game_tree(tree, where)
    base.state_of(solver, tree, state, where,
                  needs=() if solver.last_iterate else ("average",))
    for name, value, rule in (
            ("target", target, validate.number_rule(0)),
            ("max_iterations", max_iterations, validate.ITERATIONS_RULE),
            ("check_every", check_every, validate.integer_rule(1, validate.INT32_MAX)),
            ("check_growth_percent", check_growth_percent, validate.integer_rule(0, 100))):
        if not validate.traced(value):
            validate.static(where, name, value, rule)
    base.room_for(state, max_iterations, where)
    return _run_until(solver, tree, state, target, count_argument(max_iterations),
                      count_argument(check_every), count_argument(check_growth_percent))


# Jitted here for the reason `solvers._run_steps` is: the loop's functions are new on
# every call, so unjitted the loop would be compiled again each time.
@functools.partial(jax.jit, static_argnums=0)
def _run_until(solver: Solver, tree: GameTree, state, target, max_iterations,
               check_every, check_growth_percent) -> Stopped:
    # The schedule counts the run's iterations, not this call's: the state's own count.
    counted = getattr(state, "iteration", None)
    first = jnp.zeros((), jnp.int32) if counted is None else jnp.asarray(counted, jnp.int32)

    def evaluate(s):
        policy = (current_policy(tree, s, solver) if solver.last_iterate
                  else average_policy(tree, s))
        return exploitability(tree, policy)

    def unfinished(carry):
        _, done, gap = carry
        return (done < max_iterations) & (gap > target)

    def block(carry):
        s, done, _ = carry
        every = check_gap(first + done, check_every, check_growth_percent)
        n = jnp.minimum(every, max_iterations - done)
        s = loop_steps(solver, tree, s, n)
        return s, done + n, evaluate(s)

    start = (state, jnp.zeros((), jnp.int32), evaluate(state))
    return Stopped(*jax.lax.while_loop(unfinished, block, start))
