"""Where the benchmarks write their reports, without running one: a plain run writes
under results/local/ (ignored by git), so it never replaces a tracked result the README
cites; --publish writes that tracked file; an explicit --out wins over both; a --quick
run keeps its own smoke-run file and cannot be published."""

import importlib
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"
RESULTS, LOCAL = ROOT / "results", ROOT / "results" / "local"


@pytest.fixture
def script(monkeypatch):
    """Imports an experiment script by name, afresh, as when it runs (experiments/ on
    sys.path)."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))

    def load(name):
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    return load


def test_bench_cfr_writes_locally_unless_published(script):
    bench_cfr = script("bench_cfr")

    def path(*argv, backend="cpu"):
        return bench_cfr.output_path(bench_cfr.build_parser().parse_args(argv), backend)

    assert path() == LOCAL / "bench_cfr.json"
    assert path("--publish") == RESULTS / "bench_cfr.json"
    assert path("--out", "/tmp/x.json") == path("--out", "/tmp/x.json", "--publish") == \
        Path("/tmp/x.json")
    # The accelerator's and another solver's names, local or published alike.
    assert path(backend="gpu") == LOCAL / "bench_cfr_gpu.json"
    assert path("--solver", "pcfr+", "--publish", backend="gpu") == \
        RESULTS / "bench_cfr_pcfrplus_gpu.json"
    # A smoke run still goes to the temp folder.
    assert path("--quick") == Path(tempfile.gettempdir()) / "bench_cfr_quick.json"


def test_bench_mccfr_writes_locally_unless_published(script):
    bench_mccfr = script("bench_mccfr")

    def path(*argv):
        return bench_mccfr.output_path(bench_mccfr.build_parser().parse_args(argv))

    assert path() == LOCAL / "bench_mccfr.json"
    assert path("--publish") == RESULTS / "bench_mccfr.json"
    assert path("--out", "/tmp/x.json", "--publish") == Path("/tmp/x.json")
    assert path("--quick") == RESULTS / "bench_mccfr_quick.json"  # git-ignored: *quick*


def test_bench_mcts_writes_locally_unless_published(script):
    bench_mcts = script("bench_mcts")

    def path(*argv, backend="cpu"):
        return bench_mcts.output_path(bench_mcts.parse_args(list(argv)), backend)

    assert path() == LOCAL / "bench_mcts.json"
    assert path("--publish") == RESULTS / "bench_mcts.json"
    assert path("--out", "/tmp/x.json", "--publish") == Path("/tmp/x.json")
    assert path("--sweep", "1,9", backend="gpu") == LOCAL / "bench_mcts_sweep_gpu.json"
    assert path("--quick") == RESULTS / "bench_mcts_quick.json"  # git-ignored: *quick*


@pytest.mark.parametrize("name", ["bench_cfr", "bench_mccfr", "bench_mcts", "cfr_variants",
                                  "resolving"])
def test_a_smoke_run_is_never_published(script, capsys, name):
    """--quick --publish is refused while parsing, before anything runs or is written."""
    with pytest.raises(SystemExit) as exit_info:
        script(name).main(["--quick", "--publish"])
    assert exit_info.value.code == 2
    assert "--publish does not combine with --quick" in capsys.readouterr().err


def test_the_local_results_are_ignored_by_git():
    """What a plain run writes never shows as a change to commit."""
    import subprocess

    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", "results/local/bench_cfr.json"],
                             cwd=ROOT, check=False).returncode
    assert ignored == 0


@pytest.mark.parametrize("name, argv, says", [
    # Unchecked, each would run to the end and publish figures of -5 or 0 iterations
    # (exit 0), or fail in a traceback after the solves.
    ("game_values", ["--iters", "-5"], "argument --iters: must be an integer above 0, got -5"),
    ("conjunction", ["--cap", "0"], "argument --cap: must be an integer above 0, got 0"),
    ("spoof_rounds", ["--max-rounds", "0"], "argument --max-rounds: must be an integer above 0"),
    ("maneuver_detection", ["--iters", "0"], "argument --iters: must be an integer above 0"),
    ("abstraction", ["--iters", "-3"], "argument --iters: must be an integer above 0, got -3"),
    ("abstraction", ["--out", str(EXPERIMENTS)], "is a folder; give the JSON file's path"),
    ("convergence", ["--seconds", "inf"], "must be a finite number above 0, got inf"),
    ("convergence", ["--thresholds", "abc"], "--thresholds must be comma-separated numbers"),
    ("convergence", ["--out", str(EXPERIMENTS)], "is a folder; give the JSON file's path"),
])
def test_game_scripts_refuse_bad_options_at_once(script, capsys, name, argv, says):
    with pytest.raises(SystemExit) as exit_info:
        script(name).main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
