"""bench_peers: its traffic formula, its option errors, and one tiny real run in which the
peers this environment lacks are skipped with a note and the ones it has (OpenSpiel's
C++) reach the same exploitability as ours after the same iterations."""

import importlib
import json
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


@pytest.fixture
def peers(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))  # as when run as a script
    sys.modules.pop("bench_peers", None)
    return importlib.import_module("bench_peers")


def test_traffic_of_kuhn_counted_by_hand(peers):
    from conftest import pyspiel_tree

    tree = pyspiel_tree("kuhn_poker")
    s = tree.sizes
    assert (s.num_players, s.num_terminals, s.num_infosets, s.num_actions) == (2, 30, 12, 2)
    # Every action of Kuhn is legal: 24 sequences. Per player update: 30 leaves * (2
    # players' last sequences + payoff + chance, 4 bytes each) = 480, two updates;
    # each sequence's 12 passes of 4 bytes once an iteration, 24 * 48 = 1152.
    assert peers.legal_sequences(tree) == 24
    assert peers.iteration_bytes(tree) == 2 * 480 + 1152
    # Three passes over the leaves (two best responses, one value), 24 * 4 * 4.
    assert peers.evaluation_bytes(tree) == 3 * 480 + 384


def test_the_floor_is_the_leaf_sums_plus_the_other_bytes_at_the_bandwidth(peers):
    from conftest import pyspiel_tree

    tree = pyspiel_tree("kuhn_poker")
    # The two players' leaf sums read 30 indices and 30 weights each (2 * 240 bytes);
    # the other 2400 bytes of the iteration at 1e6 bytes/s take 2.4 ms.
    assert peers.floor_ms(2880, tree, 0.5, 1e6) == pytest.approx(0.5 + 2.4)
    assert peers.leaf_sums_ms(tree, repeats=3) > 0


@pytest.mark.parametrize("argv,message", [
    (["--games", "kuhn,chess"], "--games: unknown 'chess'"),
    (["--games", "kuhn,"], "--games: unknown empty entry"),
    (["--skip", "cplex"], "--skip: unknown cplex"),
    (["--quick", "--publish"], "--publish does not combine with --quick"),
])
def test_bad_options_are_one_line_errors(peers, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        peers.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


class _Recorder:
    """A solver whose evaluation only records who evaluated, in order."""

    def __init__(self, label, calls):
        self.label, self.calls = label, calls

    def exploitability(self, average):
        self.calls.append((self.label, average))
        return 0.0


def test_evaluations_take_turns_in_a_rotating_order(peers):
    calls = []
    solvers = {label: _Recorder(label, calls) for label in ("jaxsolve", "noregret", "openspiel")}
    averages = {label: f"{label} average" for label in solvers}
    times = peers.evaluation_times(solvers, averages, rounds=3, repeats=2)
    # Each turn: one untimed call and two timed ones, each on the solver's own average.
    assert all(average == f"{label} average" for label, average in calls)
    turns = [label for i, (label, _) in enumerate(calls) if i % 3 == 0]
    # Round 1 starts with the first solver, round 2 with the second, round 3 with the
    # third; OpenSpiel, slow to evaluate, takes its one turn in round 1 only.
    assert turns == ["jaxsolve", "noregret", "openspiel", "noregret", "jaxsolve",
                     "jaxsolve", "noregret"]
    assert [len(times[label]) for label in solvers] == [6, 6, 2]
    assert all(t >= 0 for ts in times.values() for t in ts)


def test_a_tiny_run_skips_missing_peers_and_agrees_with_openspiel(peers, tmp_path,
                                                                  monkeypatch):
    pytest.importorskip("pyspiel")
    for name in ("noregret", "LiteEFG"):  # absent here, whatever is installed
        monkeypatch.setitem(sys.modules, name, None)
    out = tmp_path / "peers.json"
    assert peers.main(["--games", "kuhn", "--rounds", "1", "--block-seconds", "0.01",
                       "--max-block", "50", "--eval-rounds", "1", "--eval-repeats", "1",
                       "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    (kuhn,) = report["games"]
    assert set(kuhn["skipped"]) == {"noregret", "liteefg"}
    assert all("not installed" in why for why in kuhn["skipped"].values())
    ours, theirs = kuhn["solvers"]["jaxsolve"], kuhn["solvers"]["openspiel"]
    # Both average their first three iterates of the same CFR+ (float32 against
    # float64); OpenSpiel's exploitability is computed by OpenSpiel.
    assert ours["check_exploitability"] == pytest.approx(theirs["check_exploitability"],
                                                         abs=1e-6)
    assert theirs["ratio"] > 0 and kuhn["bound_ms"] > 0
    assert kuhn["floor_ms"] > kuhn["leaf_sums_ms"] > 0
    assert "targets" not in report  # what was measured, no goals
