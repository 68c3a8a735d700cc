"""Shared test set-up: float32 as users run it, float64 for the tests marked
`float64` (comparisons with OpenSpiel, LP and published values to 1e-9 and finer;
contracts between our own functions hold to float32 round-off), strict rank
promotion everywhere, compiled trees and jitted functions shared across tests so each
compiles once per session."""

import os

# XLA:CPU compiles with LLVM at -O0 in the tests: the suite is mostly compilation, and
# this cuts it by about a third (test_sampling.py and tests/mcts/test_policies.py, the
# slowest files, each by 30-35%). Results may move by about an ulp in float32 against
# an optimised build (the code generator's choices, such as fused multiply-adds, differ
# between levels), far inside every tolerance here; a test that compares bits across
# processes gives each the same XLA_FLAGS. Set before JAX starts; a level given in
# XLA_FLAGS wins.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")

import functools  # noqa: E402
import gc  # noqa: E402

import pytest  # noqa: E402

import jaxsolve  # noqa: E402
from jaxsolve import games  # noqa: E402

# One jitted entry point per function for the whole session: the iteration count is
# traced, so every test that runs a solver on a tree of the same shape shares a
# compilation.
RUN = jax.jit(jaxsolve.run, static_argnums=(0,))
# For long runs on the bigger trees, where the compiled loop's speed, not its
# compilation, is the cost (Spoof to 7 rounds: 15 s optimised against 52 s at -O0).
RUN_OPTIMISED = jax.jit(jaxsolve.run, static_argnums=(0,),
                        compiler_options={"xla_backend_optimization_level": 2})
EXPLOITABILITY = jax.jit(jaxsolve.exploitability)
NASH_CONV = jax.jit(jaxsolve.nash_conv)
POLICY_VALUE = jax.jit(jaxsolve.policy_value)
BEST_RESPONSE_VALUES = jax.jit(jaxsolve.best_response_values)
AVERAGE = jax.jit(jaxsolve.average_policy)


@pytest.fixture(autouse=True)
def _precision(request):
    """float64 for the tests marked `float64` (a module marks all its tests with
    `pytestmark = pytest.mark.float64`); everything else runs in float32, the default
    users get. The flag is part of every jit cache key, so the shared compiled
    functions keep one compilation per precision."""
    if request.node.get_closest_marker("float64") is None:
        yield
    else:
        with jax.enable_x64(True):
            yield
    if jax.config.read("jax_enable_x64"):  # set for the whole process, not for a test
        jax.config.update("jax_enable_x64", False)
        pytest.fail("the test left jax_enable_x64 on for the whole process (a script "
                    "imported here sets it at import?); every later test would run in "
                    "float64", pytrace=False)


# XLA:CPU loads each compiled function's code into memory maps of its own (three a
# function: code, constants, data), and Linux allows a process 65,530 maps
# (vm.max_map_count). A test worker compiles hundreds of programs, the CFR kernel's
# with dozens of functions each; past the limit the next compilation crashes inside
# XLA. So after a test file, once the worker holds more than MAX_MAPS maps, the
# compiled programs are dropped (`jax.clear_caches`, which unmaps their code) and
# compiled again where a later file needs them.
MAX_MAPS = 30_000


def _maps() -> int:
    try:
        with open(f"/proc/{os.getpid()}/maps") as f:
            return sum(1 for _ in f)
    except OSError:  # not Linux: no such limit to keep under
        return 0


@pytest.fixture(autouse=True, scope="module")
def _bounded_compiled_code():
    yield
    if _maps() > MAX_MAPS:
        jax.clear_caches()
        gc.collect()


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


def openspiel_average(tree, solver):
    """An OpenSpiel solver's average policy as our [I, A] array (rows matched by
    infoset string): C++ solvers' policies and Python TabularPolicy alike."""
    import numpy as np  # noqa: PLC0415

    policy = solver.average_policy()
    out = np.zeros((tree.sizes.num_infosets, tree.sizes.num_actions))
    for i, name in enumerate(tree.names.infosets):
        if hasattr(policy, "get_state_policy"):  # C++ policy
            pairs = policy.get_state_policy(name)
        else:  # Python TabularPolicy
            row = policy.state_lookup[name]
            pairs = [(a, policy.action_probability_array[row, a])
                     for a in np.nonzero(policy.legal_actions_mask[row])[0]]
        for a, p in pairs:
            out[i, a] = p
    return out


def solve(solver, tree, iterations):
    """State after `iterations` of `solver` from its initial state."""
    return RUN(solver, tree, solver.init(tree), iterations)
