"""`jaxsolve pursuit`: Ctrl-C saves and resumes exactly, a replaced run is announced,
out-of-memory and foreign checkpoints are one-line errors, and eval/train print the
counts behind their rates. Tiny settings (3x3 board, a network of 8) keep it cheap."""

import dataclasses
import json
import os
import shlex
import signal
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsolve
from jaxsolve import cli, games
from jaxsolve.cli import pursuit as pursuit_command
from jaxsolve.alphazero import evaluate, exact, train
from jaxsolve.checkpoint import save_checkpoint
from jaxsolve.games import pursuit_evasion as pe

TINY = ["--variant", "base", "--grid", "3", "--hidden", "8", "--games", "4",
        "--simulations", "2", "--eval-every", "0"]


def pursuit(*argv):
    return cli.main(["pursuit", *argv])


def _arrays(path):
    with np.load(path) as data:
        return {name: data[name] for name in data.files}


def _assert_same_checkpoint(a, b):
    """Every array of the two checkpoints, the recorded config included, bit for bit."""
    x, y = _arrays(a), _arrays(b)
    assert sorted(x) == sorted(y)
    for name in x:
        np.testing.assert_array_equal(x[name], y[name], err_msg=name)


def _untrained(path, step=0, with_config=True):
    """A checkpoint as `train` saves it (with its config unless `with_config` is
    False), of the 3x3 base game (--variant base), at iteration `step`, untrained."""
    cfg = train.TrainConfig(env=pe.Params(grid_size=3), hidden=(8,), games_per_iter=4)
    state = train.init(cfg)[1]._replace(step=jnp.int32(step))
    train.save(str(path), state, config=cfg if with_config else None)


def _cheap_iteration(cfg, graphdef, sigint_at=None):
    """A stand-in for `train.make_iteration`'s self-play-and-train step, whose
    compilation takes seconds: it moves every parameter by a draw from the state's key
    and consumes the key, as the real one does, so that a resume which restarted,
    skipped or repeated an iteration ends elsewhere. (The real step resumes exactly:
    test_alphazero_train.) With `sigint_at`, the iteration whose input is at that
    iteration sends this process a real SIGINT: Ctrl-C in the middle of it."""
    def send(at):
        if int(at) == sigint_at:
            os.kill(os.getpid(), signal.SIGINT)

    def iteration(state):
        if sigint_at is not None:
            jax.debug.callback(send, state.step)
        key, sub = jax.random.split(state.key)
        params = jax.tree.map(lambda x: x + jax.random.normal(sub, x.shape, x.dtype),
                              state.params)
        zero = jnp.float32(0)
        metrics = dict(loss=zero, policy_loss=zero, value_loss=zero, selfplay_evader_wins=zero)
        return state._replace(params=params, key=key, step=state.step + 1), metrics
    return iteration


def test_ctrl_c_saves_the_last_iteration_and_resumes_to_the_uninterrupted_run(
        tmp_path, capsys, monkeypatch, request):
    # Ctrl-C as in a terminal, also where this runs as a background job (which
    # ignores SIGINT): Python's own handler for the test, the previous one restored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    straight, cut = tmp_path / "straight.npz", tmp_path / "cut.npz"
    monkeypatch.setattr(train, "make_iteration", _cheap_iteration)
    assert pursuit("train", *TINY, "--iterations", "3", "--checkpoint", str(straight)) == 0
    capsys.readouterr()
    # Ctrl-C during iteration 2: it completes, is saved with its config, exit 130.
    monkeypatch.setattr(train, "make_iteration",
                        lambda cfg, graphdef: _cheap_iteration(cfg, graphdef, sigint_at=1))
    assert pursuit("train", *TINY, "--iterations", "3", "--checkpoint", str(cut)) == 130
    err = capsys.readouterr().err
    assert f"pursuit: interrupted at iteration 2; saved {cut}. Resume with:" in err
    assert train.saved_iteration(str(cut)) == 2 and train.recorded_config(str(cut)) is not None
    # The command it prints (1 iteration left of 3) ends where the straight run ended.
    command = shlex.split(err.strip().splitlines()[-1])
    assert command == ["jaxsolve", "pursuit", "train", "--checkpoint", str(cut), "--resume",
                       "--iterations", "1", "--eval-every", "0"]
    monkeypatch.setattr(train, "make_iteration", _cheap_iteration)
    assert cli.main(command[1:]) == 0
    assert "replacing" not in capsys.readouterr().err  # --resume continues, no note
    _assert_same_checkpoint(cut, straight)


def test_ctrl_c_before_an_iteration_completes_saves_nothing(tmp_path, capsys, monkeypatch):
    # Also: without --resume an existing checkpoint is announced as replaced, and an
    # interrupt before the first iteration leaves it as it was.
    path = tmp_path / "az.npz"
    _untrained(path, step=7)
    before = path.read_bytes()

    def interrupted(cfg, iterations, *, state=None, **kwargs):
        raise train.Interrupted(state if state is not None else train.init(cfg)[1], [])
    monkeypatch.setattr(train, "train", interrupted)
    assert pursuit("train", *TINY, "--checkpoint", str(path)) == 130
    err = capsys.readouterr().err
    assert (f"pursuit: note: replacing the run in {path} (at iteration 7); --resume would "
            "continue it instead") in err
    assert "interrupted before an iteration completed; nothing saved" in err
    assert path.read_bytes() == before
    # A file there that is no checkpoint is left alone: `--checkpoint notes.txt` must
    # not be replaced by a checkpoint once the first iteration is saved.
    junk = tmp_path / "notes.txt"
    junk.write_text("notes")
    assert pursuit("train", *TINY, "--checkpoint", str(junk)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and (
        f"--checkpoint {junk} exists and is not a readable pursuit checkpoint ({junk}: not a "
        "checkpoint (not an .npz archive)); train would overwrite it: give another path, or "
        "delete the file first") in err
    assert junk.read_text() == "notes"


XLA_OOM = "RESOURCE_EXHAUSTED: Out of memory allocating 27564006760 bytes."


@pytest.mark.parametrize("command, patch, hint", [
    ("train", (train, "train"),
     "try smaller --games, --hidden or --simulations (or --grid, --turns)"),
    ("eval", (evaluate, "evaluate"),
     "try fewer --simulations, or leave out --mcts (the network is the checkpoint's)"),
])
def test_out_of_memory_is_one_line_naming_the_options(command, patch, hint, tmp_path, capsys,
                                                      monkeypatch):
    # Out of memory (as `--games 2000000` runs out) is one line, not a JAX traceback;
    # the allocation is replaced by raising JAX's own error type.
    path = tmp_path / "az.npz"
    _untrained(path)

    def oom(*args, **kwargs):
        raise jax.errors.JaxRuntimeError(XLA_OOM)
    monkeypatch.setattr(*patch, oom)
    assert pursuit(command, *(TINY if command == "train" else []), "--checkpoint", str(path),
                   *(["--resume"] if command == "train" else [])) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == f"jaxsolve: error: pursuit {command} ran out of memory ({XLA_OOM}); {hint}"
    # Any other runtime error is not an out-of-memory one: it is not disguised as one.
    monkeypatch.setattr(*patch, lambda *a, **k: (_ for _ in ()).throw(
        jax.errors.JaxRuntimeError("INTERNAL: something else")))
    with pytest.raises(jax.errors.JaxRuntimeError, match="INTERNAL"):
        pursuit(command, "--checkpoint", str(path), *(["--resume"] if command == "train" else []))


def _fake_rates(monkeypatch):
    """`evaluate.evaluate` returning fixed rates and the counts behind them: 252 of 256
    games won as the defender, 12 mistakes in 2643 won positions (figures of a real
    run)."""
    rates = {"win_vs_random_as_evader": 1.0, "win_vs_random_as_defender": 252 / 256,
             "mistake_rate": 12 / 2643}
    counts = {"games_per_side": 256, "wins_vs_random_as_evader": 256,
              "wins_vs_random_as_defender": 252, "mistakes": 12, "won_positions": 2643}
    monkeypatch.setattr(evaluate, "evaluate",
                        lambda *args, **kwargs: evaluate.Rates(rates, counts))
    return rates, counts


def test_eval_prints_the_counts_behind_each_rate(tmp_path, capsys, monkeypatch):
    path = tmp_path / "az.npz"
    _untrained(path)
    rates, counts = _fake_rates(monkeypatch)
    assert pursuit("eval", "--checkpoint", str(path)) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert {k: result[k] for k in [*rates, *counts]} == {**rates, **counts}
    # 3x3 base game: the evader stays on the unseen centre and always wins (best 1.0).
    assert result["best_vs_random_as_evader"] == 1.0
    assert "pursuit: win_vs_random_as_evader: 1.0 (256/256); best possible 1.0" in err
    assert "pursuit: win_vs_random_as_defender: 0.984375 (252/256); best possible" in err
    assert ("pursuit: mistake_rate: 0.00454 (12 mistakes in 2643 won positions); only moves "
            "in positions the exact solver calls won for the agent count") in err


def test_a_checkpoint_without_config_says_what_it_assumes(tmp_path, capsys, monkeypatch):
    path = tmp_path / "bare.npz"
    _untrained(path, with_config=False)
    _fake_rates(monkeypatch)
    assert pursuit("eval", "--variant", "base", "--grid", "3", "--hidden", "8",
                   "--checkpoint", str(path)) == 0
    assert (f"pursuit: note: {path} records no configuration (saved without config=); "
            "assuming variant=base, grid=3, sensor=ray, hidden=(8,), simulations=16, "
            "search=gumbel") in capsys.readouterr().err
    # Read with the wrong width, it is refused, and the note (not only one after a
    # successful load) says what was assumed.
    assert pursuit("eval", "--variant", "base", "--grid", "3", "--checkpoint", str(path)) == 2
    err = capsys.readouterr().err
    assert "assuming variant=base, grid=3, sensor=ray, hidden=(128, 128, 128)" in err
    assert "written for another configuration" in err


def test_a_cfr_checkpoint_is_refused_as_not_a_pursuit_one(tmp_path, capsys):
    class State(NamedTuple):  # a `jaxsolve solve` checkpoint: its record is __meta__
        regrets: np.ndarray
    path = tmp_path / "cfr.npz"
    save_checkpoint(path, State(np.zeros(3)), {"game": "kuhn_poker", "iteration": 10})
    for argv in (["eval"], ["train", "--resume"]):
        assert pursuit(*argv, "--checkpoint", str(path)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and (f"{path}: not a pursuit AlphaZero checkpoint (a "
                                         "`jaxsolve solve` (CFR) checkpoint") in err
    tree = tmp_path / "tree.npz"
    jaxsolve.compile_game(games.load("kuhn_poker")).save(tree)
    for argv, says in [
            (["eval", "--checkpoint", str(tree)], "(a saved game tree (GameTree.save);"),
            (["eval", "--checkpoint", str(tmp_path)], f"{tmp_path} is a folder, not a checkpoint"),
            # As `jaxsolve solve --resume`: a mistyped path does not start a new run.
            (["train", "--resume", "--checkpoint", str(tmp_path / "typo.npz")],
             "no checkpoint there (drop --resume to start a new run)")]:
        assert pursuit(*argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "typo.npz").exists()


def test_the_size_guard_names_the_python_api_for_a_larger_limit(capsys):
    # 41x41 goal variant: refused before allocating; the CLI has no --max-bytes.
    assert pursuit("solve", "--grid", "41") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "more than max_bytes=4.00 GiB" in err
    assert ("The command line keeps that limit: choose a smaller --grid or fewer --turns, or "
            "solve it from Python with the API's exact.solve(params, max_bytes=") in err


def test_help_says_how_to_read_the_mistake_rate_and_eval_every_0(capsys):
    assert pursuit("eval", "--help") == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "counts only the agent's moves in positions the exact solver calls won" in text
    assert pursuit("train", "--help") == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "0: never, and the JSON printed at the end then has the training metrics" in text


@pytest.mark.parametrize("budget, done, said", [
    # 3 iterations asked from a fresh start, cut after 1: 3 - 1 = 2 left.
    (["--iterations", "3"], 1, "Resume with:\n  jaxsolve pursuit train --checkpoint {path} "
                               "--resume --iterations 2 --eval-every 0\n"),
    # Cut during the evaluation after the last of the 3: nothing left to resume.
    (["--iterations", "3"], 3, "interrupted after the last iteration (3); saved {path}\n"),
    # 1 minute asked, cut after 15 s of training: 45 s = 0.75 minutes left. The history
    # is empty, as when the Ctrl-C came during the first iteration (held until it ends):
    # the time spent is the one Interrupted counts, not the last recorded metrics'.
    (["--minutes", "1"], 1, "--resume --minutes 0.75 --eval-every 0\n"),
])
def test_ctrl_c_says_what_is_left(budget, done, said, tmp_path, capsys, monkeypatch):
    path = tmp_path / "az.npz"

    def interrupted(cfg, iterations, *, state=None, **kwargs):
        state = train.init(cfg)[1]._replace(step=jnp.int32(done))
        raise train.Interrupted(state, [], train_seconds=15.0)
    monkeypatch.setattr(train, "train", interrupted)
    assert pursuit("train", *TINY, *budget, "--checkpoint", str(path)) == 130
    assert capsys.readouterr().err.endswith(said.format(path=path))
    assert train.saved_iteration(str(path)) == done


# --turns, --threshold and --start: the other game parameters of `pe.Params`.

def _solved(capsys, *argv):
    """`pursuit solve` with `argv`: its JSON."""
    assert pursuit("solve", *argv) == 0
    return json.loads(capsys.readouterr().out)


def _root_value(params):
    return float(exact.solve(params).root_value)


@pytest.mark.parametrize("argv, params, ignored", [
    # Base rules, each option over Params' default (20 turns, 0.5, the centre).
    (["--variant", "base", "--grid", "3", "--turns", "2", "--threshold", "0",
      "--start", "0", "0"],
     pe.Params(grid_size=3, max_turns=2, threshold=0.0, evader_start=(0, 0)), None),
    # Goal variant, 5x5 in 4 turns: seen once is allowed by 1/4, lost with 0.
    (["--grid", "5", "--turns", "4", "--threshold", "0"],
     pe.goal_variant(5, max_turns=4, threshold=0.0),
     pe.goal_variant(5, max_turns=4, threshold=0.25)),
    # --turns T alone keeps the goal variant's one detection: threshold 1/T = 0.25, not
    # the 1/6 of 5x5's default 6 turns, which loses.
    (["--grid", "5", "--turns", "4"],
     pe.goal_variant(5, max_turns=4, threshold=0.25),
     pe.goal_variant(5, max_turns=4, threshold=1 / 6)),
    # --start over the goal variant's top-middle: from the centre, on 3x3 in 2 turns.
    (["--grid", "3", "--turns", "2", "--start", "1", "1"],
     pe.goal_variant(3, max_turns=2, threshold=0.5, evader_start=(1, 1)), None),
])
def test_solve_plays_the_game_of_turns_threshold_and_start(argv, params, ignored, capsys):
    out = _solved(capsys, *argv)
    # The parameters as JSON fields, not one repr string.
    assert out["params"] == json.loads(json.dumps(dataclasses.asdict(params)))
    assert out["root_value"] == _root_value(params)
    if ignored is not None:  # the option decides the verdict: it cannot pass unread
        assert _root_value(ignored) != out["root_value"]


def test_turns_and_start_give_the_verdicts_argued_by_hand(capsys):
    # 3x3 goal variant: the evader starts at the top middle (1, 0) and must end on the
    # bottom row 2. In its default 4 turns it gets there: an evader win.
    assert _solved(capsys, "--grid", "3")["winner"] == "evader"
    # With --turns 1 it moves once, a king move of at most one row, from row 0 to row
    # 1 at best: it cannot reach row 2, so the defender wins whatever it sees.
    assert _solved(capsys, "--grid", "3", "--turns", "1", "--threshold", "0")["root_value"] == -1.0
    # Started at the centre (1, 1), one step S reaches the goal row at (1, 2). On 3x3
    # the ray sees only the neighbour of the centre in its direction, and the sensor
    # starts N and turns at most 45 degrees (to NW, N or NE): it cannot look S, so the
    # evader is never seen and wins even with threshold 0 (one detection would lose).
    assert _solved(capsys, "--grid", "3", "--turns", "1", "--threshold", "0",
                   "--start", "1", "1")["root_value"] == 1.0


@pytest.mark.parametrize("argv, said", [
    (["--threshold", "1.5"], "argument --threshold: must lie in [0, 1), got 1.5"),
    (["--threshold", "-0.1"], "argument --threshold: must lie in [0, 1), got -0.1"),
    (["--threshold", "nan"], "argument --threshold: must lie in [0, 1), got nan"),
    (["--turns", "0"], "argument --turns: must be at least 1, got 0"),
    (["--turns", "two"], "argument --turns: expected an integer, got 'two'"),
    (["--start", "1"], "argument --start: expected 2 arguments"),
    (["--start", "0", "y"], "argument --start: expected an integer, got 'y'"),
    (["--start", "-1", "0"], "argument --start: must be at least 0, got -1"),
    (["--grid", "3", "--start", "0", "3"],
     "--start 0 3 is off the 3x3 board: x (column) and y (row) must lie in 0..2"),
    # The goal variant's default threshold 1 / turns would be 1 (outside [0, 1)).
    (["--variant", "goal", "--grid", "3", "--turns", "1"],
     "--turns 1 with --variant goal: the default threshold"),
])
@pytest.mark.parametrize("command", ["solve", "train", "eval"])
def test_bad_turns_threshold_or_start_is_one_line_naming_the_option(command, argv, said,
                                                                     tmp_path, capsys):
    path = tmp_path / "az.npz"
    if command == "eval":
        _untrained(path)  # a 3x3 base-game checkpoint: the options are read over its game
    extra = [] if command == "solve" else ["--checkpoint", str(path)]
    assert pursuit(command, *argv, *extra) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("jaxsolve: error: ") and said in err
    assert command != "train" or not path.exists()


@pytest.mark.parametrize("argv, said", [
    # round(0.5 x 1) = 0 (and round(0.1 x 5) = 0): no exploring start, said nowhere
    (["--games", "1"], "--explore 0.5 of --games 1 rounds to no game from an exploring "
                       "start; give --games 2 or more, or --explore 0"),
    (["--games", "5", "--explore", "0.1"], "give --games 6 or more"),
])
def test_exploring_starts_that_round_to_none_are_one_line(argv, said, tmp_path, capsys):
    path = tmp_path / "az.npz"
    assert pursuit("train", "--grid", "3", *argv, "--checkpoint", str(path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and not path.exists()


def test_a_seed_that_resuming_would_ignore_is_refused(tmp_path, capsys):
    """train --resume --seed 7 is refused: the run goes on from the checkpoint's saved
    key, so the seed would change nothing of the training while being recorded."""
    path = tmp_path / "az.npz"
    _untrained(path)  # seed 0
    assert pursuit("train", "--resume", "--seed", "7", "--checkpoint", str(path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--seed 7 with --resume: the run goes on from the " in err
    assert train.saved_iteration(str(path)) == 0  # untouched


CUSTOM = ["--variant", "goal", "--grid", "3", "--turns", "2", "--threshold", "0",
          "--start", "0", "0"]


def test_a_checkpoint_records_turns_threshold_and_start_for_eval(tmp_path, capsys, monkeypatch):
    path = tmp_path / "az.npz"
    monkeypatch.setattr(train, "make_iteration", _cheap_iteration)  # compiles in seconds
    assert pursuit("train", *CUSTOM, *TINY[4:], "--iterations", "1",
                   "--checkpoint", str(path)) == 0
    game = pe.goal_variant(3, max_turns=2, threshold=0.0, evader_start=(0, 0))
    assert train.recorded_config(str(path)).env == game
    capsys.readouterr()
    played = []
    monkeypatch.setattr(evaluate, "evaluate", lambda env, *args, **kwargs: played.append(env)
                        or evaluate.Rates({}, {}))
    # Without the options, eval plays the recorded game and says where it came from.
    assert pursuit("eval", "--checkpoint", str(path)) == 0
    assert played.pop() == game
    assert (f"pursuit: from {path}: variant=goal, grid=3, sensor=ray, turns=2, threshold=0.0, "
            "start=(0, 0), hidden=(8,)") in capsys.readouterr().err
    # A game option given over it keeps the recorded ones not given (not the defaults).
    assert pursuit("eval", "--grid", "3", "--checkpoint", str(path)) == 0
    assert played.pop() == game
    capsys.readouterr()
    # One that contradicts it is refused, as --grid is, naming the option that differs.
    # Over 2 turns, 0.5 allows one detection (1/2 does not exceed it), 0.0 none.
    for argv, differ in [(["--turns", "3"], "--turns 2; the options give --turns 3"),
                         (["--start", "1", "0"], "--start 0 0; the options give --start 1 0"),
                         (["--threshold", "0.5"], "--threshold 0.0 (at most 0 detections); "
                          "the options give --threshold 0.5 (at most 1 detection)")]:
        assert pursuit("eval", *argv, "--checkpoint", str(path)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and (f"--checkpoint {path} was trained with {differ} "
                                         "(leave them out to use the checkpoint's)") in err
    assert not played
    # A threshold that allows as many detections is the same game: 0.4 over 2 turns
    # allows none (1/2 exceeds it), as 0.0 does.
    assert pursuit("eval", "--threshold", "0.4", "--checkpoint", str(path)) == 0
    assert played.pop() == dataclasses.replace(game, threshold=0.4)
    assert ("pursuit: note: --threshold 0.4 allows as many detections (0) as the "
            "checkpoint's 0.0: the same game") in capsys.readouterr().err
    # train --resume without the options trains on the same game.
    assert pursuit("train", "--resume", "--iterations", "1", "--eval-every", "0",
                   "--checkpoint", str(path)) == 0
    assert train.recorded_config(str(path)).env == game and train.saved_iteration(str(path)) == 2


@pytest.mark.parametrize("command", ["solve", "train", "eval"])
def test_help_gives_each_variants_default_turns_threshold_and_start(command, capsys):
    assert pursuit(command, "--help") == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: grid + 1 with --variant goal, 20 with base)" in text
    assert ("(default: with --variant goal 1 / turns, one detection allowed, so 1/T with "
            "--turns T, and --turns 1 needs --threshold; 0.5 with base)") in text
    assert ("(default: the middle of the top row, grid//2 0, with --variant goal; the centre "
            "with base)") in text


def test_pursuit_solve_reports_the_base_game_as_an_evader_win(capsys):
    # Hand derivation: the defender's sensor sits on the centre cell and never sees
    # it, so an evader that stays at the centre (its start) is never detected and
    # wins; the exact solver must say so through the command line.
    assert cli.main(["pursuit", "solve", "--variant", "base"]) == 0
    out = capsys.readouterr().out
    assert '"winner": "evader"' in out and '"root_value": 1.0' in out



def test_variant_seed_is_the_old_name_of_base(capsys):
    """--variant seed, the old name, still solves the base game, and warns."""
    with pytest.warns(DeprecationWarning, match="--variant seed is renamed --variant base"):
        assert cli.main(["pursuit", "solve", "--variant", "seed", "--grid", "3"]) == 0
    old = capsys.readouterr().out
    assert cli.main(["pursuit", "solve", "--variant", "base", "--grid", "3"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(old)
    assert json.loads(old)["params"]["goal_row"] is None  # not the goal variant


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
    from jaxsolve.alphazero import train  # noqa: PLC0415
    args = cli.build_parser().parse_args(["pursuit", "train", *argv])
    cfg = pursuit_command.config_from_args(args)
    train.save(str(path), train.init(cfg)[1], config=cfg)



def test_pursuit_resume_refuses_a_checkpoint_of_another_game(tmp_path, capsys):
    # A checkpoint trained with the ray sensor does not resume under --sensor wedge.
    ckpt = tmp_path / "pe.npz"
    _pursuit_checkpoint(ckpt, "--variant", "base", "--grid", "3", "--hidden", "8")
    assert cli.main(["pursuit", "train", "--variant", "base", "--grid", "3", "--hidden", "8",
                     "--sensor", "wedge", "--resume", "--checkpoint", str(ckpt)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and (f"--checkpoint {ckpt} was trained with --sensor ray; "
                                     "the options give --sensor wedge") in err



def test_pursuit_eval_names_a_truncated_checkpoint(tmp_path, capsys):
    # `head -c 3000 pe.npz > t.npz` is named, not a zipfile.BadZipFile traceback.
    ckpt, truncated = tmp_path / "pe.npz", tmp_path / "t.npz"
    _pursuit_checkpoint(ckpt, "--variant", "base", "--grid", "3", "--hidden", "8")
    truncated.write_bytes(ckpt.read_bytes()[:3000])
    assert cli.main(["pursuit", "eval", "--variant", "base", "--grid", "3", "--hidden", "8",
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
    _pursuit_checkpoint(ckpt, "--variant", "base", "--grid", "3", "--hidden", "8",
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
    assert (f"from {ckpt}: variant=base, grid=3, sensor=ray, hidden=(8,), simulations=2, "
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

    from jaxsolve.alphazero import selfplay, train  # noqa: PLC0415
    from jaxsolve.games import pursuit_evasion as pe  # noqa: PLC0415
    recorded = train.TrainConfig(
        env=pe.goal_variant(7, sensor="wedge"), hidden=(8, 4), games_per_iter=12,
        search=selfplay.SearchConfig(num_simulations=3, kind="puct", dirichlet_alpha=0.1),
        learning_rate=3e-4, buffer_size=100, explore_fraction=0.25, seed=7)
    parse = lambda *argv: cli.build_parser().parse_args(["pursuit", "train", "--resume", *argv])
    # Nothing given: the checkpoint's config, with what the CLI has no option for.
    assert pursuit_command.config_from_args(parse(), recorded) == recorded
    # Given: those options; an unchanged game option keeps the recorded game.
    cfg = pursuit_command.config_from_args(parse("--games", "5", "--simulations", "9", "--grid", "7"),
                                       recorded)
    assert cfg == dataclasses.replace(recorded, games_per_iter=5, search=dataclasses.replace(
        recorded.search, num_simulations=9))
    # Without a checkpoint: the CLI's own defaults, which are the README's recipe.
    fresh = pursuit_command.config_from_args(parse())
    assert (fresh.env, fresh.hidden, fresh.search.num_simulations, fresh.explore_fraction) == (
        pe.goal_variant(5), (128, 128, 128), 16, 0.5)
    assert fresh == train.TrainConfig.recipe(5)
    assert pursuit_command.config_from_args(parse("--grid", "7")) == train.TrainConfig.recipe(7)



def test_pursuit_commands_have_their_own_help(capsys):
    for command, has, lacks in [("solve", "--grid", "--checkpoint"),
                                ("eval", "--mcts", "--iterations"),
                                ("train", "--resume", "--mcts")]:
        assert cli.main(["pursuit", command, "--help"]) == 0
        out = capsys.readouterr().out
        assert f"usage: jaxsolve pursuit {command}" in out and has in out and lacks not in out



def test_pursuit_train_refuses_a_folder_for_its_checkpoint(tmp_path, capsys):
    # Refused before training, not after the whole run when saving (IsADirectoryError).
    assert cli.main(["pursuit", "train", "--checkpoint", str(tmp_path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--checkpoint {tmp_path} is a folder" in err
    # An empty name too, before training rather than when the temporary file is renamed.
    assert cli.main(["pursuit", "train", "--checkpoint", ""]) == cli.EXIT_USAGE
    assert "--checkpoint is empty" in capsys.readouterr().err

