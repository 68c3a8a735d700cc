"""The benchmark that defines issue 5's speed target still runs end to end (tiny sizes:
this checks the script and its report, not speed)."""

import json
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def test_bench_mcts_runs_and_writes_its_report(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))  # as when run as a script
    sys.modules.pop("bench_mcts", None)
    import bench_mcts

    out = tmp_path / "bench.json"
    results = bench_mcts.main(["--batch", "4", "--sims", "3", "--rounds", "2", "--repeats", "1",
                               "--only", "gumbel", "--out", str(out)])
    printed = capsys.readouterr().out
    assert printed.startswith("machine: ") and "ratio gumbel" in printed
    report = json.loads(out.read_text())
    assert report["machine"]["mctx"] and report["batch"] == 4 and report["sims"] == 3
    assert set(report["calls"]) == {"ours_gumbel", "mctx_gumbel", "model_only"}
    for call in report["calls"].values():
        assert len(call["ms_per_round"]) == 2 and call["ms"] > 0
        assert abs(call["sims_per_s"] - 4 * 3 / (call["ms"] / 1e3)) < 1e-6 * call["sims_per_s"]
    ratio = report["ratio_gumbel"]
    assert ratio["ratio"] == results["ratio_gumbel"] and len(ratio["per_round"]) == 2
    assert report["overhead_ms_gumbel"]["model_alone"] == report["calls"]["model_only"]["ms"]
