"""experiments/bench_mccfr.py without running a benchmark: repeated contestants are refused,
part (b)'s ratio uses the independent pyspiel score of our policy, and no printed ratio
is rounded onto the other side of 1."""

import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
RTOL, ATOL = 1e-5, 4 * 2.0**-23  # float32, payoffs up to 1: checked below


def _bench_mccfr(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))  # as when run as a script
    sys.modules.pop("bench_mccfr", None)
    import bench_mccfr
    return bench_mccfr


@pytest.mark.parametrize("argv, named", [
    (["--batch-sizes", "64,256,64"], "--batch-sizes: duplicate entries B=64"),
    (["--equal-configs", "256:cfr,1024:dcfr,256:cfr"],
     "--equal-configs: duplicate entries 256:cfr"),
    (["--equal-configs", "256:cfr,0256:cfr"], "--equal-configs: duplicate entries 256:cfr"),
    (["--games", "leduc,leduc"], "--games: duplicate entries leduc"),
    (["--schemes", "es,os,es"], "--schemes: duplicate entries es"),
    # A negative budget would run, and compare exploitabilities "at -1 s".
    (["--seconds", "-1"], "argument --seconds: must be a finite number above 0, got -1"),
    (["--seconds", "inf"], "argument --seconds: must be a finite number above 0, got inf"),
    (["--repeats", "0"], "argument --repeats: must be an integer above 0, got 0"),
    (["--block", "x"], "argument --block: expected a number, got 'x'"),
])
def test_duplicates_are_refused_by_name(monkeypatch, capsys, argv, named):
    # Refused while parsing, before jax or pyspiel is imported or any file is written.
    bench_mccfr = _bench_mccfr(monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        bench_mccfr.main([*argv, "--out", "/nonexistent/never-written.json"])
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err


def test_distinct_configs_with_the_same_batch_are_not_duplicates(monkeypatch, capsys):
    # 256:cfr and 256:dcfr are labelled apart ("B=256" and "B=256 dcfr"): allowed. Stop the
    # run right after parsing by an unknown scheme, which is checked after the duplicates.
    bench_mccfr = _bench_mccfr(monkeypatch)
    with pytest.raises(SystemExit):
        bench_mccfr.main(["--equal-configs", "256:cfr,256:dcfr", "--schemes", "xx"])
    err = capsys.readouterr().err
    assert "duplicate" not in err and "unknown scheme 'xx'" in err


def test_float32_tolerance_is_the_one_the_tests_assume(monkeypatch):
    # machine.check_tolerance, the rule bench_cfr uses too: 1e-5 relative plus
    # 4 float32 eps (2**-23) times the largest |payoff|.
    assert _bench_mccfr(monkeypatch).check_tolerance("float32", 1.0) == (RTOL, ATOL)


def test_equal_time_ratio_uses_the_independent_score(monkeypatch):
    bench_mccfr = _bench_mccfr(monkeypatch)
    cpp = {"exploitability": 0.1}
    # Our own float32 evaluator says 0.099 (ratio 0.99); pyspiel says 0.101 (ratio
    # 1.01): the ratio follows pyspiel, and the 0.002 gap is flagged.
    v = bench_mccfr.equal_time_comparison(
        {"exploitability": 0.099, "pyspiel_exploitability": 0.101}, cpp, RTOL, ATOL)
    assert v["source"] == "pyspiel" and v["value"] == 0.101
    assert v["ratio"] == pytest.approx(1.01) and v["ratio_text"] == "1.010"
    assert v["mismatch"] is True and v["abs_diff"] == pytest.approx(0.002)
    assert v["tolerance"] == pytest.approx(RTOL * 0.101 + ATOL)
    # The other way round: ours says 1.01x, pyspiel 0.99x.
    v = bench_mccfr.equal_time_comparison(
        {"exploitability": 0.101, "pyspiel_exploitability": 0.099}, cpp, RTOL, ATOL)
    assert v["source"] == "pyspiel" and v["ratio_text"] == "0.990"
    # float32 round-off (3e-8, as in results/bench_mccfr.json) is not a mismatch.
    v = bench_mccfr.equal_time_comparison(
        {"exploitability": 0.05 + 3e-8, "pyspiel_exploitability": 0.05}, cpp, RTOL, ATOL)
    assert v["mismatch"] is False and v["ratio"] == pytest.approx(0.5)


def test_equal_time_ratio_falls_back_to_ours_and_says_why(monkeypatch):
    bench_mccfr = _bench_mccfr(monkeypatch)
    cpp = {"exploitability": 0.1}
    v = bench_mccfr.equal_time_comparison({"exploitability": 0.099}, cpp, RTOL, ATOL)
    assert v["source"] == "jaxsolve" and v["value"] == 0.099 and v["ratio_text"] == "0.990"
    assert v["mismatch"] is None and "--no-check" in v["fallback_reason"]
    v = bench_mccfr.equal_time_comparison(
        {"exploitability": 0.101, "pyspiel_error": "pyspiel could not evaluate it: boom"},
        cpp, RTOL, ATOL)
    assert v["source"] == "jaxsolve" and v["ratio"] == pytest.approx(1.01)
    assert v["fallback_reason"] == "pyspiel could not evaluate it: boom"


NEAR_ONE = [1 + s * 10.0 ** -k for k in range(1, 10) for s in (-4, -1, 1, 4)] + [
    0.996, 0.9996, 0.99996, 1.004, 1.0004, 1.0, 0.5, 2.0]


@pytest.mark.parametrize("digits", [2, 3])
def test_printed_ratio_stays_on_the_side_of_one(monkeypatch, digits):
    bench_mccfr = _bench_mccfr(monkeypatch)
    for value in NEAR_ONE:
        shown = float(bench_mccfr.figure_beside(value, 1, digits))
        assert (shown < 1) == (value < 1) and (shown > 1) == (value > 1), value


def test_equal_time_ratio_text_stays_on_the_side_of_one(monkeypatch):
    bench_mccfr = _bench_mccfr(monkeypatch)
    for ratio in NEAR_ONE:
        v = bench_mccfr.equal_time_comparison(
            {"exploitability": 0.3, "pyspiel_exploitability": 0.1 * ratio},
            {"exploitability": 0.1}, RTOL, ATOL)
        shown = float(v["ratio_text"])
        assert (shown < 1) == (v["ratio"] < 1) and (shown > 1) == (v["ratio"] > 1), ratio


class _Fake:
    """A contestant costing 0.01 s of solver time per unit, scored by a counter."""

    def __init__(self, label, check):
        self.label, self.units, self.samples_per_unit = label, 0, 2
        self.setup_s = self.compile_s = 0.0
        if check:
            self.check = lambda: {"pyspiel_exploitability": 1.0 / (1 + self.units)}

    def advance(self, n):
        self.units += n
        return 0.01 * n

    def evaluate(self):
        return 1.0 / (1 + self.units)


def test_every_point_of_ours_is_checked_independently(monkeypatch):
    bench_mccfr = _bench_mccfr(monkeypatch)
    res = bench_mccfr.equal_time([_Fake("ours", True), _Fake("cpp", False)], 1.0, 0.1)
    assert len(res["ours"]["points"]) == 3
    for p in res["ours"]["points"]:
        assert p["pyspiel_exploitability"] == p["exploitability"]
    assert "pyspiel_check_s" in res["ours"] and "pyspiel_check_s" not in res["cpp"]
    assert all("pyspiel_exploitability" not in p for p in res["cpp"]["points"])
