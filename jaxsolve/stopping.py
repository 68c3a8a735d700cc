"""Solving until a target exploitability: `run_until`, one compiled loop that stops itself.

`jaxsolve.run` runs a fixed count. A researcher asking "how many iterations does
CFR+ need to reach 1e-3 here?", or wanting a solve to stop as soon as it is good
enough, would otherwise call `run` in chunks from Python and evaluate between them.
`run_until` does that inside one `lax.while_loop`: blocks of `check_every`
iterations, the exact exploitability of the average policy after each block, a stop
at the first block that reaches `target`. Under `jax.vmap` over a sweep's batch each
game stops on its own (JAX's batched while loop freezes the games that are done while
the others go on), so `iterations` answers the question for every point at once.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxsolve import base, validate
from jaxsolve import tree_arguments
from jaxsolve.evaluate import exploitability
from jaxsolve.solvers import Solver, average_policy, check_solver, count_argument, loop_steps
from jaxsolve.tree import GameTree

DEFAULT_CHECK_EVERY = 10  # an evaluation costs about what a few CFR iterations cost


class Stopped(NamedTuple):
    """What `run_until` returns (a pytree: under vmap every field gains the batch axis).

    Attributes:
      state: the solver state at the stop (its `iteration` counts every step so far).
      iterations: `[]` int32 iterations this call ran: a multiple of `check_every`,
        unless `max_iterations` cut the last block short, and 0 when the state given
        was already at the target.
      exploitability: `[]` the exploitability of `state`'s average policy; at most
        `target` unless the loop ran out of iterations.
    """

    state: Any
    iterations: jax.Array
    exploitability: jax.Array


def run_until(solver: Solver, tree: GameTree, state: Any, target: float | jax.Array,
              max_iterations: int | jax.Array,
              check_every: int | jax.Array = DEFAULT_CHECK_EVERY) -> Stopped:
    """Steps in blocks of `check_every` until the average policy's exploitability is at
    most `target`, or `max_iterations` steps have run; one compiled loop.

    Compiled once per solver and tree shape, as `run` is (inlined inside your own `jit`
    or `vmap`).

    The state given is evaluated first, so a state already at the target comes back
    unchanged after one evaluation. The blocks are `jaxsolve.run`'s iterations: the
    state at the stop equals `run(solver, tree, state, stopped.iterations)`. Every
    evaluation is `exploitability(tree, average_policy(tree, state))` (the solver's state
    needs an `[I, A]` field `average`, as every built-in's has). In float32 the
    exploitability of a converged policy is rounding noise of about 1e-7 times the
    payoffs' size, so a target below that runs to `max_iterations`.

    Args:
      solver: a `Solver`.
      tree: the compiled game.
      state: the state of `solver.init` on this tree, or of an earlier run.
      target: the exploitability to reach; a number >= 0, or traced (e.g. vmapped
        over).
      max_iterations: the most steps to run; an integer >= 0, may be traced.
      check_every: steps between evaluations; an integer >= 1, may be traced.

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
    base.state_of(solver, tree, state, where, needs=("average",))
    for name, value, rule in (
            ("target", target, validate.number_rule(0)),
            ("max_iterations", max_iterations, validate.ITERATIONS_RULE),
            ("check_every", check_every, validate.integer_rule(1, validate.INT32_MAX))):
        if not validate.traced(value):
            validate.static(where, name, value, rule)
    return _run_until(solver, tree, state, target, count_argument(max_iterations),
                      count_argument(check_every))


# Jitted here for the reason `solvers._run_steps` is: the loop's functions are new on
# every call, so unjitted the loop would be compiled again each time.
@functools.partial(jax.jit, static_argnums=0)
def _run_until(solver: Solver, tree: GameTree, state, target, max_iterations,
               check_every) -> Stopped:
    def evaluate(s):
        return exploitability(tree, average_policy(tree, s))

    def unfinished(carry):
        _, done, gap = carry
        return (done < max_iterations) & (gap > target)

    def block(carry):
        s, done, _ = carry
        n = jnp.minimum(check_every, max_iterations - done)
        s = loop_steps(solver, tree, s, n)
        return s, done + n, evaluate(s)

    start = (state, jnp.zeros((), jnp.int32), evaluate(state))
    return Stopped(*jax.lax.while_loop(unfinished, block, start))
