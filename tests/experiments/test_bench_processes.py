"""bench_processes: its sizes, and one process's timing run in this process (the
several-process runs are tests/test_processes.py's and tests/cli/test_launch.py's)."""

import json
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def _bench(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))  # as when run as a script
    sys.modules.pop("bench_processes", None)
    import bench_processes
    return bench_processes


def test_quick_is_a_small_smoke_run_and_full_runs_leave_out_counts_above_the_cores(monkeypatch):
    bench = _bench(monkeypatch)
    quick = bench.parse_args(["--quick"])
    assert (quick.game, quick.iters, quick.repeats, quick.processes) == ("goofspiel4", 10, 2, [1, 2])
    monkeypatch.setattr(bench, "cores", lambda: 2)
    assert bench.parse_args([]).processes == [1, 2]
    monkeypatch.setattr(bench, "cores", lambda: 8)
    assert bench.parse_args([]).processes == [1, 2, 4]


def test_a_worker_times_its_calls(monkeypatch, tmp_path):
    """Goofspiel with 4 cards: each player plays a permutation of the 4 cards, so
    4! * 4! = 576 terminal histories, all on this process's one device."""
    bench = _bench(monkeypatch)
    out = tmp_path / "timings.json"
    bench.worker(str(out), "goofspiel4", 3, 2)
    record = json.loads(out.read_text())
    assert (record["processes"], record["devices"], record["terminals"]) == (1, 1, 576)
    assert len(record["seconds"]) == 2 and all(s > 0 for s in record["seconds"])
    assert record["ms_per_iteration"] > 0
