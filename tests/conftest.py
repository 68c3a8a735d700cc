"""Shared test set-up: float64 and strict rank promotion everywhere, compiled trees
and jitted functions shared across tests so each compiles once per session."""

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")

import functools  # noqa: E402

import pytest  # noqa: E402

import games  # noqa: E402
import jaxsolve  # noqa: E402

# One jitted entry point per function for the whole session: the iteration count is
# traced, so every test that runs a solver on a tree of the same shape shares a
# compilation.
RUN = jax.jit(jaxsolve.run, static_argnums=(0,))
EXPLOITABILITY = jax.jit(jaxsolve.exploitability)
NASH_CONV = jax.jit(jaxsolve.nash_conv)
POLICY_VALUE = jax.jit(jaxsolve.policy_value)
BEST_RESPONSE_VALUES = jax.jit(jaxsolve.best_response_values)
AVERAGE = jax.jit(jaxsolve.average_policy)


@functools.cache
def builtin_tree(name: str, **params) -> jaxsolve.GameTree:
    return jaxsolve.compile_game(games.load(name, **params))


@functools.cache
def pyspiel_game(name: str, **params):
    pyspiel = pytest.importorskip("pyspiel")
    return pyspiel.load_game(name, params)


@functools.cache
def pyspiel_tree(name: str, **params) -> jaxsolve.GameTree:
    return jaxsolve.compile_game(pyspiel_game(name, **params))


def solve(solver, tree, iterations):
    """State after `iterations` of `solver` from its initial state."""
    return RUN(solver, tree, solver.init(tree), iterations)
