"""The MCTS benchmark: its ratio arithmetic against hand values, and an end-to-end run
at tiny sizes (the script and its report, not speed); the helpers every benchmark
shares; the AlphaZero experiment's heatmap and its failure handling."""

import json
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def _bench_mcts(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))  # as when run as a script
    sys.modules.pop("bench_mcts", None)
    import bench_mcts
    return bench_mcts


def test_ratio_is_the_ratio_of_medians_over_all_calls(monkeypatch, capsys):
    # By hand: ours' calls are 1, 2, 3, 4 s (median 2.5), mctx's 2, 5, 9, 10 s (median
    # 7); the ratio is 7 / 2.5 = 2.8. Per round: ours' medians 1.5 and 3.5, mctx's 3.5
    # and 9.5, so 3.5 / 1.5 = 2.333... and 9.5 / 3.5 = 2.714..., sorted.
    bench_mcts = _bench_mcts(monkeypatch)
    out = bench_mcts._ratio_report("gumbel", [[1, 2], [3, 4]], [[2, 5], [9, 10]])
    assert out["ratio"] == 2.8
    assert out["per_round"] == [3.5 / 1.5, 9.5 / 3.5]
    assert ("(mctx's median time / ours; above 1: ours faster): 2.800x  (per round: min 2.33, "
            "median 2.52, max 2.71; 2 rounds)") in capsys.readouterr().out


def test_bench_mcts_runs_and_writes_its_report(tmp_path, monkeypatch, capsys):
    bench_mcts = _bench_mcts(monkeypatch)
    out = tmp_path / "bench.json"
    results = bench_mcts.main(["--batch", "4", "--sims", "3", "--rounds", "2", "--repeats", "1",
                               "--only", "gumbel", "--out", str(out)])
    printed = capsys.readouterr().out
    assert printed.startswith("machine: ") and "speed-up gumbel" in printed
    report = json.loads(out.read_text())
    assert report["machine"]["mctx"] and report["batch"] == 4 and report["sims"] == 3
    assert set(report["calls"]) == {"ours_gumbel", "mctx_gumbel", "model_only"}
    for call in report["calls"].values():
        assert len(call["ms_per_round"]) == 2 and call["ms"] > 0
        assert call["compile_s"] > call["ms"] / 1e3  # the first call also traces and compiles
        assert abs(call["sims_per_s"] - 4 * 3 / (call["ms"] / 1e3)) < 1e-6 * call["sims_per_s"]
    ratio = report["ratio_gumbel"]
    assert ratio["ratio"] == results["ratio_gumbel"] and len(ratio["per_round"]) == 2
    assert report["overhead_ms_gumbel"]["model_alone"] == report["calls"]["model_only"]["ms"]
    assert "targets" not in report  # what was measured, no goals


def test_bench_mcts_quick_is_a_small_smoke_run(monkeypatch):
    """--quick's sizes (each one given explicitly wins), without running it: the run
    itself takes ~20 s on 2 cores, most of it compiling five searches."""
    bench_mcts = _bench_mcts(monkeypatch)
    sizes = ("batch", "sims", "repeats", "rounds")
    quick = bench_mcts.parse_args(["--quick"])
    assert quick.quick and [getattr(quick, s) for s in sizes] == [16, 8, 1, 1]
    assert bench_mcts.parse_args(["--quick", "--rounds", "3"]).rounds == 3
    full = bench_mcts.parse_args([])
    assert not full.quick and [getattr(full, s) for s in sizes] == [256, 32, 4, 5]


def test_timing_rotates_the_order_and_times_the_first_call_apart(monkeypatch):
    bench_mcts = _bench_mcts(monkeypatch)
    calls = []
    fns = {name: (lambda p, k, name=name: calls.append(name)) for name in ("a", "b", "c")}
    compile_s = {}
    times = bench_mcts._seconds(fns, None, repeats=1, rounds=3, compile_s=compile_s)
    # First calls in order, then rounds a b c / b c a / c a b: each name leads once.
    assert calls == ["a", "b", "c", "a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert set(compile_s) == {"a", "b", "c"}
    assert all(len(rounds) == 3 and all(len(r) == 1 for r in rounds) for rounds in times.values())


def test_figures_beside_a_threshold_read_the_right_way(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    from machine import figure_beside
    assert figure_beside(9.96, 10, 1) == "9.96"  # "10.0" would read as equal to 10
    assert figure_beside(9.9996, 10, 3) == "9.9996"
    assert figure_beside(0.996, 1, 2) == "0.996"
    assert figure_beside(1.0004, 1, 2) == "1.0004"
    assert figure_beside(8.004, 8.0, 3) == "8.004"
    assert figure_beside(10.0, 10, 3) == "10.000" and figure_beside(0.5, 1, 2) == "0.50"
    assert figure_beside(None, 1) == "-"
    for threshold in (10, 3, 8.0, 0.3, 1):
        for delta in (-1e-3, -1e-4, -1e-6, -1e-9, 0.0, 1e-9, 1e-6, 1e-4, 1e-3):
            value = threshold * (1 + delta)
            for decimals in (1, 2, 3, 4):
                shown = float(figure_beside(value, threshold, decimals))
                assert (shown > threshold) - (shown < threshold) == \
                    (value > threshold) - (value < threshold), (value, decimals, shown)


def test_processes_run_the_same_benchmark_apart_and_summarise_by_hand(tmp_path, monkeypatch,
                                                                      capsys):
    # Three fake child processes with Gumbel ratios 1.9, 2.1, 2.0 and PUCT 5, 6, 4: the
    # summary's medians are 2.0 and 5, its extremes the smallest and largest.
    import subprocess
    bench_mcts = _bench_mcts(monkeypatch)
    runs, argvs = iter([(1.9, 5.0), (2.1, 6.0), (2.0, 4.0)]), []

    def child(cmd, check):
        argvs.append(cmd[2:])
        gumbel, puct = next(runs)
        out = Path(cmd[cmd.index("--out") + 1])
        out.write_text(json.dumps({"ratio_gumbel": {"ratio": gumbel}, "ratio_puct": {"ratio": puct},
                                   "calls": {"ours_gumbel": {"ms": 10 / gumbel},
                                             "mctx_gumbel": {"ms": 10.0}}}))
    monkeypatch.setattr(subprocess, "run", child)
    out = tmp_path / "across.json"
    summary = bench_mcts.main(["--rounds", "2", "--processes=3", "--out", str(out)])
    # Each child runs the same benchmark, without --processes and with its own --out.
    assert all(a[:2] == ["--rounds", "2"] and a.count("--out") == 1 and
               not any(w.startswith("--processes") for w in a) for a in argvs)
    assert summary["ratio_gumbel"] == {"median": 2.0, "min": 1.9, "max": 2.1,
                                       "ratios": [1.9, 2.1, 2.0]}
    assert summary["ratio_puct"]["median"] == 5.0
    assert summary["mctx_gumbel_ms"] == {"median": 10.0, "min": 10.0, "max": 10.0}
    assert "median 2.000x, min 1.900x, max 2.100x" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["processes"] == 3 and len(report["runs"]) == 3


def test_results_record_the_commit_they_were_measured_at(monkeypatch):
    """machine_info()["git"] is git's own answer for this checkout (None outside git)."""
    import subprocess

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "experiments"))
    import machine

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        assert machine.git_state() is None
        return
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=root).returncode != 0
    assert machine.git_state() == {"commit": head, "dirty": dirty}


def test_the_value_heatmap_shows_a_reachable_position_of_both_verdicts(monkeypatch):
    """The value heatmap must not fix turn 1, no detection and the sensor pointing S:
    in the goal variant the sensor starts pointing N and turns 45 degrees a move, so
    no play reaches that position, and the evader wins from every cell at turn 1 (one
    colour). Checked against `pe.reachable` and the exact values, cell by cell."""
    import numpy as np  # noqa: PLC0415

    from jaxsolve.alphazero import exact  # noqa: PLC0415
    from jaxsolve.games import pursuit_evasion as pe  # noqa: PLC0415
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    sys.modules.pop("pursuit_alphazero", None)
    import pursuit_alphazero
    env = pe.goal_variant(5)
    sol = exact.solve(env)
    turn, detections, sensor = pursuit_alphazero.heatmap_position(env, sol)
    reach = pe.reachable(env)[turn, detections, :, sensor]
    values = np.asarray(sol.value_evader)[turn, detections, :, sensor][reach]
    assert (values > 0).sum() >= 5 and (values < 0).sum() >= 5
    assert detections <= env.max_detections  # not already lost on detections
    # The position the old heatmap showed: reached by no play, one verdict everywhere.
    assert not pe.reachable(env)[1, 0, :, 4].any()
    assert (np.asarray(sol.value_evader)[1, 0] > 0).all()


def test_pursuit_experiment_refuses_a_size_the_exact_solver_cannot_grade(monkeypatch, capsys,
                                                                          tmp_path):
    """`--sizes 45` is refused before any training (not after a minute of the 5x5 main
    run, failing in exact.solve and losing summary.json), by the solver's own
    estimate (45x45 goal variant: 46 turns, ~6.7 GiB against the 4 GiB limit)."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    sys.modules.pop("pursuit_alphazero", None)
    import pursuit_alphazero
    with pytest.raises(SystemExit) as info:
        pursuit_alphazero.main(["--sizes", "5", "45", "--out", str(tmp_path / "o")])
    assert info.value.code == 2
    assert "--sizes 45: the exact solver" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
