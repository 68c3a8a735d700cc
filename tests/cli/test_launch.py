"""`python -m jaxsolve.launch`: `jaxsolve solve` in two local processes joined over gloo.

The two processes split Kuhn poker's 30 terminals between their CPU devices; the
summary, strategy.json and the checkpoint are process 0's. They are compared with
the same solve in this one process (`jaxsolve.cli.main`, one device, one long sum
over terminals): equal to float32 round-off, not bit for bit, since the two
processes add two partial sums of 15 terminals each (bit-for-bit agreement with one
process of two simulated devices is tests/test_processes.py's). A checkpoint of the
two processes resumes in one process from exactly its iterates, and a process killed
mid-run stops the run within bounded time with an error naming it. JAX start-up and
the compile dominate; every launch has a timeout, so a hang fails the test.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import jaxsolve
from cli_runs import solve
from conftest import RUN, builtin_tree
from jaxsolve.checkpoint import load_checkpoint
from jaxsolve.cli import solve as solve_command

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 240  # seconds for a launch
ITERS = ("--iters", "40", "--eval-every", "20")


def launch(*words, processes=2, timeout_s=None) -> subprocess.Popen:
    """`python -m jaxsolve.launch --processes N [--timeout S] -- WORDS` (this process's
    environment: the same XLA_FLAGS, so the same compiled arithmetic)."""
    path = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXSOLVE_")}
    own = ["--processes", str(processes)] + (["--timeout", str(timeout_s)] if timeout_s else [])
    return subprocess.Popen([sys.executable, "-m", "jaxsolve.launch", *own, "--", *words],
                            env=dict(env, JAX_PLATFORMS="cpu", PYTHONPATH=path), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=TIMEOUT):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the launcher stops its processes
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"the launcher still ran after {timeout} s: {err[-2000:]}")
    return proc.returncode, out, err


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(two processes' folder, one process's folder, launcher's stdout, stderr)."""
    two, one = tmp_path_factory.mktemp("two"), tmp_path_factory.mktemp("one")
    proc = launch("solve", "kuhn_poker", *ITERS, "--out", str(two))
    assert solve(one, *ITERS) == 0  # meanwhile, in this process
    code, out, err = finish(proc)
    assert code == 0, err[-4000:]
    return two, one, out, err


def test_only_process_0_prints(runs):
    _, _, out, err = runs
    assert out.count("Strategy (average policy of cfr+ after 40 iterations)") == 1
    assert "Solved on 2 devices of 2 processes (2 x cpu)" in out
    assert "Gloo" not in out  # the collectives' connection note stays off stdout
    assert "error" not in err


def test_two_processes_write_the_results_of_one(runs):
    two, one, _, _ = runs
    got, want = (json.loads((d / solve_command.STRATEGY).read_text()) for d in (two, one))
    assert got.pop("device") == "2 devices of 2 processes (2 x cpu)"
    want.pop("device")
    for key in ("exploitability", "value", "strategy"):
        a, b = got.pop(key), want.pop(key)
        if key == "strategy":
            assert a.keys() == b.keys()
            a = [p for row in a.values() for p in row.values()]
            b = [p for row in b.values() for p in row.values()]
        assert np.allclose(a, b, rtol=0, atol=1e-6), key
    assert got == want  # game, settings, iterations, players, ...


def test_the_checkpoint_of_two_processes_holds_one_process_iterates(runs):
    two, one, _, _ = runs
    (a, meta_a), (b, meta_b) = (load_checkpoint(d / solve_command.CHECKPOINT)
                                for d in (two, one))
    assert int(a.iteration) == int(b.iteration) == 40
    for field in type(a)._fields:
        x, y = np.asarray(getattr(a, field)), np.asarray(getattr(b, field))
        assert x.dtype == y.dtype and x.shape == y.shape, field
        # average_carry holds the low bits the average's sums lost (Kahan), so it is
        # round-off of the average's scale, as the average's own difference is.
        scale = np.abs(b.average if field == "average_carry" else y).max(initial=0)
        assert np.abs(x - y).max(initial=0) <= 1e-5 * max(1.0, scale), field
    for meta in (meta_a, meta_b):  # timings differ; the run's identity does not
        meta["convergence"] = [(r["iteration"], round(r["exploitability"], 5))
                               for r in meta["convergence"]]
    assert meta_a == meta_b


def test_a_checkpoint_of_two_processes_resumes_in_one(runs, tmp_path):
    """Resumed alone, the run continues from the two processes' iterates exactly: its
    state after 20 more iterations is `run` from the loaded state, bit for bit."""
    two, _, _, _ = runs
    shutil.copytree(two, tmp_path, dirs_exist_ok=True)
    saved, _ = load_checkpoint(tmp_path / solve_command.CHECKPOINT)
    assert solve(tmp_path, "--iters", "60", "--eval-every", "20", "--resume") == 0
    resumed, meta = load_checkpoint(tmp_path / solve_command.CHECKPOINT)
    solver, kuhn = jaxsolve.cfr_plus(), builtin_tree("kuhn_poker")
    want = RUN(solver, kuhn, saved, 20)
    for field in type(resumed)._fields:
        assert np.array_equal(getattr(resumed, field), getattr(want, field)), field
    assert [r["iteration"] for r in meta["convergence"]] == [20, 40, 60]


def _children(pid: int) -> dict[int, int]:
    """{process id of the run: system pid} of the launcher `pid`'s processes."""
    found = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        ids = [e.split(b"=", 1)[1] for e in environ if e.startswith(b"JAXSOLVE_PROCESS_ID=")]
        if ids:
            found[int(ids[0])] = int(child)
    return found


@pytest.mark.skipif(not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists(),
                    reason="finds the launcher's processes in Linux's /proc")
def test_a_process_killed_mid_run_stops_the_run_with_its_name(tmp_path):
    """Process 1 killed (SIGKILL) after the first checkpoint: process 0 fails at its
    next collective with a DistributedError (gloo sees the closed connection), the
    launcher names the killed process and exits with 128 + 9, all within a minute."""
    proc = launch("solve", "kuhn_poker", "--iters", "10000000", "--eval-every", "200",
                  "--out", str(tmp_path), "--quiet", timeout_s=20)
    deadline = time.monotonic() + TIMEOUT
    while not (tmp_path / solve_command.CHECKPOINT).exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            finish(proc, timeout=1)
            pytest.fail("the run ended, or wrote no checkpoint in time")
        time.sleep(0.2)
    os.kill(_children(proc.pid)[1], signal.SIGKILL)
    killed = time.monotonic()
    code, _, err = finish(proc, timeout=60)
    assert time.monotonic() - killed < 60
    assert code == 128 + signal.SIGKILL, err[-3000:]
    assert "jaxsolve.launch: process 1 was killed by SIGKILL" in err
    assert "jaxsolve: error: solve: process 0 of 2 lost another process of the run" in err


def _python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code])


def test_the_launcher_stops_the_others_after_a_failure_and_exits_with_its_code(capsys):
    from jaxsolve import launch
    assert launch.supervise([_python("pass"), _python("pass")]) == 0
    slow = _python("import time; time.sleep(60)")
    began = time.monotonic()
    assert launch.supervise([slow, _python("raise SystemExit(3)")], grace=0.5) == 3
    assert time.monotonic() - began < 30 and slow.returncode == -signal.SIGTERM
    err = capsys.readouterr().err
    assert "jaxsolve.launch: process 1 exited with code 3; the other 1 get 0.5 s to end" in err
    assert "jaxsolve.launch: stopping process 0, still running 0.5 s after process 1 failed" in err


def test_the_launcher_refuses_a_run_without_a_command(capsys):
    from jaxsolve import launch
    for argv, says in ((["--processes", "2"], "nothing to run: give the jaxsolve command"),
                       (["--processes", "0", "--", "solve", "kuhn_poker"],
                        "--processes must be at least 1, got 0")):
        with pytest.raises(SystemExit) as stopped:
            launch.main(argv)
        assert stopped.value.code == 2 and says in capsys.readouterr().err


def test_only_full_width_solves_run_across_processes(monkeypatch, capsys, tmp_path):
    """Refused before joining (nothing waits for the other processes): another command
    would run once per process, and a sampling solver reads terminals by their ids in
    the whole tree, which a process holding a slice does not have."""
    from jaxsolve import cli, processes
    monkeypatch.setenv("JAXSOLVE_NUM_PROCESSES", "2")
    assert cli.main(["games"]) == 2
    assert capsys.readouterr().err.strip() == (
        "jaxsolve: error: only `jaxsolve solve` runs across processes; unset "
        "JAXSOLVE_NUM_PROCESSES to run `jaxsolve games`")
    assert solve(tmp_path, "--algo", "os-mccfr") == 2
    assert ("--algo os-mccfr samples terminals by their ids in the whole tree, so it runs "
            "in one process") in capsys.readouterr().err
    assert not processes.joined()
