"""Two JAX processes on one host, joined over gloo, give the one-process answer.

`distributed.shard_tree`/`run_sharded` (one tree's terminals split over the two
processes' devices) and `solve_batch` (a batch split over them) run in two Python
processes of one CPU device each, joined by `jaxsolve.processes.initialize`. The same
script runs once more in one process with two simulated CPU devices
(`XLA_FLAGS=--xla_force_host_platform_device_count=2`): the same mesh shape, so the
same per-device programs and the same reduction order (a psum of two partial sums
is one addition, and a + b == b + a in floating point). Against it the results are
required bit for bit, the tree's and the batch's; every process compiles with the
same XLA_FLAGS (conftest's), since LLVM's optimisation level moves float32 results
by an ulp. Against the plain one-device solve (one long sum over
terminals) they agree to float32 round-off only. JAX start-up and the compiles
dominate, so one launch of the three processes serves every check.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from jaxsolve import processes
from jaxsolve.errors import ArgumentError

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 240  # seconds for a launch: a hang fails the test instead of blocking CI

SCRIPT = textwrap.dedent("""
    import json, os, sys
    import jax
    import numpy as np
    from jaxsolve import processes
    label, out = sys.argv[1], sys.argv[2]
    settings = processes.from_environment()
    if settings is not None:  # one of two processes
        processes.initialize(**settings._asdict())
        label += str(jax.process_index())
    import jaxsolve
    from jaxsolve import distributed, games

    result, record = {}, {"devices": jax.device_count(), "processes": jax.process_count(),
                          "local": jax.local_device_count()}
    kuhn = jaxsolve.compile_game(games.load("kuhn_poker"))
    solver = jaxsolve.cfr_plus()

    # One tree, its terminals split over both devices.
    sharded = distributed.shard_tree(kuhn)
    state = distributed.run_sharded(solver, sharded, solver.init(kuhn), 30)
    # A state read back to the host and placed on this process's device resumes.
    state = distributed.run_sharded(solver, sharded, jax.device_put(distributed.gather(state)), 20)
    host = distributed.gather(state)
    policy = np.asarray(jaxsolve.average_policy(kuhn, host))
    mesh = distributed.default_mesh()
    values = jax.jit(lambda t, p: distributed.on_terminal_shards(jaxsolve.policy_value, t, p,
                                                                 mesh=mesh))
    result.update(tree_regrets=host.regrets, tree_average=host.average, tree_policy=policy,
                  tree_expl=np.asarray(distributed.exploitability_sharded(sharded, policy)),
                  tree_values=np.asarray(values(sharded, policy)))
    record["tree_split"] = [len(sharded.utilities.sharding.device_set),
                            [list(s.data.shape) for s in sharded.utilities.addressable_shards]]
    if settings is None:  # the plain one-device solve, for the round-off comparison
        plain = jax.jit(jaxsolve.run, static_argnums=0)(solver, kuhn, solver.init(kuhn), 50)
        ppolicy = jaxsolve.average_policy(kuhn, plain)
        result.update(plain_regrets=plain.regrets, plain_average=plain.average,
                      plain_policy=ppolicy, plain_expl=jaxsolve.exploitability(kuhn, ppolicy),
                      plain_values=jaxsolve.policy_value(kuhn, ppolicy))

    # A batch of four games (other payoffs), two per device.
    u = np.asarray(kuhn.utilities)
    batch, axes = jaxsolve.sweep(kuhn, utilities=np.stack([u, 2 * u, 0.5 * u, -u]))
    states = distributed.solve_batch(solver, batch, axes, 30)
    record["batch_split"] = [len(states.regrets.sharding.device_set),
                             bool(states.regrets.is_fully_addressable)]
    expl = distributed.exploitability_batch(batch, axes, states)
    states = distributed.gather(states)
    result.update(batch_regrets=states.regrets, batch_average=states.average,
                  batch_expl=distributed.gather(expl))
    if settings is None:
        alone = jax.jit(jax.vmap(lambda t: jaxsolve.run(solver, t, solver.init(t), 30),
                                 in_axes=(axes,)))(batch)
        result.update(alone_regrets=alone.regrets, alone_average=alone.average)

    # A tree that differs on one process is refused on every process.
    if settings is not None:
        other = kuhn if jax.process_index() == 0 else kuhn.replace(utilities=2 * u)
        try:
            distributed.shard_tree(other)
            record["differs"] = "accepted"
        except jaxsolve.DistributedError as e:
            record["differs"] = str(e)
    np.savez(os.path.join(out, label + ".npz"), **{k: np.asarray(v) for k, v in result.items()})
    with open(os.path.join(out, label + ".json"), "w") as f:
        json.dump(record, f)
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(devices: int = 1, **extra) -> dict:
    """This process's environment (conftest's XLA_FLAGS included: every process
    compiles alike) for a CPU process of `devices` devices, with `extra` set."""
    path = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXSOLVE_")}
    flags = env.get("XLA_FLAGS", "")
    if devices > 1:
        flags += f" --xla_force_host_platform_device_count={devices}"
    return dict(env, JAX_PLATFORMS="cpu", PYTHONPATH=path, XLA_FLAGS=flags.strip(), **extra)


def start(args, devices: int = 1, **extra) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], env=environment(devices, **extra), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs, timeout=TIMEOUT) -> list[tuple[int, str, str]]:
    """Each process's (exit code, stdout, stderr); all killed when the first exceeds
    `timeout` seconds in all."""
    deadline, done = time.monotonic() + timeout, []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            done.append((proc.returncode, out, err))
    except subprocess.TimeoutExpired:
        for proc in procs:
            proc.kill()
        pytest.fail(f"processes still running after {timeout} s")
    return done


def pair(args, n=2, timeout_s=60, **extra) -> list[subprocess.Popen]:
    """`n` processes joined at a free port on 127.0.0.1, process i with id i."""
    coordinator = f"127.0.0.1:{free_port()}"
    return [start(args, JAXSOLVE_COORDINATOR=coordinator, JAXSOLVE_NUM_PROCESSES=str(n),
                  JAXSOLVE_PROCESS_ID=str(i), JAXSOLVE_TIMEOUT=str(timeout_s), **extra)
            for i in range(n)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{"one": the one process of two simulated devices, "p0"/"p1": the two processes},
    each (arrays, record)."""
    out = tmp_path_factory.mktemp("processes")
    script = out / "script.py"
    script.write_text(SCRIPT)
    procs = [start([str(script), "one", str(out)], devices=2)]
    procs += pair([str(script), "p", str(out)])
    for code, _, err in finish(procs):
        assert code == 0, err[-4000:]
    return {label: (dict(np.load(out / f"{label}.npz")),
                    json.loads((out / f"{label}.json").read_text()))
            for label in ("one", "p0", "p1")}


def test_two_processes_of_one_device_each_form_one_mesh(runs):
    assert runs["one"][1]["devices"] == 2 and runs["one"][1]["processes"] == 1
    for label in ("p0", "p1"):
        record = runs[label][1]
        assert (record["devices"], record["processes"], record["local"]) == (2, 2, 1)
        # Kuhn's 30 terminals: 15 on each process's one device.
        assert record["tree_split"] == [2, [[15, 2]]]
        # Four games, two per device: the results are split over the processes.
        assert record["batch_split"] == [2, False]


TREE = ["tree_regrets", "tree_average", "tree_policy", "tree_expl", "tree_values"]
BATCH = ["batch_regrets", "batch_average", "batch_expl"]


@pytest.mark.parametrize("name", TREE + BATCH)
def test_both_processes_read_the_same_results(runs, name):
    assert np.array_equal(runs["p0"][0][name], runs["p1"][0][name])


@pytest.mark.parametrize("name", TREE + BATCH)
def test_two_processes_equal_one_process_of_two_devices_bit_for_bit(runs, name):
    got, want = runs["p0"][0][name], runs["one"][0][name]
    assert got.dtype == want.dtype == np.float32
    assert np.array_equal(got, want), np.max(np.abs(got - want))


@pytest.mark.parametrize("name", ["regrets", "average", "policy", "expl", "values"])
def test_a_tree_split_over_two_processes_equals_the_plain_solve_to_round_off(runs, name):
    """One long sum over 30 terminals against two sums of 15 added: float32 round-off,
    relative to the values' scale (the average grows with the iterations)."""
    got, want = runs["p0"][0][f"tree_{name}"], runs["one"][0][f"plain_{name}"]
    assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, np.max(np.abs(want)))


@pytest.mark.parametrize("name", ["regrets", "average"])
def test_a_batch_split_over_two_processes_equals_each_game_solved_alone(runs, name):
    got, want = runs["p0"][0][f"batch_{name}"], runs["one"][0][f"alone_{name}"]
    assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, np.max(np.abs(want)))


def test_a_tree_that_differs_between_processes_is_refused_on_every_process(runs):
    for label in ("p0", "p1"):
        message = runs[label][1]["differs"]
        assert message.startswith("shard_tree: the tree differs between processes: "
                                  "process 1 holds another than process 0's"), message


# Joining: what goes wrong ends in bounded time with a DistributedError, reported by
# the `jaxsolve` program as one line and exit code 1 (it never reaches the solve).
JOIN_TIMEOUT = 4  # seconds, JAXSOLVE_TIMEOUT


def test_joins_that_cannot_succeed_end_in_a_named_error_in_bounded_time(tmp_path):
    """Three runs at once (their JAX imports overlap): process 1 of 2 whose coordinator
    never starts; process 0 of 2 whose peer never starts; two processes that disagree
    on how many they are (0 says 2, 1 says 3: the coordinator of process 0 counts 2,
    so both join, compare and fail together)."""
    solve = ["-m", "jaxsolve", "solve", "kuhn_poker", "--quiet", "--out", str(tmp_path)]

    def one(process_id, num_processes, coordinator):
        return start(solve, JAXSOLVE_COORDINATOR=coordinator,
                     JAXSOLVE_NUM_PROCESSES=str(num_processes),
                     JAXSOLVE_PROCESS_ID=str(process_id), JAXSOLVE_TIMEOUT=str(JOIN_TIMEOUT))

    alone = f"127.0.0.1:{free_port()}"  # nobody serves it
    waiting = f"127.0.0.1:{free_port()}"
    disagree = f"127.0.0.1:{free_port()}"
    began = time.monotonic()
    procs = [one(1, 2, alone), one(0, 2, waiting), one(0, 2, disagree), one(1, 3, disagree)]
    done = finish(procs, timeout=120)
    assert time.monotonic() - began < 120
    errors = [err.strip().splitlines()[-1] if err.strip() else "" for _, _, err in done]
    assert [code for code, _, _ in done] == [1, 1, 1, 1], errors
    assert errors[0].startswith(f"jaxsolve: error: process 1 of 2: cannot reach the "
                                f"coordinator at {alone} (process 0) within the timeout ")
    assert errors[1] == (f"jaxsolve: error: process 0 of 2: waited {JOIN_TIMEOUT} s as the "
                         f"coordinator for every process of the run at {waiting} to join, "
                         "and not all did; start all 2 processes, each with the same number "
                         "of processes and its own process id")
    for label, message in (("0 of 2", errors[2]), ("1 of 3", errors[3])):
        assert message == (f"jaxsolve: error: process {label}: the processes disagree on how "
                           "many they are (process 0 says 2, process 1 says 3; the coordinator "
                           "counts 2); start every process with the same number of processes")


def test_settings_come_from_the_environment():
    assert processes.from_environment({}) is None
    assert processes.from_environment({"JAXSOLVE_NUM_PROCESSES": "4",
                                       "JAXSOLVE_COORDINATOR": "10.0.0.1:1234",
                                       "JAXSOLVE_PROCESS_ID": "3"}) == (
        "10.0.0.1:1234", 4, 3, processes.DEFAULT_TIMEOUT)
    # Unset ones are left to JAX's detection (SLURM, Open MPI, Cloud TPU).
    assert processes.from_environment({"JAXSOLVE_NUM_PROCESSES": "2",
                                       "JAXSOLVE_TIMEOUT": "30"}) == (None, 2, None, 30.0)
    for name, value, says in (("JAXSOLVE_NUM_PROCESSES", "two", "expected an integer >= 1"),
                              ("JAXSOLVE_PROCESS_ID", "-1", "expected an integer >= 0"),
                              ("JAXSOLVE_TIMEOUT", "0", "expected a number >= 1"),
                              ("JAXSOLVE_COORDINATOR", "host", "expected the coordinator as "
                               "host:port")):
        with pytest.raises(ArgumentError, match=says):
            processes.from_environment({"JAXSOLVE_NUM_PROCESSES": "2", name: value})
