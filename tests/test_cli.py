"""The `jaxsolve` command line, run in-process through `main([...])`."""

import json
import re
import sys

import jax
import numpy as np
import pytest

import jaxsolve
from jaxsolve import cli, games
from jaxsolve.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from conftest import RUN, builtin_tree

KUHN_VALUE = -1 / 18  # player 0's value of 2-player Kuhn poker (Kuhn 1950)


def solve(out, *extra, game="kuhn_poker"):
    return cli.main(["solve", game, "--out", str(out), "--quiet", *extra])


def final_state(out):
    state, _ = load_checkpoint(out / cli.CHECKPOINT)
    return state


def assert_same_state(a, b):
    assert type(a) is type(b)
    for field in type(a)._fields:
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and np.array_equal(x, y), field


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """60 iterations of CFR+ on Kuhn in one go (eval every 2, the default for 60)."""
    out = tmp_path_factory.mktemp("straight")
    assert solve(out, "--iters", "60") == 0
    return out


def test_solve_writes_results_that_check_out(tmp_path, capsys):
    assert solve(tmp_path, "--iters", "2000") == 0
    printed = capsys.readouterr().out
    for name in (cli.STRATEGY, cli.CONVERGENCE, cli.PLOT, cli.CHECKPOINT):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (tmp_path / cli.PLOT).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The printed game value is Kuhn's published one.
    value = float(re.search(r"Value of this strategy: player 0 = ([-+]?\d+\.\d+)", printed).group(1))
    assert abs(value - KUHN_VALUE) < 2e-3
    assert "Exploitability:" in printed and "p0 card=0 history=" in printed

    # The saved table is the policy whose exploitability the file reports.
    result = json.loads((tmp_path / cli.STRATEGY).read_text())
    assert (result["game"], result["algo"], result["iterations"]) == ("kuhn_poker", "cfr+", 2000)
    tree = builtin_tree("kuhn_poker")
    policy = jaxsolve.from_table(tree, result["strategy"], default="error")
    assert abs(float(jaxsolve.exploitability(tree, policy)) - result["exploitability"]) < 1e-6
    assert np.allclose(jaxsolve.policy_value(tree, policy), result["value"], atol=1e-6)

    history = json.loads((tmp_path / cli.CONVERGENCE).read_text())
    assert len(history) == 50 and history[-1]["iteration"] == 2000
    assert history[-1]["exploitability"] == pytest.approx(result["exploitability"], abs=1e-9)
    assert all(set(r) == {"iteration", "exploitability", "seconds"} for r in history)


def test_resume_ends_exactly_where_an_uninterrupted_run_ends(tmp_path, uninterrupted):
    assert solve(tmp_path, "--iters", "30") == 0  # chunks of 1 ...
    assert solve(tmp_path, "--iters", "60", "--resume") == 0  # ... then chunks of 2
    assert_same_state(final_state(tmp_path), final_state(uninterrupted))
    iterations = [r["iteration"] for r in json.loads((tmp_path / cli.CONVERGENCE).read_text())]
    assert iterations == list(range(1, 31)) + list(range(32, 61, 2))


def test_ctrl_c_saves_and_resumes_to_the_same_result(tmp_path, uninterrupted, monkeypatch,
                                                     capsys):
    real, calls = cli._run_chunk, []

    def interrupted_once(*args):
        calls.append(args[-1])
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(cli, "_run_chunk", interrupted_once)
    assert solve(tmp_path, "--iters", "60") == 130
    err = capsys.readouterr().err
    assert "Interrupted at iteration 6" in err and "--resume" in err
    state, meta = load_checkpoint(tmp_path / cli.CHECKPOINT)
    assert int(state.iteration) == meta["iteration"] == 6
    assert not (tmp_path / cli.STRATEGY).exists()

    assert solve(tmp_path, "--iters", "60", "--resume") == 0
    assert_same_state(final_state(tmp_path), final_state(uninterrupted))
    straight = json.loads((uninterrupted / cli.CONVERGENCE).read_text())
    resumed = json.loads((tmp_path / cli.CONVERGENCE).read_text())
    assert ([(r["iteration"], r["exploitability"]) for r in resumed]
            == [(r["iteration"], r["exploitability"]) for r in straight])


def test_chunks_of_any_size_share_one_compilation(tmp_path):
    solve(tmp_path / "a", "--iters", "7", "--eval-every", "3")  # compiled (and warm)
    before = cli._run_jit._cache_size()
    assert solve(tmp_path / "b", "--iters", "11", "--eval-every", "4") == 0  # 4, 4, 3
    assert cli._run_jit._cache_size() == before


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


def test_a_sampling_checkpoint_of_the_scalar_touched_count_resumes(tmp_path):
    """Checkpoints in the older layout hold a scalar `touched` where the current one
    holds a compensated pair: load_checkpoint lays it out as (total, 0), and the run
    goes on as the same run would have."""
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.external_sampling(4)
    state = RUN(solver, tree, solver.init(tree, jax.random.PRNGKey(2)), 3)
    old = jax_to_numpy(state)._replace(touched=np.asarray(state.touched[0]))
    save_checkpoint(tmp_path / "old.npz", old, {})
    loaded, _ = load_checkpoint(tmp_path / "old.npz")
    np.testing.assert_array_equal(loaded.touched, [state.touched[0], 0.0])
    resumed = RUN(solver, tree, loaded, 2)
    straight = RUN(solver, tree, state, 2)
    np.testing.assert_array_equal(resumed.regrets, straight.regrets)
    assert float(jaxsolve.sampling.histories_touched(resumed)) == float(
        jaxsolve.sampling.histories_touched(straight))


def test_games_lists_the_builtin_games(capsys):
    assert cli.main(["games"]) == 0
    lines = capsys.readouterr().out.splitlines()
    kuhn = next(line for line in lines if line.startswith("kuhn_poker "))
    # Players, histories, infosets. By hand: the root deal, 3 cards for player 0 and
    # 6 ordered deals (chance nodes: 1 + 3 = 4, then 6 betting roots), and per deal 4
    # decision histories (-, p, b, pb) and 5 terminals (pp, pbp, pbb, bp, bb):
    # 1 + 3 + 6 x (4 + 5) = 58; 3 cards x 2 histories per player x 2 players = 12.
    assert kuhn.split()[1:4] == ["2", "58", "12"]
    assert "players=2" in kuhn
    # Leduc's 9,457 histories: pyspiel's own tree walked (test_games_poker).
    assert any(line.startswith("leduc_poker ") and "9,457" in line for line in lines)

    assert cli.main(["games", "--no-count"]) == 0
    listed = capsys.readouterr().out
    assert "kuhn_poker" in listed and "leduc_poker" in listed
    # maneuver_detection's tables are shortened in the listing, and it says where the
    # whole values are.
    assert "payoff_detected=((0.0, 0.9, 0.5, 0.3), (-..." in listed
    assert "`jaxsolve games NAME` shows them whole" in listed


def test_games_name_describes_one_game_in_full(capsys):
    assert cli.main(["games", "maneuver_detection"]) == 0
    shown = capsys.readouterr().out
    # The rules from the module's docstring, every default whole, and the sizes.
    assert shown.startswith("maneuver_detection\n") and "Rules" in shown
    defaults = games.parameters("maneuver_detection")
    for key, value in defaults.items():
        assert f"  {key} = {value!r}\n" in shown, key
    # The sizes line: Kuhn's 58 histories and 12 infosets, counted by hand above.
    assert cli.main(["games", "kuhn_poker"]) == 0
    assert "with these defaults: 2 players, 58 histories, 12 infosets (6/6 per player)" in (
        capsys.readouterr().out)
    assert cli.main(["games", "no_such_game"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "unknown game 'no_such_game'; known games: " in err and "kuhn_poker" in err


def test_games_name_describes_an_openspiel_game_from_its_registry(capsys):
    pytest.importorskip("pyspiel")
    assert cli.main(["games", "openspiel:kuhn_poker"]) == 0
    shown = capsys.readouterr().out
    assert "OpenSpiel's Kuhn Poker: 2-10 players, sequential" in shown
    assert "  players = 2\n" in shown
    # pyspiel's own tree walked: the same 58 histories as ours (counted by hand above).
    assert "2 players, 58 histories, 12 infosets" in shown
    assert cli.main(["games", "openspiel:no_such_game"]) == cli.EXIT_USAGE
    assert "OpenSpiel has no game 'no_such_game'" in capsys.readouterr().err
    # OpenSpiel's string form: its values replace the defaults. Three-player Kuhn has
    # 16 infosets per player by hand: 4 cards x the 4 betting sequences one can face.
    assert cli.main(["games", "openspiel:kuhn_poker(players=3)"]) == 0
    shown = capsys.readouterr().out
    assert "  players = 3\n" in shown and "48 infosets (16/16/16 per player)" in shown
    # A simultaneous game's values and kind are the game's, not the registry defaults
    # and the turn-based wrapper's own "game" parameter (goofspiel's imp_info=True
    # makes it imperfect information: OpenSpiel's own get_type says so).
    assert cli.main(["games", "openspiel:goofspiel(num_cards=3,imp_info=True)"]) == 0
    shown = capsys.readouterr().out
    assert "  num_cards = 3\n" in shown and "  imp_info = True\n" in shown
    assert "  game = " not in shown and "imperfect information" in shown
    assert "parameters (set with solve's or sweep's --param KEY=VALUE):" in shown


def test_a_parameter_given_twice_is_refused_unless_equal(tmp_path, capsys):
    # Neither wins silently.
    assert cli.parse_params(["players=3", "players=3"]) == {"players": 3}
    assert solve(tmp_path, "--param", "players=3", "--param", "players=4") == cli.EXIT_USAGE
    assert "--param players is given twice ('3' and '4'); give it once" in capsys.readouterr().err


def test_counts_in_a_floats_notation_are_taken_when_whole(tmp_path, capsys):
    assert solve(tmp_path, "--iters", "1e1", "--eval-every", "5.0") == 0
    assert json.loads((tmp_path / cli.STRATEGY).read_text())["iterations"] == 10
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
    lines = cli.format_table(strategy).splitlines()
    joined = "Current player: 0 | P0 hand: 1 2 | Points: 0 0"
    assert lines == [f"  {joined}  Bid: 1: 0.2500  Bid: 2: 0.7500",
                     f"  {'short'.ljust(len(joined))}  a | b:  1.0000"]


def test_parse_params():
    assert cli.parse_params(["players=3", "p=0.5", "flag=true", "xs=[1, 2]", "name=abc"]) == {
        "players": 3, "p": 0.5, "flag": True, "xs": [1, 2], "name": "abc"}
    # The form `jaxsolve games` prints defaults in, and Python's lists, parse too.
    assert cli.parse_params(["situation_probs=(0.3, 0.7)", "d=((0, 1), (1, 0))", "s=['a']"]) == {
        "situation_probs": (0.3, 0.7), "d": ((0, 1), (1, 0)), "s": ["a"]}
    with pytest.raises(cli.CLIError, match=r"--param value '\(1, \{2' is not a list or tuple"):
        cli.parse_params(["x=(1, {2"])
    with pytest.raises(cli.CLIError, match="is a int; expected a list or tuple"):
        cli.parse_params(["x=(3)"])
    # OpenSpiel's own list syntax is passed on as written, not refused as no list.
    assert cli.parse_params(["ship_sizes=[1;2]"]) == {"ship_sizes": "[1;2]"}


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


BATTLESHIP_2X2 = ["--param", "board_width=2", "--param", "board_height=2",
                  "--param", "num_shots=2", "--param", "ship_values=[1.0]"]


@pytest.mark.float64  # --x64's batch against each game solved alone, to 1e-9
def test_openspiel_lists_pass_in_either_syntax_and_a_payoff_sweep_is_one_batch(
        tmp_path, capsys):
    """battleship's ship_sizes as [1] (a list, written "[1]" for OpenSpiel) or as
    OpenSpiel's "[1]" string is the same game; sweeping its loss_multiplier moves only
    payoffs, so the points (whose OpenSpiel names differ: they list the multiplier)
    are one vmapped batch, each point as solved alone."""
    pyspiel = pytest.importorskip("pyspiel")
    from jaxsolve.openspiel import load_pyspiel
    params = {"board_width": 2, "board_height": 2, "num_shots": 2, "ship_values": "[1.0]"}
    assert str(load_pyspiel("battleship", **params, ship_sizes=[1])) == str(
        pyspiel.load_game("battleship", {**params, "ship_sizes": "[1]"}))
    out = tmp_path / "sweep"
    assert cli.main(["sweep", "openspiel:battleship", *BATTLESHIP_2X2, "--param",
                     "ship_sizes=[1]", "--vary", "loss_multiplier=[1.0, 2.0]", "--iters", "100",
                     "--x64", "--out", str(out), "--quiet"]) == 0
    assert "2 games in 1 vmapped batch of cfr+" in capsys.readouterr().out
    points = json.loads((out / "sweep.json").read_text())["points"]
    for point in points:
        game = pyspiel.load_game("battleship", {**params, "ship_sizes": "[1]",
                                                "loss_multiplier": point["value"]})
        tree = jaxsolve.compile_game(game)
        solver = jaxsolve.cfr_plus()
        alone = jaxsolve.policy_value(tree, jaxsolve.average_policy(
            tree, RUN(solver, tree, solver.init(tree), 100)))
        np.testing.assert_allclose(point["values"], alone, atol=1e-9)


def test_later_subcommands_plug_in(monkeypatch, capsys):
    """The `jaxsolve.alphazero.cli` module's `add_subparser` adds its command."""
    import types

    plugin = types.ModuleType("jaxsolve.alphazero.cli")

    def add_subparser(subparsers):
        pursuit = subparsers.add_parser("pursuit")
        pursuit.add_argument("--steps", type=int, default=1)
        pursuit.set_defaults(func=lambda args: print(f"pursuit {args.steps}") or 0)

    plugin.add_subparser = add_subparser
    monkeypatch.setattr(cli, "alphazero_cli", plugin)
    assert cli.main(["pursuit", "--steps", "3"]) == 0
    assert capsys.readouterr().out == "pursuit 3\n"


def test_pursuit_solve_reports_the_seed_game_as_an_evader_win(capsys):
    # Hand derivation: the defender's sensor sits on the centre cell and never sees
    # it, so an evader that stays at the centre (its start) is never detected and
    # wins; the exact solver must say so through the command line.
    assert cli.main(["pursuit", "solve", "--variant", "seed"]) == 0
    out = capsys.readouterr().out
    assert '"winner": "evader"' in out and '"root_value": 1.0' in out


def test_pursuit_goal_variant_takes_the_sensor_option(capsys):
    # --sensor counts with the default --variant goal too (not the ray sensor).
    assert cli.main(["pursuit", "solve", "--grid", "3", "--sensor", "wedge"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out)
    assert result["params"]["sensor"] == "wedge" and result["params"]["goal_row"] == 2
    # The numbers solved are the wedge game's. Both sensors' 3x3 goal games are evader
    # wins (root value 1), but the defender's best rate against a random evader differs
    # (0.987 wedge, 0.928 ray), as does random play's (0.155, 0.219), by `exact`, which
    # test_alphazero_exact checks against a brute-force minimax, hand-worked cases and
    # simulated random play.
    from jaxsolve.alphazero import exact  # noqa: PLC0415
    from jaxsolve.games import pursuit_evasion as pe  # noqa: PLC0415
    wedge, ray = pe.goal_variant(3, sensor="wedge"), pe.goal_variant(3, sensor="ray")
    best = {env: exact.best_vs_random(env, pe.DEFENDER) for env in (wedge, ray)}
    assert abs(best[wedge] - best[ray]) > 0.05
    assert result["best_vs_random_as_defender"] == pytest.approx(best[wedge], abs=1e-6)
    assert result["root_value"] == float(exact.solve(wedge).root_value)
    assert result["random_vs_random_evader_wins"] == pytest.approx(
        exact.random_vs_random(wedge), abs=1e-6)


# ---------------------------------------------------------------- sampling solvers
def strategy_of(out):
    return json.loads((out / cli.STRATEGY).read_text())


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
    state, meta = load_checkpoint(out / cli.CHECKPOINT)
    assert type(state) is jaxsolve.MCCFRState and state.key.dtype == np.uint32
    assert (meta["batch"], meta["seed"], int(state.iteration)) == (64, 3, 50)
    assert result["histories_touched"] == float(jaxsolve.sampling.histories_touched(state)) > 0
    policy = jaxsolve.from_table(tree, result["strategy"], default="error")
    np.testing.assert_allclose(policy, jaxsolve.average_policy(tree, state), atol=1e-12)
    assert float(jaxsolve.exploitability(tree, policy)) == pytest.approx(
        result["exploitability"], abs=1e-9)
    assert 0 < result["exploitability"] < 0.5

    history = json.loads((out / cli.CONVERGENCE).read_text())
    assert [r["iteration"] for r in history] == list(range(1, 51))
    touched = [r["touched"] for r in history]
    assert touched == sorted(touched) and touched[-1] == result["histories_touched"]
    assert (out / cli.PLOT).read_bytes()[:4] == b"\x89PNG"


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
    iterations = [r["iteration"] for r in json.loads((tmp_path / cli.CONVERGENCE).read_text())]
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
    history = json.loads((tmp_path / cli.CONVERGENCE).read_text())
    assert history[-1]["exploitability"] == pytest.approx(average, abs=1e-9)


def test_final_threshold_defaults_tau_and_current_is_the_last_iterate(tmp_path):
    assert solve(tmp_path / "t", "--iters", "20", "--final", "threshold") == 0
    result = strategy_of(tmp_path / "t")
    assert (result["final"], result["tau"]) == ("threshold", cli.DEFAULT_TAU)
    assert all(p == 0 or p >= cli.DEFAULT_TAU for row in result["strategy"].values()
               for p in row.values())

    tree = builtin_tree("kuhn_poker")
    assert solve(tmp_path / "c", "--iters", "20", "--final", "current") == 0
    state = final_state(tmp_path / "c")
    policy = jaxsolve.from_table(tree, strategy_of(tmp_path / "c")["strategy"])
    np.testing.assert_allclose(policy, jaxsolve.current_policy(tree, state), atol=1e-12)


# ---------------------------------------------------------------- checkpoints
def test_sampling_checkpoint_round_trip_keeps_types_dtypes_and_shapes(tmp_path):
    tree = builtin_tree("kuhn_poker")
    solver = jaxsolve.external_sampling(batch_size=16)  # the CLI's, so compiled already
    state = cli._run_jit(solver, tree, solver.init(tree, jax.random.PRNGKey(7)), 3)
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
    state = cli._run_jit(solver, tree, solver.init(tree), 5)
    write_format_1(tmp_path / "old.npz", state, {"game": "kuhn_poker"})
    loaded, meta = load_checkpoint(tmp_path / "old.npz")
    assert type(loaded) is jaxsolve.CFRState and meta["format_version"] == 1
    assert_same_state(loaded, jax_to_numpy(state))

    # A run checkpointed by the old code resumes to the uninterrupted result.
    assert solve(tmp_path / "run", "--iters", "30") == 0
    ckpt = tmp_path / "run" / cli.CHECKPOINT
    saved, meta = load_checkpoint(ckpt)
    write_format_1(ckpt, saved, meta)
    assert solve(tmp_path / "run", "--iters", "60", "--resume") == 0
    assert_same_state(final_state(tmp_path / "run"), final_state(uninterrupted))


@pytest.mark.parametrize("argv, message", [
    (["solve", "--grid", "4"], "argument --grid: must be odd and at least 3, got 4"),
    (["train", "--minutes", "-1"], "argument --minutes: must be a positive number of minutes"),
    (["train", "--explore", "1.5"], "argument --explore: must lie in [0, 1], got 1.5"),
    (["train", "--simulations", "0"], "argument --simulations: must be at least 1, got 0"),
    (["train", "--checkpoint", "/no/such/folder/az.npz"], "the folder /no/such/folder does not exist"),
    (["eval", "--checkpoint", "/no/such/az.npz"], "--checkpoint /no/such/az.npz: no checkpoint there"),
    # (T + 2 detection counts) x 61^2 cells x 8 directions = 64 x 3721 x 8 = 1,905,152.
    (["solve", "--grid", "61"], "pursuit: solve: the game with grid_size=61, max_turns=62 has "
                                "1,905,152 (detections, cell, direction) states per turn"),
])
def test_pursuit_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    # Checked before anything is solved, compiled or trained.
    assert cli.main(["pursuit", *argv]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("jaxsolve: error: ") and message in err and err.count("\n") == 1


def test_pursuit_eval_names_a_file_that_is_not_a_checkpoint(tmp_path, capsys):
    bad = tmp_path / "notes.npz"
    bad.write_text("not an archive")
    assert cli.main(["pursuit", "eval", "--grid", "5", "--hidden", "8",
                     "--checkpoint", str(bad)]) == cli.EXIT_USAGE
    assert f"{bad}: not a checkpoint (not an .npz archive)" in capsys.readouterr().err


# ------------------------------------------- pursuit checkpoints: recorded config, damage
# (The pursuit AlphaZero's checkpoints; the solve/check tests are above.)
def _pursuit_checkpoint(path, *argv):
    """An untrained checkpoint as `jaxsolve pursuit train *argv` saves it, with its config."""
    from jaxsolve.alphazero import cli as pursuit_cli, train  # noqa: PLC0415
    args = cli.build_parser().parse_args(["pursuit", "train", *argv])
    cfg = pursuit_cli.config_from_args(args)
    train.save(str(path), train.init(cfg)[1], config=cfg)


def test_pursuit_resume_refuses_a_checkpoint_of_another_game(tmp_path, capsys):
    # A checkpoint trained with the ray sensor does not resume under --sensor wedge.
    ckpt = tmp_path / "pe.npz"
    _pursuit_checkpoint(ckpt, "--variant", "seed", "--grid", "3", "--hidden", "8")
    assert cli.main(["pursuit", "train", "--variant", "seed", "--grid", "3", "--hidden", "8",
                     "--sensor", "wedge", "--resume", "--checkpoint", str(ckpt)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and (f"--checkpoint {ckpt} was trained with --sensor ray; "
                                     "the options give --sensor wedge") in err


def test_pursuit_eval_names_a_truncated_checkpoint(tmp_path, capsys):
    # `head -c 3000 pe.npz > t.npz` is named, not a zipfile.BadZipFile traceback.
    ckpt, truncated = tmp_path / "pe.npz", tmp_path / "t.npz"
    _pursuit_checkpoint(ckpt, "--variant", "seed", "--grid", "3", "--hidden", "8")
    truncated.write_bytes(ckpt.read_bytes()[:3000])
    assert cli.main(["pursuit", "eval", "--variant", "seed", "--grid", "3", "--hidden", "8",
                     "--checkpoint", str(truncated)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{truncated}: not a readable checkpoint (BadZipFile" in err


def _eval_spy(monkeypatch):
    """Replaces the evaluation `pursuit eval` runs by a recorder of what it was given."""
    from jaxsolve.alphazero import evaluate  # noqa: PLC0415
    seen = {}

    def fake(env, search, graphdef, params, solution, key, opponents=("random",), progress=False):
        seen.update(env=env, search=search, params=params, progress=progress)
        return {"win_vs_random_as_evader": 0.0}
    monkeypatch.setattr(evaluate, "evaluate", fake)
    return seen


def test_pursuit_eval_takes_the_settings_left_out_from_the_checkpoint(tmp_path, capsys,
                                                                      monkeypatch):
    # Not the default network (128 x 3) and search (16 simulations), which would fail
    # with "it holds 32 arrays, the state has 38 leaves" unless every training flag
    # were repeated; a repeated flag that differs from training is still refused.
    from jaxsolve.games import pursuit_evasion as pe  # noqa: PLC0415
    ckpt = tmp_path / "pe.npz"
    _pursuit_checkpoint(ckpt, "--variant", "seed", "--grid", "3", "--hidden", "8",
                        "--simulations", "2", "--search", "puct")
    seen = _eval_spy(monkeypatch)
    assert cli.main(["pursuit", "eval", "--checkpoint", str(ckpt)]) == 0
    assert seen["env"] == pe.Params(grid_size=3)
    assert (seen["search"].num_simulations, seen["search"].kind) == (2, "puct")
    assert seen["progress"]  # eval shows a bar over the plies it plays
    # One hidden layer of 8 (the 3x3 board's observation in, 9 actions out): the
    # trained network.
    assert sorted(np.shape(x) for x in jax.tree.leaves(seen["params"])) == sorted(
        [(pe.Params(grid_size=3).obs_size, 8), (8,), (8, 9), (9,), (8, 1), (1,)])
    err = capsys.readouterr().err
    assert (f"from {ckpt}: variant=seed, grid=3, sensor=ray, hidden=(8,), simulations=2, "
            "search=puct, seed=0") in err

    # Search settings given override the checkpoint's; the network must match.
    assert cli.main(["pursuit", "eval", "--checkpoint", str(ckpt), "--simulations", "5",
                     "--search", "gumbel"]) == 0
    assert (seen["search"].num_simulations, seen["search"].kind) == (5, "gumbel")
    assert cli.main(["pursuit", "eval", "--checkpoint", str(ckpt), "--hidden", "16"]) == cli.EXIT_USAGE
    assert (f"{ckpt} was trained with --hidden 8; the options give --hidden 16"
            in capsys.readouterr().err)


def test_pursuit_resume_config_is_the_checkpoints_but_for_options_given():
    import dataclasses  # noqa: PLC0415

    from jaxsolve.alphazero import cli as pursuit_cli, selfplay, train  # noqa: PLC0415
    from jaxsolve.games import pursuit_evasion as pe  # noqa: PLC0415
    recorded = train.TrainConfig(
        env=pe.goal_variant(7, sensor="wedge"), hidden=(8, 4), games_per_iter=12,
        search=selfplay.SearchConfig(num_simulations=3, kind="puct", dirichlet_alpha=0.1),
        learning_rate=3e-4, buffer_size=100, explore_fraction=0.25, seed=7)
    parse = lambda *argv: cli.build_parser().parse_args(["pursuit", "train", "--resume", *argv])
    # Nothing given: the checkpoint's config, with what the CLI has no option for.
    assert pursuit_cli.config_from_args(parse(), recorded) == recorded
    # Given: those options; an unchanged game option keeps the recorded game.
    cfg = pursuit_cli.config_from_args(parse("--games", "5", "--simulations", "9", "--grid", "7"),
                                       recorded)
    assert cfg == dataclasses.replace(recorded, games_per_iter=5, search=dataclasses.replace(
        recorded.search, num_simulations=9))
    # Without a checkpoint: the CLI's own defaults, which are the README's recipe.
    fresh = pursuit_cli.config_from_args(parse())
    assert (fresh.env, fresh.hidden, fresh.search.num_simulations, fresh.explore_fraction) == (
        pe.goal_variant(5), (128, 128, 128), 16, 0.5)
    assert fresh == train.TrainConfig.recipe(5)
    assert pursuit_cli.config_from_args(parse("--grid", "7")) == train.TrainConfig.recipe(7)


def test_pursuit_commands_have_their_own_help(capsys):
    for command, has, lacks in [("solve", "--grid", "--checkpoint"),
                                ("eval", "--mcts", "--iterations"),
                                ("train", "--resume", "--mcts")]:
        assert cli.main(["pursuit", command, "--help"]) == 0
        out = capsys.readouterr().out
        assert f"usage: jaxsolve pursuit {command}" in out and has in out and lacks not in out


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
    result = json.loads((out / cli.STRATEGY).read_text())
    assert result["value"][0] == pytest.approx(1 / 3, abs=1e-3)
    assert result["params"] == {"stake": 3}
    # A game object, and an importable module (tests/ is on sys.path under pytest).
    assert cli.main(["solve", f"{path}:GAME", "--iters", "2000", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / cli.STRATEGY).read_text())["value"][0] == pytest.approx(0, abs=1e-3)
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
    ("no_such_module_here:make", [], "importing no_such_module_here failed: "
                                     "ModuleNotFoundError"),
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


def test_a_python_file_without_its_games_name_is_named_by_check_and_sweep(tmp_path, capsys):
    """check told the user to solve the file instead, and sweep called it a saved tree."""
    path = tmp_path / "my_game.py"
    path.write_text(USER_GAME)
    for argv in (["check", str(path)], ["sweep", str(path), "--vary", "stake=1:2:2"]):
        assert cli.main(argv) == cli.EXIT_USAGE
        assert f"{path} is a Python file: name the game in it after a colon" in \
            capsys.readouterr().err


def test_game_missing_is_still_an_error_after_param(capsys):
    assert cli.main(["solve", "--param", "players=3"]) == cli.EXIT_USAGE
    assert "the following arguments are required: GAME" in capsys.readouterr().err


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
    _damage_member(out / cli.CHECKPOINT, "regrets.npy")
    capsys.readouterr()
    assert solve(out, "--iters", "8", "--resume") == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot --resume: " in err
    assert "checkpoint.npz: array 'regrets' cannot be read (Bad CRC-32" in err
    assert solve(out, "--iters", "8") == 0  # starting over replaces it, and says so
    assert "replacing the unreadable checkpoint in" in capsys.readouterr().err


def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys,
                                                                     monkeypatch):
    (tmp_path / "run" / cli.CHECKPOINT).mkdir(parents=True)
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


def test_pursuit_train_refuses_a_folder_for_its_checkpoint(tmp_path, capsys):
    # Refused before training, not after the whole run when saving (IsADirectoryError).
    assert cli.main(["pursuit", "train", "--checkpoint", str(tmp_path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--checkpoint {tmp_path} is a folder" in err
    # An empty name too, before training rather than when the temporary file is renamed.
    assert cli.main(["pursuit", "train", "--checkpoint", ""]) == cli.EXIT_USAGE
    assert "--checkpoint is empty" in capsys.readouterr().err


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
    result = json.loads((tmp_path / "b" / cli.STRATEGY).read_text())
    assert result["params"] == {"stake": 3}
    assert result["value"][0] == pytest.approx(1 / 3, abs=1e-3)


def test_a_hand_edited_run_record_is_refused_on_resume(tmp_path, capsys):
    # A string iteration is named, not a TypeError, and a convergence entry without
    # "seconds" not a KeyError.
    out = tmp_path / "run"
    assert solve(out, "--iters", "4") == 0
    state, meta = load_checkpoint(out / cli.CHECKPOINT)
    for damaged in ({**meta, "iteration": "4"}, {**meta, "convergence": [{"iteration": 4}]}):
        save_checkpoint(out / cli.CHECKPOINT, state, damaged)
        capsys.readouterr()
        assert solve(out, "--iters", "8", "--resume") == cli.EXIT_USAGE
        assert "its run record is damaged" in capsys.readouterr().err


# ---------------------------------------------------------------------- sweep
def test_sweep_solves_every_point_against_the_lp(tmp_path, capsys):
    """`jaxsolve sweep` over maneuver detection's prior: one vmapped batch, and every
    point's value within its NashConv of the independent sequence-form LP's value of
    that point's game (for a zero-sum game |u0 - v*| <= NashConv = 2 x exploitability)."""
    try:  # tests/ is on sys.path when it is not a package (pytest's default rootdir mode)
        from reference.sequence_form_lp import solve_zero_sum
    except ImportError:  # pragma: no cover
        from tests.reference.sequence_form_lp import solve_zero_sum  # type: ignore
    out = tmp_path / "sweep"
    priors = [(0.1, 0.9), (0.5, 0.5), (0.7, 0.3)]
    assert cli.main(["sweep", "maneuver_detection", "--vary", f"situation_probs={priors}",
                     "--iters", "2000", "--x64", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "3 games in 1 vmapped batch of cfr+, 2000 iterations each" in printed
    record = json.loads((out / "sweep.json").read_text())
    assert record["batches"] == 1 and (out / "sweep.png").stat().st_size > 10_000
    for point, prior in zip(record["points"], priors):
        assert tuple(point["value"]) == prior
        lp = solve_zero_sum(games.load("maneuver_detection", situation_probs=prior)).value
        assert point["values"][0] == pytest.approx(-point["values"][1], abs=1e-12)
        assert abs(point["values"][0] - lp) <= 2 * point["exploitability"] + 1e-9
        assert 0 <= point["exploitability"] < 1e-3
        assert set(point["strategy"]) == {"situation=N", "situation=M", "operator_acted"}


def test_sweep_over_a_structural_parameter_solves_one_batch_per_structure(tmp_path, capsys):
    """Spoof's rounds change the tree: one call per round count; the values are the
    README's (Spoof's LP-checked 1/3, 1/3, 2/3) within NashConv."""
    out = tmp_path / "spoof"
    assert cli.main(["sweep", "spoof", "--vary", "max_rounds=1:3:3", "--algo", "dcfr",
                     "--iters", "500", "--out", str(out), "--quiet"]) == 0
    assert "3 games in 3 vmapped batches of dcfr" in capsys.readouterr().out
    record = json.loads((out / "sweep.json").read_text())
    assert [p["value"] for p in record["points"]] == [1, 2, 3]
    for point, value in zip(record["points"], (1 / 3, 1 / 3, 2 / 3)):
        assert abs(point["values"][0] - value) <= 2 * max(point["exploitability"], 0) + 1e-5


def test_an_interrupted_sweep_keeps_what_it_solved(tmp_path, capsys, monkeypatch):
    """Ctrl-C in the second of three batches (Spoof's round counts): the first point
    is kept whole, the second as far as its last completed call, the third is left
    out; the record says so and the exit code is 130."""
    from jaxsolve import cli_sweep  # noqa: PLC0415
    real, calls = cli_sweep._run, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 25:  # 20 calls per batch: the 5th call of the second
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(cli_sweep, "_run", interrupted)
    out = tmp_path / "spoof"
    assert cli.main(["sweep", "spoof", "--vary", "max_rounds=[1, 2, 3]", "--iters", "40",
                     "--out", str(out), "--quiet"]) == cli.EXIT_INTERRUPTED
    printed = capsys.readouterr()
    assert "Interrupted: 2 of 3 points solved" in printed.err
    assert "iterations" in printed.out.splitlines()[0]
    record = json.loads((out / "sweep.json").read_text())
    assert record["interrupted"] is True and (out / "sweep.png").stat().st_size > 10_000
    assert [(p["value"], p["iterations"]) for p in record["points"]] == [(1, 40), (2, 8)]
    first = record["points"][0]  # Spoof with one round is worth 1/3 (the LP's value)
    # + float32 round-off (eps 1.2e-7) of values summed over Spoof's few leaves
    assert abs(first["values"][0] - 1 / 3) <= 2 * first["exploitability"] + 1e-6


@pytest.mark.parametrize("argv, says", [
    (["sweep", "spoof", "--vary", "max_rounds"], r"expected KEY=\[v1, v2, \.\.\.\] or KEY=START:STOP"),
    (["sweep", "spoof", "--vary", "max_rounds=[2]"], "a list of at least two values"),
    (["sweep", "spoof", "--vary", "max_rounds=1:3:1"], "COUNT must be at least 2"),
    (["sweep", "kuhn_poker", "--vary", "players=2:3:3"], r"players=2.0: .*got 2.0 \(2:3:3 "
     r"steps by 0.5, so every value is a float; .* e.g. 2:3:2\)"),
    (["sweep", "spoof", "--vary", "max_rounds=a:b:3"], "two numbers and an integer"),
    (["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--param", "max_rounds=3"],
     "name the same parameter"),
    (["sweep", "spoof", "--vary", "max_rounds=[1, 0]"], "max_rounds=0: .*max_rounds"),
    (["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--algo", "os-mccfr"], "--algo"),
    (["sweep", "SAVED", "--vary", "x=[1, 2]"], "not a saved tree"),
    (["sweep", "spoof"], "--vary"),
    (["sweep", "spoof", "--vary", "max_rounds=[1, 2"], r"^jaxsolve: error: --vary value '\[1, 2'"),
    # refused before the points are solved, not after, which would lose them all
    (["sweep", "spoof", "--vary", "max_rounds=[1, 2]", "--out", "FILE"],
     "cannot write to --out .*: .*File exists"),
])
def test_sweep_bad_input_is_one_line(argv, says, tmp_path, capsys):
    saved = str(builtin_tree("kuhn_poker").save(tmp_path / "kuhn.npz"))
    (tmp_path / "file").write_text("")
    argv = [saved if a == "SAVED" else str(tmp_path / "file") if a == "FILE" else a
            for a in argv]
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert re.search(says, err) and len(err.strip().splitlines()) == 1, err


def test_a_closed_pipe_drops_the_printout_but_not_the_files(tmp_path, monkeypatch):
    """`jaxsolve solve ... | head -1`: the reader leaves after a line. The command
    still writes strategy.json and the plot, without 'cannot write the results'."""
    class HeadOne:  # a pipe whose reader exits after the first line
        def __init__(self):
            self.lines = 0

        def write(self, text):
            if self.lines >= 1:
                raise BrokenPipeError(32, "Broken pipe")
            self.lines += text.count("\n")
            return len(text)

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", HeadOne())
    assert solve(tmp_path / "bp", "--iters", "5") == 0
    assert sorted(p.name for p in (tmp_path / "bp").iterdir()) == sorted(
        [cli.CHECKPOINT, cli.STRATEGY, cli.CONVERGENCE, cli.PLOT])
    assert isinstance(sys.stdout, HeadOne)  # given back after the command


# At 1 ms the alarm can land inside JAX's gc callback, which swallows it (reported as
# unraisable): that game is then counted in full, which the test allows.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_games_listing_blames_its_clock_not_the_game(capsys):
    """The listing's time limit once surfaced inside the walk as 'child(0) raised
    _TimeLimit' on a history, as if the game had failed."""
    assert cli.main(["games", "--timeout", "0.001"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert notes and all(re.fullmatch(r"note: \S+: not counted \(compiling took over 0.001 s\)",
                                      line) for line in notes), notes


def test_version_and_python_dash_m(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"jaxsolve {jaxsolve.__version__}, jax ")
    import subprocess  # noqa: PLC0415
    done = subprocess.run([sys.executable, "-m", "jaxsolve", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("jaxsolve "), done.stderr
    # Building the parser (every command does, `pursuit` included) loads no Flax or
    # optax: the AlphaZero modules load when a pursuit command runs.
    probe = ("import sys, jaxsolve.cli; jaxsolve.cli.build_parser(); "
             "print(sorted(m for m in ('flax', 'optax') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def test_usage_shows_game_as_required(capsys):
    # argparse takes GAME as optional (so that `--param k=v GAME` works) and would
    # print it as [GAME]; every command that needs it shows it plainly.
    for command in ("solve", "sweep", "check"):
        assert cli.main([command, "--help"]) == 0
        usage = capsys.readouterr().out.split("\n\n")[0]
        assert "[GAME]" not in usage and re.search(r"\sGAME\b", usage), usage
