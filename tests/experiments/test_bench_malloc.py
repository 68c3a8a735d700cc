"""experiments/bench_malloc.py: each setting runs in processes of its own that report
which allocator settings they ran under, and the summary is the median over processes
of each process's figure."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench_malloc(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "experiments"))
    sys.modules.pop("bench_malloc", None)
    import bench_malloc
    return bench_malloc


def _figures(ms_per_iter, eval_ms, faults):
    return {"ms_per_iter": ms_per_iter, "eval_ms": eval_ms, "faults_per_eval": faults,
            "eval_temp_bytes": 7_000_000, "label": "liar's dice 1x6", "histories": 294_883,
            "block_iterations": 100}


def test_summary_is_the_median_over_processes(bench_malloc):
    runs = {"kept": [{"liars": _figures(2.0, 1.0, 0)}, {"liars": _figures(4.0, 3.0, 2)},
                     {"liars": _figures(3.0, 2.0, 1)}],
            "system": [{"liars": _figures(3.0, 9.0, 900)}, {"liars": _figures(6.0, 6.0, 700)},
                       {"liars": _figures(4.5, 4.0, 800)}]}
    [game] = bench_malloc.summarize(runs, ["liars"])
    assert game["kept"]["ms_per_iter"] == 3.0 and game["kept"]["eval_ms"] == 2.0
    assert game["system"]["eval_ms"] == 6.0 and game["system"]["faults_per_eval"] == 800
    assert game["eval_ms_system_over_kept"] == 3.0
    assert game["ms_per_iter_system_over_kept"] == 1.5
    assert len(game["kept"]["per_process"]) == 3


def test_a_tiny_run_measures_both_settings_apart(bench_malloc, tmp_path, capsys):
    out = tmp_path / "bench_malloc.json"
    assert bench_malloc.main(["--games", "kuhn", "--processes", "1", "--blocks", "1",
                              "--evaluations", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    [game] = report["games"]
    assert game["game"] == "Kuhn poker" and game["histories"] == 58
    # Each setting ran in a process of its own, under the allocator it names: the
    # system process saw JAXSOLVE_SYSTEM_MALLOC=1 and left glibc's defaults.
    assert [p["malloc_kept"] for p in game["kept"]["per_process"]] == [True]
    assert [p["malloc_kept"] for p in game["system"]["per_process"]] == [False]
    for setting in ("kept", "system"):
        assert game[setting]["eval_ms"] > 0 and game[setting]["ms_per_iter"] > 0
    assert "Kuhn poker" in capsys.readouterr().out


def test_unknown_game_is_a_one_line_error(bench_malloc, capsys):
    with pytest.raises(SystemExit):
        bench_malloc.main(["--games", "kuhn,nope"])
    assert "unknown 'nope'" in capsys.readouterr().err
