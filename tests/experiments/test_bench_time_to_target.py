"""bench_time_to_target's pure parts, without a JAX solve or a peer: the check
schedule, the time to a threshold read from a trajectory, the ratio and its bounds,
the stall that sends a variant to float64, the results file's fields (a race of a
stand-in solver whose exploitability is known), its option errors, its plot, and the
docs table made from such a file."""

import importlib
import json
import sys
from pathlib import Path

import pytest

from jaxsolve.stopping import check_iterations

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ttt(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "experiments"))  # as when run as a script
    sys.modules.pop("bench_time_to_target", None)
    return importlib.import_module("bench_time_to_target")


@pytest.fixture
def gen_pages(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "docs"))  # as docs/hooks.py imports it
    sys.modules.pop("gen_pages", None)
    return importlib.import_module("gen_pages")


# ---------------------------------------------------------------- the schedule
def test_blocks_follow_the_command_lines_check_schedule(ttt):
    # Without a rate the blocks end where `jaxsolve solve --target` checks: every 10
    # iterations to 100, then ceil(10% of the iterations done): 100 -> 110 -> 121
    # (11) -> 134 (ceil 12.1 = 13) -> 148 (ceil 13.4 = 14).
    done, checks = 0, []
    while done < 150:
        done += ttt.block_size(done, remaining_s=1e9)
        checks.append(done)
    assert checks[9:14] == [100, 110, 121, 134, 148]
    assert checks[:-1] == check_iterations(0, 150, 10, 10)[:-1]  # its last is cut at 150


def test_blocks_are_cut_to_the_budget_left(ttt):
    # At iteration 200 the gap is 20; at 10 ms an iteration 0.05 s holds 5 of them,
    # 1 s all 20; with no time left the block is still one iteration.
    assert ttt.block_size(200, 1.0, 0.01) == 20
    assert ttt.block_size(200, 0.05, 0.01) == 5
    assert ttt.block_size(200, -3.0, 0.01) == 1


def test_stalled_tells_a_floor_from_a_run_still_falling(ttt):
    falling = [1 / t for t in check_iterations(0, 5000, 10, 10)]
    floor = [1e-3 / 10 ** min(k, 4) + 2e-7 * (1 + (k % 3)) for k in range(30)]
    assert not ttt.stalled(falling, 1e-9)  # 1/T: still falling, the budget stopped it
    assert ttt.stalled(floor, 1e-9)  # round-off: ~2e-7 to 6e-7 for the last third
    assert not ttt.stalled(floor, 1e-6)  # it arrived: nothing to rerun
    assert not ttt.stalled(floor[:8], 1e-9)  # too few checks to tell


# ---------------------------------------------------------------- reading a trajectory
TRAJECTORY = {"iteration": [10, 20, 30, 40], "seconds": [0.5, 1.0, 1.6, 2.0],
              "eval_seconds": [0.1, 0.2, 0.3, 0.4], "exploitability": [0.5, 0.01, 0.02, 0.001]}


def test_time_to_is_the_first_check_at_or_below(ttt):
    assert ttt.time_to(TRAJECTORY, 0.01) == {"iterations": 20, "seconds": 1.0,
                                             "eval_seconds": 0.2, "evaluations": 2}
    assert ttt.time_to(TRAJECTORY, 0.005)["iterations"] == 40  # not the 0.02 at 30
    assert ttt.time_to(TRAJECTORY, 1e-4) is None


def _solver(library, seconds, **reached):
    return {"library": library, "seconds": seconds,
            "time_to": {"0.001": None, "0.0001": None,
                        **{k: {"seconds": v} for k, v in reached.items()}}}


def test_ratio_of_the_bests_and_its_bounds(ttt):
    solvers = {"jaxsolve pcfr+": _solver("jaxsolve", 2.0, **{"0.001": 0.5, "0.0001": 2.0}),
               "jaxsolve cfr+": _solver("jaxsolve", 60.0, **{"0.001": 0.4}),
               "noregret pcfr+": _solver("noregret", 10.0, **{"0.001": 3.0}),
               "openspiel cfr+": _solver("openspiel", 40.0, **{"0.001": 2.0})}
    # Best of ours 0.4 s (CFR+), best peer's 2.0 s (OpenSpiel): 5x, both measured.
    assert ttt.ratio(solvers, 1e-3) == {"ratio": 5.0, "bound": "exact", "jaxsolve": "jaxsolve cfr+",
                                        "jaxsolve_s": 0.4, "peer": "openspiel cfr+", "peer_s": 2.0}
    # Only ours arrived at 1e-4, in 2 s; the peers ran 10 and 40 s without: the best
    # peer needs more than 10 s, at least 5x.
    r = ttt.ratio(solvers, 1e-4)
    assert (r["ratio"], r["bound"], r["peer"]) == (5.0, "at least", None)
    assert ttt.verdict(r, 5) == "yes" and ttt.verdict(r, 6) == "undecided"
    # Only a peer arrives (in 3 s) while ours ran up to 60 s: at most 3/60.
    solvers["noregret pcfr+"]["time_to"]["0.0001"] = {"seconds": 3.0}
    del solvers["jaxsolve pcfr+"]
    r = ttt.ratio(solvers, 1e-4)
    assert (r["ratio"], r["bound"], r["jaxsolve"]) == (0.05, "at most", None)
    assert ttt.verdict(r, 5) == "no" and ttt.verdict(r, 0.01) == "undecided"
    assert ttt.verdict({"ratio": 4.9, "bound": "exact"}, 5) == "no"
    assert ttt.ratio({k: v for k, v in solvers.items() if k.startswith("jax")}, 1e-3) is None


def test_a_peers_budget_is_cut_to_a_multiple_of_ours(ttt):
    assert ttt.peer_budget(60, None, 20, 10) == 60  # ours did not arrive
    assert ttt.peer_budget(60, 0.1, 20, 10) == 10  # 2 s, raised to the floor
    assert ttt.peer_budget(60, 1.5, 20, 10) == 30
    assert ttt.peer_budget(60, 9.0, 20, 10) == 60


# ---------------------------------------------------------------- the results file
class _Harmonic:
    """Stands in for a solver: exploitability 1 / iterations done, in no time."""

    threads = "none"

    def __init__(self):
        self.done = 0

    def iterate(self, n):
        self.done += n

    def average(self):
        return None

    def exploitability(self, average):
        return 1 / self.done


def test_a_race_stops_at_the_smallest_threshold_and_records_every_check(ttt):
    trajectory, blocks, evaluations = ttt.race(_Harmonic(), 0.004, budget_s=60)
    # 1/T <= 0.004 from T = 250; the checks: 10, 20, ..., 100, 110, 121, 134, 148, 163,
    # 180, 198, 218, 240, 264.
    assert trajectory["iteration"] == check_iterations(0, 264, 10, 10)
    assert trajectory["iteration"][-1] == 264 and len(blocks) == len(evaluations) == 20
    entry = ttt.PEERS["noregret pcfr+"]
    record = ttt.summarize(entry, trajectory, blocks, evaluations, (1e-2, 1e-3), 4.0)
    # Thresholds are relative to the payoff range 4: 0.04 from T = 25 (check 30), 0.004
    # from T = 250 (check 264).
    assert record["time_to"]["0.01"]["iterations"] == 30
    assert record["time_to"]["0.001"]["iterations"] == 264
    assert record["best_exploitability"] == pytest.approx(1 / 264)
    assert {"setup_s", "compile_s"}.isdisjoint(record)  # run_one adds them
    assert {"library", "algorithm", "label", "dtype", "policy", "ms_per_iter", "eval_ms",
            "iterations", "seconds", "time_to", "trajectory"} <= set(record)
    assert (record["label"], record["dtype"], record["policy"]) == (
        "NoRegret PCFR+", "float64", "average")
    assert not any("target" in key for key in record)  # what was measured, no goals


def test_a_race_stops_at_its_budget(ttt):
    class Slow(_Harmonic):
        def iterate(self, n):
            import time
            time.sleep(0.002 * n)
            super().iterate(n)

    trajectory, _, _ = ttt.race(Slow(), 1e-9, budget_s=0.1)
    assert 0.1 <= trajectory["seconds"][-1] < 0.2  # the last block cut to the time left


def test_solvers_to_run(ttt):
    solvers = ttt.entries(["pcfr+"], {"liteefg", "openspiel cfr+"})
    assert list(solvers)[:3] == ["jaxsolve cfr+", "jaxsolve pcfr+", "jaxsolve pcfr+ float64"]
    assert solvers["jaxsolve pcfr+ float64"].label == "jaxsolve PCFR+ float64"
    assert {e.library for e in solvers.values()} == {"jaxsolve", "noregret"}
    assert ttt.PEERS["liteefg mmd"].policy == "current"  # last-iterate methods


@pytest.mark.parametrize("argv,message", [
    (["--quick", "--publish"], "--publish does not combine with --quick"),
    (["--games", "kuhn,chess"], "--games: unknown 'chess'"),
    (["--float64", "cfr"], "--float64: unknown cfr"),
    (["--skip", "cplex"], "--skip: unknown cplex"),
    (["--thresholds", "1e-3,2"], "numbers between 0 and 1"),
])
def test_bad_options_are_one_line_errors(ttt, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        ttt.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def _report():
    def solver(library, algorithm, label, seconds, exploitability, reached):
        return {"library": library, "algorithm": algorithm, "label": label,
                "dtype": "float32" if library == "jaxsolve" else "float64", "policy": "average",
                "setup_s": 0.5, "compile_s": 2.0 if library == "jaxsolve" else None,
                "ms_per_iter": 0.25, "eval_ms": 1.5, "iterations": 400, "seconds": seconds,
                "best_exploitability": exploitability[-1],
                "time_to": {"0.001": reached, "0.0001": None},
                "trajectory": {"iteration": [100, 400], "seconds": [seconds / 2, seconds],
                               "eval_seconds": [0.0, 0.1], "exploitability": exploitability}}
    solvers = {"jaxsolve pcfr+": solver("jaxsolve", "PCFR+", "jaxsolve PCFR+", 0.8, [0.1, 0.01],
                                        {"iterations": 400, "seconds": 0.8}),
               "jaxsolve cfr+": solver("jaxsolve", "CFR+", "jaxsolve CFR+", 30.0, [0.1, 0.03],
                                       None),
               "noregret pcfr+": solver("noregret", "PCFR+", "NoRegret PCFR+", 4.0, [0.2, 0.02],
                                        {"iterations": 400, "seconds": 4.0})}
    return {"command": "bench_time_to_target.py --publish --out /tmp/x.json",
            "date": "2030-01-02 03:04:05 UTC", "machine": {"cpu": "Test CPU", "cores": 4},
            "versions": {"noregret": "1"}, "thresholds": [1e-3, 1e-4],
            "games": [{"game": "Toy", "histories": 1234, "payoff_range": 20.0,
                       "solvers": solvers, "skipped": {},
                       "ratios": {"0.001": {"ratio": 5.0, "bound": "exact",
                                            "jaxsolve": "jaxsolve pcfr+", "jaxsolve_s": 0.8,
                                            "peer": "noregret pcfr+", "peer_s": 4.0},
                                  "0.0001": None}}]}


def test_plot_only_draws_the_results_file(ttt, tmp_path):
    results = tmp_path / "t.json"
    results.write_text(json.dumps(_report()))
    assert ttt.main(["--plot-only", "--out", str(results)]) == 0
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"


def test_the_docs_table_follows_the_results_file(gen_pages):
    text = gen_pages.time_to_target(_report())
    assert "2030-01-02 03:04:05 UTC" in text and "Test CPU, 4 cores" in text
    assert "`python experiments/bench_time_to_target.py --publish`" in text  # no --out
    rows = [line for line in text.splitlines() if line.startswith("| Toy")]
    assert rows == ["| Toy | 0.001 | jaxsolve PCFR+: 0.8 s (400 it.) | 2 | "
                    "NoRegret PCFR+: 4 s (400 it.) | 5× |",
                    "| Toy | 0.0001 | none | — | none | — |"]
    # Each solver's row; CFR+ did not arrive: its time and its best, 0.03 / 20.
    assert "| jaxsolve CFR+ | 0.5 | 2 | 0.25 | 1.5 | not in 30 s (best 1.5e-3) |" in text
    for report_gap in (0.5, 5.0):  # a peer faster than ours is said; a slower one not
        data = _report()
        data["games"][0]["ratios"]["0.001"]["ratio"] = report_gap
        text = gen_pages.time_to_target(data)
        said = "Toy, 0.001: NoRegret PCFR+ arrives before jaxsolve's best" in text
        assert said == (report_gap < 1)
        assert ("jaxsolve's best variant arrives first" in text) == (report_gap >= 1)
    # jaxsolve's CFR+ did not arrive at 1e-3 where its PCFR+ did: said.
    assert "Toy, 0.001: slower than jaxsolve's PCFR+ (or not there): CFR+." in text


def test_the_docs_say_so_while_nothing_is_published(gen_pages, monkeypatch, tmp_path):
    monkeypatch.setattr(gen_pages, "RESULTS", tmp_path)
    assert "not published yet" in gen_pages.time_to_target()
