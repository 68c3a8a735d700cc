"""bench_cfr's parts, without running any benchmark: figures print with the digits
they need, the pyspiel check of our exploitability flags a mismatch above its
tolerance only, and every timed block is kept."""

import importlib
import sys
import types
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


# bench_cfr.py is the command line; its parts sit beside it (bench_cfr_<part>.py).
PARTS = ("games", "memory", "solvers", "tables", "worker")


@pytest.fixture
def cfr(monkeypatch):
    """bench_cfr's modules, imported afresh as when the script runs: cfr.cli is
    bench_cfr.py, cfr.<part> is bench_cfr_<part>.py, cfr.machine experiments/machine.py."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))  # as when run as a script
    for name in ("bench_cfr", *(f"bench_cfr_{part}" for part in PARTS)):
        sys.modules.pop(name, None)
    modules = {part: importlib.import_module(f"bench_cfr_{part}") for part in PARTS}
    return types.SimpleNamespace(cli=importlib.import_module("bench_cfr"),
                                 machine=importlib.import_module("machine"), **modules)


def test_times_print_with_four_significant_digits(cfr):
    assert cfr.tables.fmt_sig(90.34785) == "90.35"
    assert cfr.tables.fmt_sig(0.000912) == "0.0009120"


def test_mismatch_flag_fires_above_the_tolerance_only(cfr):
    # float32, payoffs up to 1: atol = 4 * 2**-23 = 4.76837e-7; at 0.01 the relative
    # part adds 1e-5 * 0.01 = 1e-7, so the tolerance is 5.76837e-7.
    rtol, atol = cfr.machine.check_tolerance("float32", 1.0)
    assert (rtol, atol) == (1e-5, 4.76837158203125e-07)

    def check(ours, reference, dtype, payoff_scale):
        return cfr.machine.compare_check(ours, reference,
                                         *cfr.machine.check_tolerance(dtype, payoff_scale))

    ok = check(0.01 + 5e-7, 0.01, "float32", 1.0)
    assert ok["tolerance"] == pytest.approx(5.76837158203125e-07, rel=1e-12)
    assert ok["abs_diff"] == pytest.approx(5e-7, rel=1e-6) and not ok["mismatch"]
    assert ok["rel_diff"] == pytest.approx(5e-5, rel=1e-6)
    assert check(0.01 + 7e-7, 0.01, "float32", 1.0)["mismatch"]
    assert check(0.01 - 7e-7, 0.01, "float32", 1.0)["mismatch"]
    # The absolute part scales with the payoffs: Leduc's 13 allows 6.2e-6.
    assert not check(0.01 + 6e-6, 0.01, "float32", 13.0)["mismatch"]
    # float64: 1e-9 * 0.01 + 4 * 2**-52 = 1.0000888e-11.
    assert not check(0.01 + 5e-12, 0.01, "float64", 1.0)["mismatch"]
    assert check(0.01 + 2e-11, 0.01, "float64", 1.0)["mismatch"]
    # The committed float32 Leduc figures (2.49863e-4 against 2.49847e-4) pass.
    assert not check(2.498626708984375e-4, 2.498465532158045e-4, "float32", 13.0)["mismatch"]


def test_trajectory_spread(cfr):
    out = {"checkpoints": [10, 30],
           "openspiel_cpp": {"exploitability": {"10": 0.2435, "30": 0.0633}},
           "jaxcfr": None,
           "jaxsolve": {"exploitability": {"10": 0.2435, "30": 0.0500}}}
    spread = cfr.worker.trajectory_spread(out)
    assert spread["10"] == 0.0
    assert spread["30"] == pytest.approx((0.0633 - 0.05) / 0.0633)


def test_every_timed_block_is_kept_beside_the_median(cfr):
    """Each contestant's JSON keeps every timed block's seconds per iteration, in the
    order timed, and its ms_per_iter is 1000 times their median: tiny real runs on Kuhn
    of jaxsolve's CFR+ (whole blocks only, then more until it has `repeats`), OpenSpiel's
    C++ solver (a last short block: 4 -> 5) and JaxCFR (from iteration 1, so its first
    block is one short)."""
    import statistics

    import jax

    import jaxsolve

    pyspiel = pytest.importorskip("pyspiel")
    from jaxsolve.openspiel import from_pyspiel

    game = pyspiel.load_game("kuhn_poker")
    results = {
        "jaxsolve": (cfr.solvers.bench_jaxsolve(jax, jaxsolve, None, None, from_pyspiel(game),
                                                0.0, (2, 6), 2, 4, 1), 4),
        "openspiel_cpp": (cfr.solvers.bench_openspiel_cpp(pyspiel, game, (2, 5), 2, 1, None), 3),
        "jaxcfr": (cfr.solvers.bench_jaxcfr(jax, pyspiel, game, (2, 5), 2, None), 3),
    }
    for name, (result, blocks) in results.items():
        seconds = result["block_s_per_iter"]
        assert len(seconds) == result["timed_blocks"] == blocks, name
        assert all(s > 0 for s in seconds), name
        assert result["ms_per_iter"] == 1e3 * statistics.median(seconds), name
        assert result["ms_per_iter_min"] == 1e3 * min(seconds), name


@pytest.mark.parametrize("argv, named", [
    (["--cap", "-1"], "argument --cap: must be a finite number above 0, got -1"),
    (["--liars-iters", "0"], "argument --liars-iters: must be an integer above 0, got 0"),
    (["--max-memory-gib", "lots"], "argument --max-memory-gib: expected a number, got 'lots'"),
])
def test_counts_and_budgets_must_be_positive(cfr, capsys, argv, named):
    """Refused while parsing, before any child process runs: a negative --cap would run
    and print an empty C++ row."""
    with pytest.raises(SystemExit) as exit_info:
        cfr.cli.main([*argv, "--out", "/nonexistent/never-written.json"])
    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err


def test_every_full_width_solver_can_be_timed(cfr):
    import jaxsolve

    full_width = sorted(k for k, factory in jaxsolve.SOLVERS.items()
                        if factory().state_type is jaxsolve.CFRState)
    assert sorted(cfr.games.SOLVER_NAMES) == full_width


def test_any_openspiel_game_by_its_spec(cfr, capsys):
    """`--games openspiel:SPEC` benchmarks any OpenSpiel game; one that exploitability
    cannot judge, or that OpenSpiel cannot load, is a one-line failure for that game."""
    import argparse

    pyspiel = pytest.importorskip("pyspiel")
    entry = cfr.games.game_entry("openspiel:liars_dice(dice_sides=3)")
    assert entry.pyspiel == ("liars_dice(dice_sides=3)", {}) and entry.sources == ("pyspiel",)
    game = cfr.games.load_game(pyspiel, *entry.pyspiel)
    assert game.get_parameters()["dice_sides"] == 3
    assert cfr.games.schedule("openspiel:liars_dice(dice_sides=3)", True) == \
        cfr.games._OTHER_QUICK
    args = argparse.Namespace(quick=True, solver="cfr+", liars_iters=None)
    hanabi = cfr.worker.bench_game("openspiel:tiny_hanabi", args, None, None, pyspiel)
    assert "tiny_hanabi is identical-utility" in hanabi["error"]
    unknown = cfr.worker.bench_game("openspiel:no_such_game", args, None, None, pyspiel)
    assert unknown["error"].startswith("OpenSpiel cannot load 'no_such_game'")
    with pytest.raises(SystemExit) as exit_info:
        cfr.cli.main(["--games", "kuhn,openspiel:", "--out", "/nonexistent/x.json"])
    assert exit_info.value.code == 2
    assert "unknown game(s) ['openspiel:']" in capsys.readouterr().err


def test_the_table_says_what_was_timed(cfr):
    """`--liars-iters 20` times C++ in one block of 20 iterations, its cold first one
    included: the table says so ("1 in 20 it"), not "1x100"."""
    label = cfr.tables.timed_label
    assert label({"timed_blocks": 1, "block_iters": 100, "iterations_done": 20}) == "1 in 20 it"
    assert label({"timed_blocks": 5, "block_iters": 100, "iterations_done": 500}) == "5x100"
