"""`python -m jaxsolve.launch --processes N -- solve GAME ...`: one `jaxsolve` run in N
local processes.

    python -m jaxsolve.launch --processes 2 -- solve kuhn_poker --iters 1000 --out runs/k2

Starts N copies of the `jaxsolve` program (`python -m jaxsolve` with the words after
`--`) with the environment variables that `jaxsolve.processes.from_environment` reads:
`JAXSOLVE_COORDINATOR=127.0.0.1:PORT` (a free port, or `--port`),
`JAXSOLVE_NUM_PROCESSES=N`, `JAXSOLVE_PROCESS_ID` from 0 to N-1 and, with `--timeout`,
`JAXSOLVE_TIMEOUT`. The processes join as one run: `jaxsolve solve` splits the tree's
terminals over the devices of all of them, process 0 prints the summary and writes
the results and checkpoints, and the others print nothing but their errors.

A launcher, rather than a `--processes` option of `jaxsolve solve`: the processes it
starts are the `jaxsolve` program unchanged, joined by the same variables that a job
script sets for one process per host on a cluster, so a local run rehearses the
cluster's and `solve` has one meaning wherever it runs.

When a process fails (exits with a code other than 0, or is killed by a signal), the
launcher names it and gives the others `--grace` seconds to end on their own (a
process whose peer is gone reports it at its next collective); those still running
are then stopped (SIGTERM, then SIGKILL). The launcher exits with the code of the
process that failed first (128 + the signal's number for a signal), 0 when all
succeed. The processes run in their own session: a Ctrl-C reaches each of them once,
from the launcher, and each ends as `jaxsolve solve` does on Ctrl-C (process 0
saves the last completed chunk). SIGTERM or SIGHUP to the launcher stops them all.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Sequence

from jaxsolve.processes import COORDINATOR, DEFAULT_TIMEOUT, NUM_PROCESSES, PROCESS_ID, TIMEOUT

PROGRAM = "jaxsolve.launch"
GRACE = 10.0  # seconds the others get to end on their own after a process fails
_STOP_WAIT = 5.0  # seconds between SIGTERM and SIGKILL
_POLL = 0.1  # seconds between looks at the processes


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on `host` now (the system's choice for port 0)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _outcome(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


def _exit_code(code: int) -> int:
    return 128 - code if code < 0 else code


def _say(text: str) -> None:
    print(f"{PROGRAM}: {text}", file=sys.stderr, flush=True)


def _stop(procs: Sequence[subprocess.Popen]) -> None:
    """SIGTERM to each process still running, SIGKILL to those still running after
    _STOP_WAIT seconds."""
    running = [p for p in procs if p.poll() is None]
    for p in running:
        p.terminate()
    deadline = time.monotonic() + _STOP_WAIT
    for p in running:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def supervise(procs: Sequence[subprocess.Popen], grace: float = GRACE) -> int:
    """Waits for the processes of one run; returns the launcher's exit code.

    The first process to fail is named on stderr (of several seen at once, one killed
    by a signal); the others get `grace` seconds, then are stopped. A Ctrl-C is passed on to every process still running (once per
    Ctrl-C), and the launcher then waits for them.

    Args:
      procs: the processes, process i at index i.
      grace: seconds the others get after the first failure.

    Returns:
      0 when every process exits with 0; else the exit code of the first to fail.
    """
    first = None  # (process, its code)
    deadline = None
    while True:
        try:
            codes = [p.poll() for p in procs]
            if first is None:
                failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
                if failed:  # a killed process first: the others' errors follow from it
                    first = min(failed, key=lambda f: (f[1] >= 0, f[0]))
                    others = sum(c is None for c in codes)
                    _say(f"process {first[0]} {_outcome(first[1])}"
                         + (f"; the other {others} get {grace:g} s to end" if others else ""))
                    deadline = time.monotonic() + grace
            if all(c is not None for c in codes):
                break
            if deadline is not None and time.monotonic() >= deadline:
                still = [i for i, c in enumerate(codes) if c is None]
                _say(f"stopping process{'es' * (len(still) > 1)} "
                     f"{', '.join(map(str, still))}, still running {grace:g} s after "
                     f"process {first[0]} failed")
                _stop(procs)
                break
            time.sleep(_POLL)
        except KeyboardInterrupt:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
    if first is None:
        codes = [p.returncode for p in procs]
        return next((_exit_code(c) for c in codes if c), 0)
    return _exit_code(first[1])


def _leave(signum, frame) -> None:  # SIGTERM, SIGHUP: the processes go with the launcher
    raise SystemExit(128 + signum)


def build_parser() -> argparse.ArgumentParser:
    """The launcher's options; the words after `--` are the `jaxsolve` command."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {PROGRAM}", description=__doc__.split("\n\n")[0],
        usage=f"python -m {PROGRAM} --processes N [options] -- COMMAND [ARGS...]")
    parser.add_argument("--processes", type=int, required=True, metavar="N",
                        help="how many processes (at least 1)")
    parser.add_argument("--port", type=int, default=None,
                        help="the coordinator's port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--timeout", type=float, default=None, metavar="S",
                        help="seconds to wait for every process to join, and after which "
                        "a process that stopped answering counts as dead "
                        f"(sets {TIMEOUT}; default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--grace", type=float, default=GRACE, metavar="S",
                        help="seconds the other processes get to end on their own after "
                        f"one fails, before they are stopped (default {GRACE:g})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the launcher; returns its exit code (2 for bad options)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    words = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = build_parser()
    args = parser.parse_args(own)
    if args.processes < 1:
        parser.error(f"--processes must be at least 1, got {args.processes}")
    if not words:
        parser.error("nothing to run: give the jaxsolve command after --, e.g. "
                     "-- solve kuhn_poker")
    port = free_port() if args.port is None else args.port
    env = dict(os.environ, **{COORDINATOR: f"127.0.0.1:{port}",
                              NUM_PROCESSES: str(args.processes)})
    if args.timeout is not None:
        env[TIMEOUT] = f"{args.timeout:g}"
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _leave)
    procs: list[subprocess.Popen] = []
    try:
        for i in range(args.processes):
            procs.append(subprocess.Popen([sys.executable, "-m", "jaxsolve", *words],
                                          env={**env, PROCESS_ID: str(i)},
                                          start_new_session=True))
        return supervise(procs, args.grace)
    finally:
        _stop(procs)


if __name__ == "__main__":
    sys.exit(main())
