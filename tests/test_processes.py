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
