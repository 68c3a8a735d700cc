"""Where `jaxsolve solve` runs: on one device, or across the processes of a run.

Both placements offer the same three calls, so the command is written once:
`run(solver, state, n)` (n iterations, blocking until done), `apply(fn, *args)`
(`fn(tree, *args)`, a `jaxsolve.evaluate` function, jitted) and `describe()` (where,
for the summary); `lead` says whether this process writes files and prints.

* `OneDevice`: the tree on JAX's default device, one process (`lead`).
* `AcrossProcesses`: after `jaxsolve.processes.initialize`, the tree's terminals
  split over every device of every process (`distributed.shard_tree`); the solver
  state is replicated, each call is a collective that every process makes in the
  same order, and only process 0 is `lead`. A process lost mid-run ends the others'
  calls with a `DistributedError`.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any, Callable

import jax

from jaxsolve import distributed, processes
from jaxsolve.cli._base import device_text
from jaxsolve.solvers import Solver, run
from jaxsolve.tree import GameTree

# One jitted entry point, shared by every call in the process: `run` takes the solver
# as a static argument and the iteration count as a traced one, so chunks of any size
# share one compilation.
run_jit = jax.jit(run, static_argnums=(0,))


@functools.lru_cache(maxsize=None)
def _jitted(fn: Callable) -> Callable:
    return jax.jit(fn)


@functools.lru_cache(maxsize=None)
def _jitted_on_shards(fn: Callable, mesh) -> Callable:
    return jax.jit(lambda tree, *args: distributed.on_terminal_shards(fn, tree, *args,
                                                                      mesh=mesh))


class OneDevice:
    """The solve on JAX's default device."""

    lead = True

    def __init__(self, tree: GameTree):
        self.tree = jax.device_put(tree)

    def run(self, solver: Solver, state: Any, n: int) -> Any:
        return jax.block_until_ready(run_jit(solver, self.tree, state, n))

    def apply(self, fn: Callable, *args: Any) -> Any:
        return _jitted(fn)(self.tree, *args)

    def describe(self) -> str:
        return device_text(next(iter(self.tree.utilities.devices())))


class AcrossProcesses:
    """The solve with the tree's terminals split over every device of every process
    (call after `jaxsolve.processes.initialize`); full-width solvers only."""

    def __init__(self, tree: GameTree):
        self.tree = distributed.shard_tree(tree)
        self.mesh = self.tree.utilities.sharding.mesh
        self.lead = processes.is_lead()

    def run(self, solver: Solver, state: Any, n: int) -> Any:
        with processes.collective_errors("solve"):
            return jax.block_until_ready(distributed.run_sharded(solver, self.tree, state, n))

    def apply(self, fn: Callable, *args: Any) -> Any:
        with processes.collective_errors("solve"):
            return jax.block_until_ready(_jitted_on_shards(fn, self.mesh)(self.tree, *args))

    def describe(self) -> str:
        devices = jax.devices()
        kinds = ", ".join(f"{n} x {kind}" for kind, n in
                          Counter(d.device_kind or d.platform for d in devices).items())
        return f"{len(devices)} devices of {jax.process_count()} processes ({kinds})"


__all__ = ["AcrossProcesses", "OneDevice", "run_jit"]
