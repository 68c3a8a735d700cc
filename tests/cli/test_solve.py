"""`jaxsolve solve`: results that check out, checkpoints and resume (Ctrl-C included),
the sampling solvers, --final, bad input as one line, and games from the user's code."""

import json
import re
import sys

import jax
import numpy as np
import pytest

import jaxsolve
from jaxsolve import cli, games
from jaxsolve.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from jaxsolve.cli import solve as solve_command
from jaxsolve.cli._base import CLIError
from jaxsolve.cli._game_spec import parse_params
from cli_runs import assert_same_state, final_state, solve
from conftest import RUN, builtin_tree


KUHN_VALUE = -1 / 18  # player 0's value of 2-player Kuhn poker (Kuhn 1950)



@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """60 iterations of CFR+ on Kuhn in one go (eval every 2, the default for 60)."""
    out = tmp_path_factory.mktemp("straight")
    assert solve(out, "--iters", "60") == 0
    return out



def test_solve_writes_results_that_check_out(tmp_path, capsys):
    assert solve(tmp_path, "--iters", "2000") == 0
    printed = capsys.readouterr().out
    for name in (solve_command.STRATEGY, solve_command.CONVERGENCE, solve_command.PLOT, solve_command.CHECKPOINT):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (tmp_path / solve_command.PLOT).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The printed game value is Kuhn's published one.
    value = float(re.search(r"Value of this strategy: player 0 = ([-+]?\d+\.\d+)", printed).group(1))
    assert abs(value - KUHN_VALUE) < 2e-3
    assert "Exploitability:" in printed and "p0 card=0 history=" in printed

    # The saved table is the policy whose exploitability the file reports.
    result = json.loads((tmp_path / solve_command.STRATEGY).read_text())
    assert (result["game"], result["algo"], result["iterations"]) == ("kuhn_poker", "cfr+", 2000)
    tree = builtin_tree("kuhn_poker")
    policy = jaxsolve.from_table(tree, result["strategy"], default="error")
    assert abs(float(jaxsolve.exploitability(tree, policy)) - result["exploitability"]) < 1e-6
    assert np.allclose(jaxsolve.policy_value(tree, policy), result["value"], atol=1e-6)

    # The device it ran on, with the summary and in the record.
    device = jax.devices()[0]
    assert (f"Solved on device {device} ({device.device_kind}) with JAX {jax.__version__}"
            in printed)
    assert result["device"] == f"{device} ({device.device_kind})"
    assert result["jax"] == jax.__version__

    history = json.loads((tmp_path / solve_command.CONVERGENCE).read_text())
    assert len(history) == 50 and history[-1]["iteration"] == 2000
    assert history[-1]["exploitability"] == pytest.approx(result["exploitability"], abs=1e-9)
    assert all(set(r) == {"iteration", "exploitability", "seconds"} for r in history)



def test_resume_ends_exactly_where_an_uninterrupted_run_ends(tmp_path, uninterrupted):
    assert solve(tmp_path, "--iters", "30") == 0  # chunks of 1 ...
    assert solve(tmp_path, "--iters", "60", "--resume") == 0  # ... then chunks of 2
    assert_same_state(final_state(tmp_path), final_state(uninterrupted))
    iterations = [r["iteration"] for r in json.loads((tmp_path / solve_command.CONVERGENCE).read_text())]
    assert iterations == list(range(1, 31)) + list(range(32, 61, 2))



def test_ctrl_c_saves_and_resumes_to_the_same_result(tmp_path, uninterrupted, monkeypatch,
                                                     capsys):
    real, calls = solve_command._run_chunk, []

    def interrupted_once(*args):
        calls.append(args[-1])
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(solve_command, "_run_chunk", interrupted_once)
    assert solve(tmp_path, "--iters", "60") == 130
    err = capsys.readouterr().err
    assert "Interrupted at iteration 6" in err and "--resume" in err
    state, meta = load_checkpoint(tmp_path / solve_command.CHECKPOINT)
    assert int(state.iteration) == meta["iteration"] == 6
    assert not (tmp_path / solve_command.STRATEGY).exists()

    assert solve(tmp_path, "--iters", "60", "--resume") == 0
    assert_same_state(final_state(tmp_path), final_state(uninterrupted))
    straight = json.loads((uninterrupted / solve_command.CONVERGENCE).read_text())
    resumed = json.loads((tmp_path / solve_command.CONVERGENCE).read_text())
    assert ([(r["iteration"], r["exploitability"]) for r in resumed]
            == [(r["iteration"], r["exploitability"]) for r in straight])



def test_chunks_of_any_size_share_one_compilation(tmp_path):
    solve(tmp_path / "a", "--iters", "7", "--eval-every", "3")  # compiled (and warm)
    before = solve_command._run_jit._cache_size()
    assert solve(tmp_path / "b", "--iters", "11", "--eval-every", "4") == 0  # 4, 4, 3
    assert solve_command._run_jit._cache_size() == before



def test_checkpoint_round_trip_is_bit_exact(tmp_path):
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.cfr_plus()
    state = jaxsolve.run(solver, tree, solver.init(tree), 5)
    meta = {"game": "kuhn_poker", "convergence": [{"iteration": 5}]}
    save_checkpoint(tmp_path / "c.npz", state, meta)
    loaded, loaded_meta = load_checkpoint(tmp_path / "c.npz")
    assert_same_state(loaded, jax_to_numpy(state))
    assert loaded_meta["convergence"] == meta["convergence"]
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]  # no temporary left over
    (tmp_path / "plain.txt").write_text("")  # a checkpoint is as readable as any file
    assert ((tmp_path / "c.npz").stat().st_mode & 0o777
            == (tmp_path / "plain.txt").stat().st_mode & 0o777)



def jax_to_numpy(state):
    return type(state)(*(np.asarray(x) for x in state))



def test_a_checkpoint_no_solver_writes_is_refused_or_named(tmp_path):
    """Values a solver never writes are refused at load (a resumed run would spread
    them silently: NaN policies, negative weights); a field of another precision is
    named by run, not left to fail deep inside the compiled loop."""
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.cfr_plus()
    state = jax_to_numpy(RUN(solver, tree, solver.init(tree), 5))
    for name, change, says in [
            ("nan", {"average": np.full_like(state.average, np.nan)},
             "average holds 24 NaN or infinite values"),
            ("inf", {"regrets": np.where(np.arange(24).reshape(12, 2) == 3, np.inf,
                                         state.regrets)}, "regrets holds 1 NaN or infinite value;"),
            ("negative", {"iteration": np.array(-5, np.int32)}, "iteration is -5"),
            # a resumed run would end only to fail in the policy table
            ("negative_average", {"average": -np.abs(np.asarray(state.average)) - 1.0},
             "average holds a negative value"),
            ("negative_weight", {"total_weight": np.array(-2.0, state.total_weight.dtype)},
             "total_weight holds a negative value"),
            # every later averaging weight would be 0: an average that stops
            ("zero_scale", {"weight_scale": np.array(0.0, state.weight_scale.dtype)},
             "weight_scale is 0; a solver keeps it a positive power of two")]:
        save_checkpoint(tmp_path / f"{name}.npz", state._replace(**change), {})
        with pytest.raises(CheckpointError, match=re.escape(says)):
            load_checkpoint(tmp_path / f"{name}.npz")
    mixed = state._replace(regrets=state.regrets.astype(np.float16))
    with pytest.raises(jaxsolve.ArgumentTypeError, match=re.escape(
            "run: the state's arrays must share one float dtype, got regrets float16, "
            f"average {np.dtype(state.average.dtype)}")):
        jaxsolve.run(solver, tree, mixed, 1)



def test_a_parameter_given_twice_is_refused_unless_equal(tmp_path, capsys):
    # Neither wins silently.
    assert parse_params(["players=3", "players=3"]) == {"players": 3}
    assert solve(tmp_path, "--param", "players=3", "--param", "players=4") == cli.EXIT_USAGE
    assert "--param players is given twice ('3' and '4'); give it once" in capsys.readouterr().err



def test_counts_in_a_floats_notation_are_taken_when_whole(tmp_path, capsys):
    assert solve(tmp_path, "--iters", "1e1", "--eval-every", "5.0") == 0
    assert json.loads((tmp_path / solve_command.STRATEGY).read_text())["iterations"] == 10
    for text, says in (("1.5", "expected an integer, got '1.5'"),
                       ("inf", "expected an integer, got 'inf'"),
                       ("1e10", "must be an integer from 1 to 2^31 - 1, got 1e10")):
        assert solve(tmp_path, "--iters", text) == cli.EXIT_USAGE
        assert says in capsys.readouterr().err



def test_max_nodes_stops_a_too_large_game_before_its_walk_ends(tmp_path, capsys):
    """Kuhn with 10 players has more than 40 million histories, a walk of many minutes;
    --max-nodes refuses it in seconds, and the refusal names the option."""
    assert solve(tmp_path, "--param", "players=10", "--max-nodes", "5000") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "more than max_nodes=5,000 histories" in err and "--max-nodes" in err
    assert cli.main(["sweep", "kuhn_poker", "--vary", "players=[2, 10]", "--max-nodes",
                     "5000", "--quiet", "--out", str(tmp_path / "s")]) == cli.EXIT_USAGE
    assert "at players=10: the game has more than max_nodes=5,000" in capsys.readouterr().err



def test_the_table_keeps_one_row_per_infoset_whose_name_has_line_breaks():
    """OpenSpiel's goofspiel names an infoset with five lines; printed as they are,
    they would break the table into unaligned fragments."""
    strategy = {"Current player: 0\nP0 hand: 1 2 \nPoints: 0 0\n": {"Bid: 1": 0.25, "Bid: 2": 0.75},
                "short": {"a\nb": 1.0}}
    lines = solve_command.format_table(strategy).splitlines()
    joined = "Current player: 0 | P0 hand: 1 2 | Points: 0 0"
    assert lines == [f"  {joined}  Bid: 1: 0.2500  Bid: 2: 0.7500",
                     f"  {'short'.ljust(len(joined))}  a | b:  1.0000"]



def test_parse_params():
    assert parse_params(["players=3", "p=0.5", "flag=true", "xs=[1, 2]", "name=abc"]) == {
        "players": 3, "p": 0.5, "flag": True, "xs": [1, 2], "name": "abc"}
    # The form `jaxsolve games` prints defaults in, and Python's lists, parse too.
    assert parse_params(["situation_probs=(0.3, 0.7)", "d=((0, 1), (1, 0))", "s=['a']"]) == {
        "situation_probs": (0.3, 0.7), "d": ((0, 1), (1, 0)), "s": ["a"]}
    with pytest.raises(CLIError, match=r"--param value '\(1, \{2' is not a list or tuple"):
        parse_params(["x=(1, {2"])
    with pytest.raises(CLIError, match="is a int; expected a list or tuple"):
        parse_params(["x=(3)"])
    # OpenSpiel's own list syntax is passed on as written, not refused as no list.
    assert parse_params(["ship_sizes=[1;2]"]) == {"ship_sizes": "[1;2]"}



def test_a_tuple_parameter_solves_the_game_it_names(tmp_path):
    """maneuver_detection at situation_probs=(0.3, 0.7), typed as `jaxsolve games` prints
    defaults, is the game games.load builds with that tuple: same value after the same
    50 CFR+ iterations."""
    out = tmp_path / "md"
    assert cli.main(["solve", "maneuver_detection", "--param", "situation_probs=(0.3, 0.7)",
                     "--iters", "50", "--out", str(out), "--quiet"]) == 0
    saved = json.loads((out / "strategy.json").read_text())
    tree = jaxsolve.compile_game(games.load("maneuver_detection", situation_probs=(0.3, 0.7)))
    solver = jaxsolve.cfr_plus()
    state = jax.jit(jaxsolve.run, static_argnums=0)(solver, tree, solver.init(tree), 50)
    value = jaxsolve.policy_value(tree, jaxsolve.average_policy(tree, state))
    np.testing.assert_allclose(saved["value"], value, rtol=1e-6)
    assert saved["params"] == {"situation_probs": [0.3, 0.7]}
    # ... and that game's value is the independent sequence-form LP's, within NashConv.
    try:  # tests/ is on sys.path when it is not a package (pytest's default rootdir mode)
        from reference.sequence_form_lp import solve_zero_sum
    except ImportError:  # pragma: no cover
        from tests.reference.sequence_form_lp import solve_zero_sum  # type: ignore
    lp = solve_zero_sum(games.load("maneuver_detection", situation_probs=(0.3, 0.7))).value
    assert abs(saved["value"][0] - lp) <= 2 * saved["exploitability"] + 1e-6



@pytest.fixture
def bad_npz(tmp_path):
    path = tmp_path / "broken.npz"
    path.write_bytes(b"not a zip file")
    return path



@pytest.mark.parametrize("argv, says", [
    (["solve", "no_such_game"], "known games: "),
    (["solve", "kuhn_pokr"], "unknown game 'kuhn_pokr' (did you mean 'kuhn_poker'"),
    (["solve", "kuhn_poker", "--param", "players=1"], "players"),
    (["solve", "kuhn_poker", "--param", "colour=red"], "no parameter 'colour'"),
    (["solve", "kuhn_poker", "--param", "players"], "expected key=value"),
    (["solve", "BROKEN"], "broken.npz"),
    (["solve", "kuhn_poker", "--out", "EMPTY", "--resume"], "cannot --resume"),
    (["solve", "kuhn_poker", "--iters", "0"], "--iters"),
    (["solve", "kuhn_poker", "--algo", "sgd"], "--algo"),
    (["solve", "kuhn_poker", "--tau", "0.1"], "--tau applies to --final threshold only"),
    (["solve", "kuhn_poker", "--final", "threshold", "--tau", "1"], "--tau"),
    (["solve", "kuhn_poker", "--final", "mode"], "--final"),
    (["solve", "kuhn_poker", "--algo", "mmd", "--final", "average"],
     "--algo mmd keeps none: its current policy converges"),
    (["solve", "kuhn_poker", "--algo", "os-mccfr", "--batch", "0"], "--batch"),
    (["solve", "kuhn_poker", "--algo", "es-mccfr", "--seed", "-1"], "--seed"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_code_2(argv, says, bad_npz, tmp_path, capsys):
    argv = [str(bad_npz) if a == "BROKEN" else str(tmp_path / "empty") if a == "EMPTY" else a
            for a in argv]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    line = captured.err.strip()
    assert "\n" not in line and line.startswith("jaxsolve: error: ") and says in line, line
    assert "Traceback" not in captured.err + captured.out



def test_resume_refuses_another_runs_checkpoint(tmp_path, uninterrupted, capsys):
    assert solve(uninterrupted, "--iters", "60", "--algo", "dcfr", "--resume") == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "algo 'cfr+', not 'dcfr'" in line
    assert solve(uninterrupted, "--iters", "60", "--param", "players=3", "--resume") == 2
    assert "params" in capsys.readouterr().err



def test_unknown_openspiel_game_is_one_line(capsys):
    pytest.importorskip("pyspiel")
    assert cli.main(["solve", "openspiel:no_such_game"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "no_such_game" in line
    # A C++ refusal other than SpielError (nfg_game without its file: map::at) is one
    # line too, not a traceback.
    assert cli.main(["solve", "openspiel:nfg_game"]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "OpenSpiel cannot load 'nfg_game': IndexError" in line



# ---------------------------------------------------------------- sampling solvers
def strategy_of(out):
    return json.loads((out / solve_command.STRATEGY).read_text())



def test_sampling_solver_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "os"
    assert solve(out, "--algo", "os-mccfr", "--batch", "64", "--seed", "3", "--iter", "50") == 0
    printed = capsys.readouterr().out
    assert "Histories touched:" in printed and "64 samples per player" in printed
    result = strategy_of(out)
    assert {k: result[k] for k in ("algo", "batch", "seed", "iterations", "final")} == {
        "algo": "os-mccfr", "batch": 64, "seed": 3, "iterations": 50, "final": "average"}
    assert "average_exploitability" not in result  # the final policy is the average

    # The reported exploitability is that of the written table, which is the
    # checkpointed state's average policy; its key is the one 50 steps advanced.
    tree = builtin_tree("kuhn_poker")
    state, meta = load_checkpoint(out / solve_command.CHECKPOINT)
    assert type(state) is jaxsolve.MCCFRState and state.key.dtype == np.uint32
    assert (meta["batch"], meta["seed"], int(state.iteration)) == (64, 3, 50)
    assert result["histories_touched"] == float(jaxsolve.sampling.histories_touched(state)) > 0
    policy = jaxsolve.from_table(tree, result["strategy"], default="error")
    np.testing.assert_allclose(policy, jaxsolve.average_policy(tree, state), atol=1e-12)
    assert float(jaxsolve.exploitability(tree, policy)) == pytest.approx(
        result["exploitability"], abs=1e-9)
    assert 0 < result["exploitability"] < 0.5

    history = json.loads((out / solve_command.CONVERGENCE).read_text())
    assert [r["iteration"] for r in history] == list(range(1, 51))
    touched = [r["touched"] for r in history]
    assert touched == sorted(touched) and touched[-1] == result["histories_touched"]
    assert (out / solve_command.PLOT).read_bytes()[:4] == b"\x89PNG"



ES = ("--algo", "es-mccfr", "--batch", "16", "--seed", "5")



@pytest.fixture(scope="module")
def es_straight(tmp_path_factory):
    """60 iterations of ES-MCCFR on Kuhn in one go (eval every 2, the default for 60)."""
    out = tmp_path_factory.mktemp("es_straight")
    assert solve(out, *ES, "--iters", "60") == 0
    return out



def test_sampling_resume_is_bit_exact(tmp_path, es_straight):
    assert solve(tmp_path, *ES, "--iters", "30") == 0  # chunks of 1 ...
    assert solve(tmp_path, *ES, "--iters", "60", "--resume") == 0  # ... then chunks of 2
    assert_same_state(final_state(tmp_path), final_state(es_straight))
    assert strategy_of(tmp_path)["strategy"] == strategy_of(es_straight)["strategy"]
    iterations = [r["iteration"] for r in json.loads((tmp_path / solve_command.CONVERGENCE).read_text())]
    assert iterations == list(range(1, 31)) + list(range(32, 61, 2))



def test_sampling_resume_refuses_another_seed_or_batch(es_straight, capsys):
    algo = ES[:2]
    for other, says in [(("--batch", "16", "--seed", "6"), "seed 5, not 6"),
                        (("--batch", "32", "--seed", "5"), "batch 16, not 32"),
                        (("--seed", "5"), "batch 16, not 256")]:
        assert solve(es_straight, *algo, *other, "--iters", "60", "--resume") == 2
        line = capsys.readouterr().err.strip()
        assert "\n" not in line and says in line, line
    assert solve(es_straight, "--algo", "os-mccfr", "--batch", "16", "--seed", "5",
                 "--iters", "60", "--resume") == 2
    assert "algo 'es-mccfr', not 'os-mccfr'" in capsys.readouterr().err



def test_seeds_decide_the_sampling_run(tmp_path):
    def strategy(name, seed):
        assert solve(tmp_path / name, *ES[:4], "--seed", str(seed), "--iters", "10",
                     "--eval-every", "10") == 0
        return strategy_of(tmp_path / name)["strategy"]

    first, again, other = strategy("a", 1), strategy("b", 1), strategy("c", 2)
    assert first == again
    assert first != other



def test_batch_and_seed_are_ignored_with_a_note_for_full_width_solvers(tmp_path, capsys):
    assert solve(tmp_path, "--iters", "3", "--batch", "8", "--seed", "1") == 0
    err = capsys.readouterr().err
    assert "note: --batch and --seed only apply to the sampling solvers" in err
    assert type(final_state(tmp_path)) is jaxsolve.CFRState
    assert "batch" not in strategy_of(tmp_path) and "seed" not in strategy_of(tmp_path)



# ---------------------------------------------------------------- final strategies
def test_final_purify_writes_a_pure_strategy(tmp_path, capsys):
    assert solve(tmp_path, "--iters", "20", "--final", "purify") == 0
    assert "purified average policy" in capsys.readouterr().out
    result = strategy_of(tmp_path)
    assert result["final"] == "purify" and "tau" not in result
    assert all(sorted(row.values()) == [0.0, 1.0] for row in result["strategy"].values())

    tree = builtin_tree("kuhn_poker")
    state = final_state(tmp_path)
    policy = jaxsolve.from_table(tree, result["strategy"], default="error")
    np.testing.assert_array_equal(
        policy, jaxsolve.purify(tree, jaxsolve.average_policy(tree, state)))
    assert float(jaxsolve.exploitability(tree, policy)) == pytest.approx(
        result["exploitability"], abs=1e-9)
    average = float(jaxsolve.exploitability(tree, jaxsolve.average_policy(tree, state)))
    assert result["average_exploitability"] == pytest.approx(average, abs=1e-9)
    # The convergence record still tracks the average policy.
    history = json.loads((tmp_path / solve_command.CONVERGENCE).read_text())
    assert history[-1]["exploitability"] == pytest.approx(average, abs=1e-9)



def test_final_threshold_defaults_tau_and_current_is_the_last_iterate(tmp_path):
    assert solve(tmp_path / "t", "--iters", "20", "--final", "threshold") == 0
    result = strategy_of(tmp_path / "t")
    assert (result["final"], result["tau"]) == ("threshold", solve_command.DEFAULT_TAU)
    assert all(p == 0 or p >= solve_command.DEFAULT_TAU for row in result["strategy"].values()
               for p in row.values())

    tree = builtin_tree("kuhn_poker")
    assert solve(tmp_path / "c", "--iters", "20", "--final", "current") == 0
    state = final_state(tmp_path / "c")
    policy = jaxsolve.from_table(tree, strategy_of(tmp_path / "c")["strategy"])
    np.testing.assert_allclose(policy, jaxsolve.current_policy(tree, state), atol=1e-12)



def test_mmd_reports_and_resumes_its_current_policy(tmp_path, capsys):
    """A last-iterate solver: the record, the target and the final strategy are its
    current policy's; its MMDState checkpoints and resumes like any state."""
    assert solve(tmp_path, "--algo", "mmd", "--iters", "20") == 0
    assert solve(tmp_path, "--algo", "mmd", "--iters", "40", "--target", "1e-9",
                 "--resume") == 0
    printed = capsys.readouterr().out
    assert "Strategy (current policy (last iterate) of mmd after 40 iterations)" in printed
    assert "Target NOT reached: the current policy's exploitability" in printed
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.mmd()
    state = final_state(tmp_path)
    assert_same_state(state, RUN(solver, tree, solver.init(tree), 40))
    result = strategy_of(tmp_path)
    assert result["final"] == "current" and "average_exploitability" not in result
    policy = jaxsolve.from_table(tree, result["strategy"], default="error")
    np.testing.assert_allclose(policy, state.policy, atol=1e-6)
    expl = float(jaxsolve.exploitability(tree, jaxsolve.current_policy(tree, state)))
    history = json.loads((tmp_path / solve_command.CONVERGENCE).read_text())
    assert history[-1]["iteration"] == 40
    assert history[-1]["exploitability"] == pytest.approx(expl, abs=1e-6)
    assert result["exploitability"] == pytest.approx(expl, abs=1e-6)



# ---------------------------------------------------------------- checkpoints
def test_sampling_checkpoint_round_trip_keeps_types_dtypes_and_shapes(tmp_path):
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.external_sampling(batch_size=16)  # the CLI's, so compiled already
    state = solve_command._run_jit(solver, tree, solver.init(tree, jax.random.PRNGKey(7)), 3)
    save_checkpoint(tmp_path / "m.npz", state, {"note": "es"})
    loaded, meta = load_checkpoint(tmp_path / "m.npz")
    assert type(loaded) is jaxsolve.MCCFRState and meta["note"] == "es"
    for field, a, b in zip(loaded._fields, loaded, jax.device_get(state)):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), field
    assert loaded.frontier.shape == state.frontier.shape and loaded.expand.dtype == bool
    # An explicit type must fit the saved fields.
    loaded, _ = load_checkpoint(tmp_path / "m.npz", state_type=jaxsolve.MCCFRState)
    assert type(loaded) is jaxsolve.MCCFRState
    with pytest.raises(CheckpointError, match="do not fit CFRState"):
        load_checkpoint(tmp_path / "m.npz", state_type=jaxsolve.CFRState)
    with pytest.raises(TypeError, match="NamedTuple"):
        save_checkpoint(tmp_path / "x.npz", tuple(state), {})



def write_format_1(path, state, meta):
    """A checkpoint as the first jaxsolve wrote it: CFRState's arrays, no type record."""
    record = json.dumps({**meta, "format_version": 1})
    np.savez(path, __meta__=np.array(record),
             **{f: np.asarray(x) for f, x in zip(jaxsolve.CFRState._fields, state)})



def test_old_cfr_checkpoints_load_and_resume(tmp_path, uninterrupted):
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.cfr_plus()
    state = solve_command._run_jit(solver, tree, solver.init(tree), 5)
    write_format_1(tmp_path / "old.npz", state, {"game": "kuhn_poker"})
    loaded, meta = load_checkpoint(tmp_path / "old.npz")
    assert type(loaded) is jaxsolve.CFRState and meta["format_version"] == 1
    assert_same_state(loaded, jax_to_numpy(state))

    # A run checkpointed by the old code resumes to the uninterrupted result.
    assert solve(tmp_path / "run", "--iters", "30") == 0
    ckpt = tmp_path / "run" / solve_command.CHECKPOINT
    saved, meta = load_checkpoint(ckpt)
    write_format_1(ckpt, saved, meta)
    assert solve(tmp_path / "run", "--iters", "60", "--resume") == 0
    assert_same_state(final_state(tmp_path / "run"), final_state(uninterrupted))



# ------------------------------------------------- games in the user's own code, GAME order
# A 2x2 zero-sum game written as a user would, in a file: player 0 picks heads or tails,
# player 1 picks without seeing it; player 0 wins `stake` on heads-heads, 1 on
# tails-tails, and loses 1 on a mismatch. No saddle point, so the value is
# (ad - bc) / (a + d - b - c) = (stake - 1) / (stake + 3): 1/3 at stake 3 (by hand).
USER_GAME = '''
from toy_games import SpecGame, decision, leaf

def make(stake=1.0):
    column = lambda a, b: decision(1, "p1", leaf(a, -a), leaf(b, -b))
    return SpecGame(decision(0, "p0", column(stake, -1), column(-1, 1)))

GAME = make()
'''



def test_solve_and_check_take_a_game_from_the_users_own_file(tmp_path, capsys):
    path = tmp_path / "my_game.py"
    path.write_text(USER_GAME)
    out = tmp_path / "run"
    # GAME after --param (argparse's --param takes one or more values) is taken back.
    assert cli.main(["solve", "--param", "stake=3", f"{path}:make", "--iters", "2000",
                     "--out", str(out), "--quiet"]) == 0
    result = json.loads((out / solve_command.STRATEGY).read_text())
    assert result["value"][0] == pytest.approx(1 / 3, abs=1e-3)
    assert result["params"] == {"stake": 3}
    # A game object, and an importable module (tests/ is on sys.path under pytest).
    assert cli.main(["solve", f"{path}:GAME", "--iters", "2000", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / solve_command.STRATEGY).read_text())["value"][0] == pytest.approx(0, abs=1e-3)
    err = capsys.readouterr().err  # same --out, no --resume, another game: no resuming it
    assert f"replacing the run in {out} ({path}:make, cfr+, {{'stake': 3}}, at iteration 2000)" in err
    assert "--resume" not in err
    assert cli.main(["check", "toy_games:matching_pennies", "--playouts", "5"]) == 0
    assert "PASS" in capsys.readouterr().out



def test_resume_refuses_a_game_whose_payoffs_were_edited(tmp_path, capsys):
    """The same file, names and parameters, but the code now pays another stake: a
    resume would continue the old regrets on a new game."""
    path, out = tmp_path / "my_game.py", tmp_path / "run"
    path.write_text(USER_GAME)
    assert cli.main(["solve", f"{path}:GAME", "--iters", "20", "--out", str(out),
                     "--quiet"]) == 0
    path.write_text(USER_GAME.replace("GAME = make()", "GAME = make(stake=2.0)"))
    assert cli.main(["solve", f"{path}:GAME", "--iters", "40", "--out", str(out), "--quiet",
                     "--resume"]) == cli.EXIT_USAGE
    assert "its payoffs or chance probabilities differ" in capsys.readouterr().err



@pytest.mark.parametrize("spec, argv, message", [
    ("{dir}/none.py:make", [], "{dir}/none.py:make: no file {dir}/none.py"),
    ("{dir}/my_game.py:Make", [], "my_game.py has no 'Make' (it defines make)"),
    ("{dir}/my_game.py:GAME", ["--param", "stake=2"],
     "GAME is a game object; --param needs a class or function to call"),
    ("{dir}/my_game.py:make", ["--param", "stakes=2"],
     "make(stakes=2) failed: TypeError: "),
    ("{dir}/broken.py:make", [], "importing {dir}/broken.py failed: NameError: "),
    ("no_such_module_here:make", [], "no_such_module_here:make: no module "
                                     "'no_such_module_here' in the current folder"),
    ("os:getcwd", [], "os:getcwd: getcwd() returned a str, not a game"),
    ("os:sep", [], "os:sep: sep is a str, not a game"),
    # Without :NAME the file is not read as a saved tree ("not an .npz file").
    ("{dir}/my_game.py", [], "{dir}/my_game.py is a Python file: name the game in it after "
                             "a colon, {dir}/my_game.py:NAME"),
])
def test_a_bad_game_in_the_users_code_is_one_line(tmp_path, capsys, spec, argv, message):
    (tmp_path / "my_game.py").write_text(USER_GAME)
    (tmp_path / "broken.py").write_text("x = undefined_name\n")
    spec, message = spec.format(dir=tmp_path), message.format(dir=tmp_path)
    assert cli.main(["solve", spec, *argv, "--out", str(tmp_path / "run")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("jaxsolve: error: ") and message in err and err.count("\n") == 1



def test_a_module_in_the_current_folder_is_found_as_python_dash_m_finds_it(
        tmp_path, capsys, monkeypatch):
    """`module:NAME` for a module in the current folder said "No module named ...",
    where `FILE.py:NAME` worked: the current folder is searched first, for that
    import only. A module found nowhere names the form that works."""
    (tmp_path / "game_in_this_folder.py").write_text(USER_GAME)
    monkeypatch.chdir(tmp_path)
    path = list(sys.path)
    try:
        assert cli.main(["solve", "game_in_this_folder:make", "--param", "stake=3", "--iters",
                         "200", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    finally:
        sys.modules.pop("game_in_this_folder", None)
    assert sys.path == path  # as it was: the folder was searched for that import only
    result = json.loads((tmp_path / "run" / solve_command.STRATEGY).read_text())
    assert result["value"][0] == pytest.approx(1 / 3, abs=1e-2)
    assert cli.main(["check", "not_in_this_folder:make"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert (f"no module 'not_in_this_folder' in the current folder ({tmp_path}) or on "
            "Python's path; for a file elsewhere give its path, e.g. "
            "path/to/not_in_this_folder.py:make") in err


ENDLESS_GAME = '''
from jaxsolve.protocol import TERMINAL

class State:
    def __init__(self, moves=0):
        self.moves = moves
    def current_player(self):
        return self.moves % 2
    def is_terminal(self):
        return False
    def legal_actions(self, player=None):
        return [0, 1]
    def child(self, action):
        return State(self.moves + 1)
    def returns(self):
        return [0.0, 0.0]
    def information_state_string(self, player):
        return str(self.moves)

class Endless:
    def num_players(self):
        return 2
    def new_initial_state(self):
        return State()
'''


def test_max_depth_is_an_option_of_every_command_that_walks_a_game(tmp_path, capsys):
    """An endless game was told to "pass a larger max_depth", which the command line
    had no option for; `check` uses the same bound and finds the game as `solve` does."""
    path = tmp_path / "endless.py"
    path.write_text(ENDLESS_GAME)
    assert solve(tmp_path / "run", "--max-depth", "40", game=f"{path}:Endless") == 2
    err = capsys.readouterr().err
    assert "history of length 40 with no terminal state (max_depth=40)" in err
    assert "pass a larger max_depth (on the command line, --max-depth)" in err
    assert cli.main(["check", f"{path}:Endless", "--max-depth", "40"]) == 1
    printed = capsys.readouterr().out
    assert "FAIL playouts_finish: history of length 40 with no terminal state" in printed
    assert "--max-depth" in printed
    assert cli.main(["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--max-depth", "3",
                     "--out", str(tmp_path / "sweep"), "--quiet"]) == 2
    assert "(max_depth=3)" in capsys.readouterr().err


def test_a_python_file_without_its_games_name_is_named_by_check_and_sweep(tmp_path, capsys):
    """check told the user to solve the file instead, and sweep called it a saved tree."""
    path = tmp_path / "my_game.py"
    path.write_text(USER_GAME)
    for argv in (["check", str(path)], ["sweep", str(path), "--vary", "stake=1:2:2"]):
        assert cli.main(argv) == cli.EXIT_USAGE
        assert f"{path} is a Python file: name the game in it after a colon" in \
            capsys.readouterr().err



# ------------------------------------------------- output that cannot be written, damage
def _damage_member(path, member):
    """Flips one byte of `member`'s stored data inside the .npz at `path` (its CRC then
    fails when the member is read; the archive itself still opens)."""
    import zipfile  # noqa: PLC0415
    info = zipfile.ZipFile(path).getinfo(member)
    data = bytearray(path.read_bytes())
    name_len, extra_len = (int.from_bytes(data[info.header_offset + k:info.header_offset + k + 2],
                                          "little") for k in (26, 28))
    data[info.header_offset + 30 + name_len + extra_len + info.compress_size // 2] ^= 0xFF
    path.write_bytes(data)



def test_a_damaged_checkpoint_member_is_named_not_a_traceback(tmp_path, capsys):
    # A flipped byte in regrets.npy is named, not a zipfile.BadZipFile (Bad CRC-32),
    # even without --resume, where the note about the run being replaced reads it.
    out = tmp_path / "run"
    assert solve(out, "--iters", "4") == 0
    _damage_member(out / solve_command.CHECKPOINT, "regrets.npy")
    capsys.readouterr()
    assert solve(out, "--iters", "8", "--resume") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot --resume: " in err
    assert "checkpoint.npz: array 'regrets' cannot be read (Bad CRC-32" in err
    assert solve(out, "--iters", "8") == 0  # starting over replaces it, and says so
    assert "replacing the unreadable checkpoint in" in capsys.readouterr().err



def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys,
                                                                     monkeypatch):
    (tmp_path / "run" / solve_command.CHECKPOINT).mkdir(parents=True)
    assert solve(tmp_path / "run", "--iters", "4") == cli.EXIT_USAGE
    assert "checkpoint.npz is a folder" in capsys.readouterr().err
    import tempfile  # noqa: PLC0415

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)  # as a read-only folder does
    assert solve(tmp_path / "other", "--iters", "4") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write to --out {tmp_path / 'other'}" in err
    assert cli.main(["pursuit", "train", "--checkpoint", str(tmp_path / "az.npz")]) == cli.EXIT_USAGE
    assert f"cannot write to --checkpoint folder {tmp_path}: " in capsys.readouterr().err



def test_a_users_script_that_exits_or_parses_arguments_at_import(tmp_path, capsys):
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nfrom toy_games import matching_pennies\nsys.exit(3)\n")
    assert cli.main(["solve", f"{exits}:matching_pennies", "--out", str(tmp_path / "a")]) \
        == cli.EXIT_USAGE
    assert "exited (SystemExit: 3); guard its script part" in capsys.readouterr().err
    # A script that parses its arguments at import sees none of jaxsolve's (its parser
    # takes no arguments, so --param and the rest would make it exit)...
    parses = tmp_path / "parses.py"
    parses.write_text(USER_GAME + "import argparse\nargparse.ArgumentParser().parse_args()\n")
    assert cli.main(["solve", "--param", "stake=3", f"{parses}:make", "--iters", "2000",
                     "--quiet", "--out", str(tmp_path / "b")]) == 0
    # ...and its game, with the parameter, is solved: worth 1/3 at stake 3 by the hand
    # formula above USER_GAME, where the uniform starting policy is worth
    # (3 - 1 - 1 + 1) / 4 = 1/2, so a run that never left it would fail.
    result = json.loads((tmp_path / "b" / solve_command.STRATEGY).read_text())
    assert result["params"] == {"stake": 3}
    assert result["value"][0] == pytest.approx(1 / 3, abs=1e-3)



def test_a_hand_edited_run_record_is_refused_on_resume(tmp_path, capsys):
    # A string iteration is named, not a TypeError, and a convergence entry without
    # "seconds" not a KeyError.
    out = tmp_path / "run"
    assert solve(out, "--iters", "4") == 0
    state, meta = load_checkpoint(out / solve_command.CHECKPOINT)
    for damaged in ({**meta, "iteration": "4"}, {**meta, "convergence": [{"iteration": 4}]}):
        save_checkpoint(out / solve_command.CHECKPOINT, state, damaged)
        capsys.readouterr()
        assert solve(out, "--iters", "8", "--resume") == cli.EXIT_USAGE
        assert "its run record is damaged" in capsys.readouterr().err

