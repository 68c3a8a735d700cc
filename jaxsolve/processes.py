"""Several JAX processes as one run: joining them, and what they must agree on.

JAX runs one program in several processes (one per host, or several on one host) as
one: after `jax.distributed.initialize`, `jax.devices()` lists the devices of every
process, and the meshes of `jaxsolve.distributed` span them. Every process runs the
same calls; a collective (a `psum`) waits until each process has reached it. What a
run of jaxsolve adds around JAX's runtime:

* `initialize` joins the run in bounded time. Where JAX would wait for its own
  timeout and then abort the process from C++, a coordinator that cannot be reached
  or a process that never joins ends in a `DistributedError` naming the problem after
  `timeout` seconds, and processes that disagree on how many they are fail together.
  On the CPU the collectives between processes go over gloo.
* `from_environment` reads the settings the `jaxsolve` program joins with:
  `JAXSOLVE_NUM_PROCESSES` (set: the program runs across processes),
  `JAXSOLVE_COORDINATOR` (`host:port` of process 0), `JAXSOLVE_PROCESS_ID` and
  `JAXSOLVE_TIMEOUT` (seconds). `python -m jaxsolve.launch` sets them for the local
  processes it starts; on a cluster a job script sets them, and any of the first
  three left unset is found by JAX on SLURM, Open MPI and Cloud TPU.
* `agree` compares a value (a tree's digest, a setting) across processes:
  `distributed.shard_tree` and `shard_batch` use it, since processes that placed
  different trees would exchange partial sums of different games without an error.
* `collective_errors` turns the failure of a collective whose peer process died
  (gloo reports the closed connection at once) into a `DistributedError`. A process
  that dies while the others compute is found by JAX's heartbeat: after
  `heartbeat_timeout` seconds JAX ends the other processes itself, with a message
  that another task died.

    processes.initialize("10.0.0.1:1234", num_processes=2, process_id=0)  # before any JAX call
    sharded = distributed.shard_tree(tree)     # every process, the same tree
    state = distributed.run_sharded(solver, sharded, solver.init(tree), 1000)
    if processes.is_lead():                    # process 0 writes
        save_checkpoint(path, state, meta)

A process whose `initialize` failed cannot join again (JAX keeps its half-made
connection): end it. The `jaxsolve` program does, with its error's exit code.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import socket
import threading
import time
from typing import Iterator, NamedTuple

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxsolve import validate
from jaxsolve.errors import ArgumentError, DistributedError, JaxsolveError, one_line

# The environment variables of `from_environment`, one name each.
COORDINATOR, NUM_PROCESSES, PROCESS_ID, TIMEOUT = (
    "JAXSOLVE_COORDINATOR", "JAXSOLVE_NUM_PROCESSES", "JAXSOLVE_PROCESS_ID", "JAXSOLVE_TIMEOUT")
DEFAULT_TIMEOUT = 300.0  # seconds, JAX's own default wait for every process to join
# JAX's runtime errors (a RuntimeError; older JAX has no public name for the class).
_RUNTIME_ERROR = getattr(jax.errors, "JaxRuntimeError", RuntimeError)
# JAX's own timeouts run this much longer than ours, so that our error comes first.
_MARGIN = 60
_POLL = 0.25  # seconds between tries to reach the coordinator

_joined = False  # initialize was called in this process (whether or not it succeeded)


class Settings(NamedTuple):
    """How a process joins a run (`initialize`'s arguments); None: found by JAX."""
    coordinator: str | None
    num_processes: int | None
    process_id: int | None
    timeout: float


def from_environment(environ: dict[str, str] | None = None) -> Settings | None:
    """The settings of `JAXSOLVE_NUM_PROCESSES`, `JAXSOLVE_COORDINATOR`,
    `JAXSOLVE_PROCESS_ID` and `JAXSOLVE_TIMEOUT`; None unless `JAXSOLVE_NUM_PROCESSES`
    is set (the process runs alone).

    Args:
      environ: the variables (default `os.environ`).

    Returns:
      A `Settings`, or None.

    Raises:
      ArgumentError: a variable that is not a number where it must be one, or a
        coordinator that is not `host:port`.
    """
    environ = os.environ if environ is None else environ
    if not environ.get(NUM_PROCESSES):
        return None

    def number(name, kind, low):
        text = environ.get(name, "")
        if not text:
            return None
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise ArgumentError(f"{name}={text!r}: expected {'an integer' if kind is int else 'a number'}"
                                f" >= {low}")
        return value

    timeout = number(TIMEOUT, float, 1)
    return Settings(coordinator=_address(environ.get(COORDINATOR) or None, COORDINATOR),
                    num_processes=number(NUM_PROCESSES, int, 1),
                    process_id=number(PROCESS_ID, int, 0),
                    timeout=DEFAULT_TIMEOUT if timeout is None else timeout)


def _address(text: str | None, where: str) -> str | None:
    """`host:port` checked (the port a number); None stays None."""
    if text is None:
        return None
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ArgumentError(f"{where}: expected the coordinator as host:port (e.g. "
                            f"10.0.0.1:1234), got {text!r}")
    return text


def _label(process_id: int | None, num_processes: int | None) -> str:
    return (f"process {'?' if process_id is None else process_id} of "
            f"{'?' if num_processes is None else num_processes}")


def _reach(coordinator: str, deadline: float, label: str) -> None:
    """Returns once the coordinator accepts a TCP connection; DistributedError at the
    deadline. Process 0 may start later than the others, so this tries again until
    then."""
    host, _, port = coordinator.rpartition(":")
    host = host.strip("[]")
    problem = "no answer"
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=max(_POLL, 1.0)):
                return
        except OSError as e:
            problem = one_line(e)
        if time.monotonic() >= deadline:
            raise DistributedError(
                f"{label}: cannot reach the coordinator at {coordinator} (process 0) "
                f"within the timeout ({problem}); start process 0, or check the address, "
                "its port and the network between the hosts")
        time.sleep(_POLL)


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Joins this process to a run of `num_processes` processes; call before any other
    JAX call (it fixes the devices JAX sees).

    Process 0 serves as the coordinator at `coordinator` (`host:port`, an address the
    other processes reach and a free port on process 0's host). Unless the CPU
    collectives are already chosen (`jax_cpu_collectives_implementation`), they go
    over gloo. Any argument left None is found by JAX where it can (SLURM, Open MPI,
    Cloud TPU). After joining, the processes compare their `num_processes`.

    Args:
      coordinator: process 0's `host:port`.
      num_processes: how many processes the run has.
      process_id: this process's number, 0 to num_processes - 1.
      timeout: seconds to wait for the coordinator and every process to join; also
        JAX's heartbeat timeout, after which a process that stopped answering counts
        as dead and JAX ends the others.

    Raises:
      ArgumentError: a bad argument.
      DistributedError: the coordinator was not reached, not every process joined
        within `timeout`, the processes disagree on their number, or JAX refused to
        join (its reason quoted).
    """
    global _joined
    coordinator = _address(coordinator, "initialize: coordinator")
    validate.static("initialize", "timeout", timeout, validate.number_rule(1))
    if num_processes is not None:
        validate.static("initialize", "num_processes", num_processes,
                        validate.integer_rule(1))
    if process_id is not None:
        validate.static("initialize", "process_id", process_id,
                        validate.integer_rule(0, None if num_processes is None
                                              else num_processes - 1))
    label = _label(process_id, num_processes)
    if _joined:
        raise DistributedError(f"{label}: this process has joined a run already; "
                               "initialize once per process")
    if getattr(jax.config, "jax_cpu_collectives_implementation", None) is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    _joined = True
    deadline = time.monotonic() + timeout
    if coordinator is not None and process_id not in (None, 0):
        _reach(coordinator, deadline, label)
    _join(coordinator, num_processes, process_id, timeout, deadline, label)
    if num_processes is not None:
        counts = np.asarray(multihost_utils.process_allgather(np.int32(num_processes)))
        if len(set(counts.tolist())) > 1 or jax.process_count() != num_processes:
            said = ", ".join(f"process {p} says {n}" for p, n in enumerate(counts.tolist()))
            raise DistributedError(
                f"{label}: the processes disagree on how many they are ({said}; the "
                f"coordinator counts {jax.process_count()}); start every process with the "
                "same number of processes")


def _join(coordinator, num_processes, process_id, timeout, deadline, label) -> None:
    """`jax.distributed.initialize` with a deadline. JAX waits in C++ for every process
    and aborts the process at its own timeout, so it runs in a thread with a longer
    timeout, and this thread raises at ours."""
    wait = max(1, int(timeout))
    options = {"initialization_timeout": wait + _MARGIN, "heartbeat_timeout_seconds": wait}
    known = inspect.signature(jax.distributed.initialize).parameters  # older JAX: fewer
    options = {k: v for k, v in options.items() if k in known}
    failure: list[BaseException] = []

    def join():
        try:
            jax.distributed.initialize(coordinator, num_processes, process_id, **options)
        except Exception as e:  # noqa: BLE001 - reported by the waiting thread
            failure.append(e)

    worker = threading.Thread(target=join, name="jaxsolve-join", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        where = f" at {coordinator}" if coordinator else ""
        who = ("as the coordinator" if process_id == 0 else
               "after reaching the coordinator" if coordinator else "")
        raise DistributedError(
            f"{label}: waited {timeout:g} s {who} for every process of the run{where} to "
            f"join, and not all did; start all {num_processes or 'N'} processes, each "
            "with the same number of processes and its own process id")
    if failure:
        raise DistributedError(f"{label}: JAX could not join the run: "
                               f"{one_line(failure[0])}") from failure[0]


def joined() -> bool:
    """Whether `initialize` was called in this process (even if it failed)."""
    return _joined


def is_lead() -> bool:
    """Whether this is process 0, the one that writes files and prints (True alone)."""
    return jax.process_index() == 0


def agree(what: str, data: bytes) -> None:
    """Raises on every process unless every process passed the same `data`.

    A collective: every process calls it at the same point (nothing is exchanged when
    the run has one process). The data's SHA-256 digest is what travels.

    Args:
      what: what `data` describes, for the message ("shard_tree: the tree").
      data: the bytes to compare.

    Raises:
      DistributedError: the processes passed different data; the message names those
        that differ from process 0.
    """
    if jax.process_count() == 1:
        return
    digest = np.frombuffer(hashlib.sha256(data).digest(), np.uint8)
    every = np.asarray(multihost_utils.process_allgather(digest))  # [processes, 32]
    differ = [p for p in range(len(every)) if not np.array_equal(every[p], every[0])]
    if differ:
        raise DistributedError(
            f"{what} differs between processes: process{'es' * (len(differ) > 1)} "
            f"{', '.join(map(str, differ))} hold{'s' * (len(differ) == 1)} another than "
            f"process 0's; every process must build the same one")


@contextlib.contextmanager
def collective_errors(where: str) -> Iterator[None]:
    """Inside: the error of a collective whose peer process is gone becomes a
    `DistributedError` (JAX reports it as a runtime error, or a ValueError, whose
    message names gloo or the collective). Wrap the call that waits for the result
    (JAX dispatches asynchronously: the error comes where a value is read)."""
    try:
        yield
    except JaxsolveError:
        raise
    except (_RUNTIME_ERROR, ValueError) as e:
        text = one_line(e)
        if jax.process_count() == 1 or not any(
                word in text for word in ("Gloo", "gloo", "collective", "Connection")):
            raise
        raise DistributedError(
            f"{where}: process {jax.process_index()} of {jax.process_count()} lost "
            f"another process of the run ({text})") from e


__all__ = ["COORDINATOR", "DEFAULT_TIMEOUT", "NUM_PROCESSES", "PROCESS_ID", "TIMEOUT",
           "Settings", "agree", "collective_errors", "from_environment", "initialize",
           "is_lead", "joined"]
