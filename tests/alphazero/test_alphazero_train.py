"""Training: checkpoints resume to identical results (with and without exploring
starts); evaluation runs from the initial position and is graded."""

import dataclasses
import re
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsolve.alphazero import evaluate, exact, network, selfplay, train
from jaxsolve.errors import CheckpointError
from jaxsolve.games import pursuit_evasion as pe

ENV = pe.goal_variant(3)  # 3x3, 4 turns
CFG = train.TrainConfig(env=ENV, search=selfplay.SearchConfig(num_simulations=4),
                        hidden=(8,), games_per_iter=4, train_steps=2, batch_size=16,
                        buffer_size=64)


EXPLORE_CFG = dataclasses.replace(CFG, explore_fraction=0.5, buffer_size=256)


@pytest.fixture(scope="module")
def compiled():
    graphdef, state = train.init(CFG)
    return graphdef, jax.jit(train.make_iteration(CFG, graphdef))


@pytest.fixture(scope="module")
def compiled_explore():
    graphdef, state = train.init(EXPLORE_CFG)
    return graphdef, jax.jit(train.make_iteration(EXPLORE_CFG, graphdef))


def _resume_matches_straight_run(cfg, step, path):
    """The state after 3 iterations, the last iteration's metrics and the state before it."""
    _, s = train.init(cfg)
    for _ in range(3):
        before = s
        s, metrics = step(s)
    straight = s
    _, s = train.init(cfg)
    s, _ = step(s)
    train.save(path, s, config=cfg)  # with its recorded config, checked on load
    s = train.load(path, train.init(cfg)[1], config=cfg)
    for _ in range(2):
        s, _ = step(s)
    for a, b in zip(jax.tree.leaves(straight), jax.tree.leaves(s)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.isfinite(float(metrics["loss"]))
    return s, metrics, before


def test_checkpoint_resume_is_identical(compiled, tmp_path):
    s, _, _ = _resume_matches_straight_run(CFG, compiled[1], str(tmp_path / "ckpt.npz"))
    assert int(s.step) == 3 and int(s.buffer.size) == 64  # 3 x 4 games x 8 plies, capped


def test_checkpoint_resume_is_identical_with_exploring_starts(compiled_explore, tmp_path):
    s, metrics, before = _resume_matches_straight_run(EXPLORE_CFG, compiled_explore[1],
                                                      str(tmp_path / "ckpt.npz"))
    # 2 of the 4 games per iteration start at the initial position (8 plies each); the
    # other 2 at a random turn, so they add 2..8 plies each: 3 x (16 + 4..16) in all.
    assert int(s.step) == 3 and 60 <= int(s.buffer.size) <= 96
    assert int(s.buffer.pos) == int(s.buffer.size)  # not wrapped yet
    # The win rates the last iteration reports, recounted from the rows it added to the
    # buffer: rows are time-major, and at ply 0 all 4 games are on (an exploring start
    # is a position with the evader to move, not an ended game), so the iteration's
    # first 4 rows are games 0..3 at their first ply, evader to move, each holding its
    # game's outcome for the evader (+1 a win, -1 a loss). Games 0 and 1 (the first
    # round(0.5 x 4)) started from exploring starts, games 2 and 3 from the initial
    # position.
    first = np.asarray(s.buffer.value)[int(before.buffer.pos):][:4]
    assert set(first.tolist()) <= {-1.0, 1.0}
    assert float(metrics["explore_evader_wins"]) == np.mean(first[:2] > 0)
    assert float(metrics["selfplay_evader_wins"]) == np.mean(first[2:] > 0)


def test_buffer_skips_plies_after_the_end():
    """Rows of ended games are never stored; the kept rows are packed in time-major
    order, and an overflow keeps the newest valid rows."""
    obs = jnp.arange(6, dtype=jnp.float32).reshape(3, 2, 1)  # ply p, game b -> 2p + b
    valid = jnp.array([[True, True], [True, False], [False, False]])
    traj = selfplay.Trajectory(obs, jnp.ones((3, 2, 9)) / 9, jnp.array([[0, 0], [1, 1], [0, 0]]),
                               jnp.array([1.0, -1.0]), valid, jnp.array([True, False]))
    buf = selfplay.buffer_add(selfplay.buffer_init(5, 1), traj)
    assert int(buf.size) == 3 and int(buf.pos) == 3
    assert np.asarray(buf.observation)[:, 0].tolist() == [0, 1, 2, 0, 0]
    assert np.asarray(buf.value).tolist() == [1.0, -1.0, -1.0, 0.0, 0.0]
    buf = selfplay.buffer_add(buf, traj)  # 3 more rows: slots 3, 4 and (wrapped) 0
    assert int(buf.size) == 5 and int(buf.pos) == 1
    assert np.asarray(buf.observation)[:, 0].tolist() == [2, 1, 2, 0, 1]
    small = selfplay.buffer_add(selfplay.buffer_init(2, 1), traj)  # 3 valid rows, room for 2
    assert np.asarray(small.observation)[:, 0].tolist() == [2, 1]
    assert int(small.size) == 2 and int(small.pos) == 1


def test_exploring_self_play_games_end_with_an_outcome():
    """Games from exploring starts are shorter: exactly the plies before their end are
    valid, and the outcome of every game is a win or a loss (the final reward is not
    lost to the no-op steps after the end)."""
    graphdef, s = train.init(EXPLORE_CFG)
    traj = jax.jit(lambda p, k: selfplay.play(graphdef, ENV, EXPLORE_CFG.search, p, k, 32,
                                              explore_fraction=0.75))(s.params, jax.random.PRNGKey(3))
    t_max = ENV.max_turns
    obs0 = np.asarray(traj.observation[0])
    start_turn = np.rint(t_max - obs0[:, ENV.num_cells + pe.NUM_DIRS] * t_max).astype(int)
    valid = np.asarray(traj.valid)
    assert valid.sum(0).tolist() == (2 * (t_max - start_turn)).tolist()
    assert all(valid[: n, b].all() and not valid[n:, b].any()
               for b, n in enumerate(valid.sum(0)))
    assert np.asarray(traj.from_start).tolist() == [False] * 24 + [True] * 8
    assert (start_turn[24:] == 0).all() and (start_turn[:24] > 0).any()
    assert set(np.asarray(traj.outcome).tolist()) <= {-1.0, 1.0}


def test_evaluation_starts_at_the_initial_position(compiled_explore):
    """Evaluation ignores exploring starts: each of the 8 games lasts the full
    max_turns agent moves, on either side."""
    graphdef, step = compiled_explore
    _, s = train.init(EXPLORE_CFG)
    s, _ = step(s)
    match = evaluate.make_match(ENV, EXPLORE_CFG.search, graphdef, 8)
    sol = exact.solve(ENV)
    for side in (pe.EVADER, pe.DEFENDER):
        out = match(s.params, sol, jax.random.PRNGKey(side), jnp.int32(side))
        assert int(out["moves"]) == 8 * ENV.max_turns


def test_the_training_bar_in_a_log_file_is_not_redrawn_every_iteration(capsys):
    """stderr captured is not a terminal, as a log file: the bar draws its start and
    its end, not one line per iteration (the loss shown beside it changes each time)."""
    train.train(CFG, 6, progress=True)
    drawn = capsys.readouterr().err
    assert drawn.count("alphazero") <= 3 and "6/6" in drawn, drawn


def test_time_budget_and_stop_rule():
    cfg = dataclasses.replace(EXPLORE_CFG, buffer_size=128)
    _, s, hist = train.train(cfg, 50, max_seconds=0.0, progress=False)
    assert len(hist) == 1 and int(s.step) == 1 and hist[0]["train_seconds"] > 0
    _, s, hist = train.train(cfg, 50, eval_every=2, eval_fn=lambda p: {"x": 1.0},
                             stop_fn=lambda m: m["iteration"] >= 4, progress=False)
    assert [h["iteration"] for h in hist] == [1, 2, 3, 4] and "x" in hist[1]


def test_buffer_values_are_from_the_movers_side():
    traj = selfplay.Trajectory(jnp.zeros((2, 3, 5)), jnp.ones((2, 3, 9)) / 9,
                               jnp.array([[0, 0, 0], [1, 1, 1]]), jnp.array([1.0, -1.0, 1.0]))
    buf = selfplay.buffer_add(selfplay.buffer_init(4, 5), traj)
    assert int(buf.size) == 4 and int(buf.pos) == 2
    # Values [1, -1, 1 | -1, 1, -1] (evader ply, then defender ply); the last four
    # survive, the final two wrapped onto slots 0 and 1.
    assert np.asarray(buf.value).tolist() == [1.0, -1.0, 1.0, -1.0]


# The hand-worked game of test_alphazero_exact.test_best_vs_random_on_a_hand_case, whose
# rules (games/pursuit_evasion.py) decide every game by hand:
# * 3x3 grid, the evader starts at the centre (cell 4; cells are y * 3 + x, y down),
#   moves first: 8 king moves, each to a different one of the 8 neighbours (no wall is
#   reached from the centre), or 8 = stay. Then the defender points the sensor in any of
#   8 directions (turn_rate 4) and, max_turns = 1, the game ends.
# * The ray starts next to the centre, so on 3x3 direction d sees exactly the one
#   neighbour in direction d, and no direction sees the centre.
# * threshold 0: max_detections = floor(0 * 1) = 0, so one detection wins it for the
#   defender; no goal row. The evader wins iff it is not seen.
# Hence (minimax): staying wins for the evader (+1), any other move loses (the defender
# points at it); the initial position is won for the evader and "stay" is its only
# winning move. A defender to move with the evader on a neighbour is won for it, and the
# one direction pointing at the evader is its only winning move; with the evader at
# the centre it is lost whatever it plays (so no defender move there is a mistake).
HAND = pe.Params(grid_size=3, max_turns=1, threshold=0.0)
# TOWARD[c]: the direction (0=N, 1=NE, ..., 7=NW) from the centre to cell c, written out
# by hand: cell 0 = (0, 0) is NW, 1 = (1, 0) N, 2 NE, 3 W, 5 E, 6 SW, 7 S, 8 SE; the
# centre's entry (0) is arbitrary, nothing sees it.
TOWARD = jnp.array([7, 0, 1, 6, 0, 2, 5, 4, 3], jnp.int32)
EXACT, LOSING = 0, 1  # the stub agent's strategy, passed in place of the network params


def _hand_agent(seen):
    """A stand-in for `selfplay.run_search` in `evaluate.make_match`, which calls it
    as `selfplay.run_search(graphdef, env, cfg, params, key, state, noise=False)` and
    plays its `.action` on the agent's turns. `params` is the strategy: EXACT plays
    the hand-derived winning moves (evader: stay; defender: point at the evader),
    LOSING a known losing one from every won position (evader: move N, to cell 1;
    defender: point away from the evader, whose cell that ray does not see). It records
    (mover, evader cell) of every position it is shown in `seen`, outside the library,
    so the test can recompute each game's outcome from the rules."""
    def run_search(graphdef, env, cfg, strategy, key, state, **kwargs):
        jax.debug.callback(lambda p, c: seen.append((np.asarray(p), np.asarray(c))),
                           state.current_player, state.cell)
        toward = TOWARD[state.cell]
        losing = strategy == LOSING
        evader = jnp.where(losing, 0, pe.STAY)
        defender = jnp.where(losing, (toward + 4) % 8, toward)
        action = jnp.where(state.current_player == pe.EVADER, evader, defender)
        return types.SimpleNamespace(action=action.astype(jnp.int32))
    return run_search


def test_evaluation_against_random_and_exact(monkeypatch):
    """Win rates and the mistake rate of hand-played agents on HAND, against the
    hand derivation above. `evaluate` has no hook for the agent (`matches=` replaces
    the whole match, the code under test), so `selfplay.run_search` is monkeypatched:
    `make_match` looks it up on the `selfplay` module when jit traces the match, and
    the real opponent, exact grading and win accounting all run as in evaluation."""
    seen = []
    monkeypatch.setattr(selfplay, "run_search", _hand_agent(seen))
    sol = exact.solve(HAND)
    b, matches = 512, {}  # one compiled match (strategy and side are traced) for all
    # Binomial 5-sigma band for a win rate of probability p over b games.
    band = lambda p: 5 * np.sqrt(p * (1 - p) / b)

    def run(strategy, seed):
        return evaluate.evaluate(HAND, CFG.search, None, jnp.int32(strategy), sol,
                                 jax.random.PRNGKey(seed), batch=b, matches=matches)

    # EXACT as evader stays and always wins (1.0); as defender it wins iff the random
    # evader left the centre: 8 of its 9 equally likely moves, p = 8/9. It never
    # leaves a won position, so the mistake rate is 0 (over b + ~8b/9 won moves).
    res = run(EXACT, 0)
    assert res["win_vs_random_as_evader"] == 1.0 and res["mistake_rate"] == 0.0
    assert abs(res["win_vs_random_as_defender"] - 8 / 9) < band(8 / 9)
    # The counts behind the rates: b games per side; b won moves as the evader (its
    # one move, from the won start) plus one per game the random evader left the
    # centre (the defender's won positions, all of which EXACT wins).
    counts = res.counts
    assert counts["games_per_side"] == b and counts["wins_vs_random_as_evader"] == b
    assert counts["wins_vs_random_as_defender"] / b == res["win_vs_random_as_defender"]
    assert counts["won_positions"] == b + counts["wins_vs_random_as_defender"]
    assert counts["mistakes"] == 0 and type(res) is evaluate.Rates and dict(res) == res
    # LOSING as evader moves N from the won start (a mistake every game) and is seen
    # only if the random defender points N, 1 of 8: p = 7/8. As defender it never sees
    # the evader (0.0), and each of its moves from a won position (evader on a
    # neighbour) is a mistake: mistakes = won moves, rate 1.0.
    res = run(LOSING, 1)
    assert res["mistake_rate"] == 1.0 and res["win_vs_random_as_defender"] == 0.0
    assert res.counts["mistakes"] == res.counts["won_positions"] > b
    assert abs(res["win_vs_random_as_evader"] - 7 / 8) < band(7 / 8)
    # EXACT reaches the best rates any policy has against random play: 1 and 8/9.
    best = evaluate.best_rates_vs_random(HAND)
    assert best == {"best_vs_random_as_evader": 1.0,
                    "best_vs_random_as_defender": pytest.approx(8 / 9)}

    # Game by game, on the match evaluate compiled: each side's reported wins and
    # counts against the outcome recomputed from the cells the agent was shown.
    match, key = matches["random"], jax.random.PRNGKey(2)

    def play(strategy, side):
        seen.clear()
        out = {k: np.asarray(v) for k, v in
               match(jnp.int32(strategy), sol, key, jnp.int32(side)).items()}
        jax.effects_barrier()
        # Shown twice per game: evader to move (the start), then defender to move.
        assert [p.tolist() for p, _ in seen] == [[pe.EVADER] * b, [pe.DEFENDER] * b]
        assert int(out["moves"]) == b  # one agent move per game
        return out, seen[1][1]  # the evader's cell when the defender moves

    out, cells = play(EXACT, pe.EVADER)
    assert (cells == 4).all() and out["agent_wins"].all()
    assert (int(out["won_moves"]), int(out["mistakes"])) == (b, 0)
    out, cells = play(LOSING, pe.EVADER)
    assert (cells == 1).all()  # moved N, from the won start: b won moves, b mistakes
    assert (int(out["won_moves"]), int(out["mistakes"])) == (b, b)
    # Defender side: the random evader left the centre in `left` games; those are the
    # defender's won positions, the ones EXACT wins and LOSING throws away. With the
    # same key both strategies face the same evader moves (drawn before they play).
    out, cells = play(EXACT, pe.DEFENDER)
    left = cells != 4
    assert 0 < left.sum() < b
    np.testing.assert_array_equal(out["agent_wins"], left)
    assert (int(out["won_moves"]), int(out["mistakes"])) == (left.sum(), 0)
    out, cells_losing = play(LOSING, pe.DEFENDER)
    np.testing.assert_array_equal(cells_losing, cells)
    assert not out["agent_wins"].any()
    assert (int(out["won_moves"]), int(out["mistakes"])) == (left.sum(), left.sum())


@pytest.mark.parametrize("cfg", [CFG, EXPLORE_CFG], ids=["plain", "exploring_starts"])
def test_self_play_and_training_compile_once(cfg):
    """One jitted self-play-and-train iteration serves the whole run: state shapes and
    dtypes are stable across iterations, so JAX never traces it a second time."""
    graphdef, s = train.init(cfg)
    traced = []
    counting = jax.jit(lambda state: (traced.append(1), train.make_iteration(cfg, graphdef)(state))[1])
    for _ in range(3):
        s, _ = counting(s)
    assert len(traced) == 1
    assert counting._cache_size() == 1


def test_save_names_the_path_it_was_given(tmp_path):
    """A missing folder or a folder at the path named the temporary file
    ('x.npz.tmp-28669'), which the user never gave."""
    _, state = train.init(CFG)
    for path, error, says in [(str(tmp_path / "nodir" / "x.npz"), FileNotFoundError,
                               "does not exist"),
                              (str(tmp_path), IsADirectoryError, "a folder is there")]:
        with pytest.raises(error, match=re.escape(says)) as info:
            train.save(path, state)
        assert info.value.filename == path and ".tmp-" not in str(info.value)


def test_checkpoint_is_written_at_its_exact_path_and_checked_on_load(tmp_path):
    _, state = train.init(CFG)
    path = tmp_path / "run1"  # no .npz: np.savez alone would write run1.npz
    train.save(str(path), state)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run1"]
    loaded = train.load(str(path), train.init(CFG)[1])
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(loaded)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # Another network size: refused with the leaf, its shapes and what must match.
    other = train.init(dataclasses.replace(CFG, hidden=(16,)))[1]
    with pytest.raises(ValueError, match=re.escape(
            "run1: written for another configuration: .params['policy_head']['kernel'].value "
            "(leaf 1) has shape (8, 9), this configuration's (16, 9): the network's widths "
            "(hidden) must match")):
        train.load(str(path), other)
    # Another board: the first layer's input is the observation (3x3's 21 features
    # against 5x5's). The message blamed "games per iteration", which is in no shape.
    five = train.init(dataclasses.replace(CFG, env=pe.goal_variant(5)))[1]
    with pytest.raises(ValueError, match=re.escape(
            "['trunk'][0]['kernel'].value (leaf 3) has shape (21, 8), this configuration's "
            f"({pe.goal_variant(5).obs_size}, 8): the observation's width, set by the game")):
        train.load(str(path), five)
    # An .npz archive that is not a training state, and a CFR checkpoint (`jaxsolve
    # solve` writes its record as __meta__ beside the state's fields): named as such.
    np.savez(tmp_path / "weights.npz", w=np.zeros(3))
    with pytest.raises(ValueError, match=re.escape(
            "weights.npz: not a pursuit AlphaZero checkpoint (its arrays are named w; ")):
        train.load(str(tmp_path / "weights.npz"), state)
    np.savez(tmp_path / "cfr.npz", __meta__=np.asarray("{}"), regrets=np.zeros(3))
    for read in (lambda p: train.load(p, state), train.recorded_config, train.saved_iteration):
        with pytest.raises(ValueError, match=re.escape(
                "cfr.npz: not a pursuit AlphaZero checkpoint (a `jaxsolve solve` (CFR) checkpoint")):
            read(str(tmp_path / "cfr.npz"))
    # Only a config, or a config without its game: said in words, not in Python's
    # ("max() arg is an empty sequence", "('env')").
    np.savez(tmp_path / "bare.npz", config=np.asarray('{"hidden": [8]}'))
    with pytest.raises(ValueError, match=re.escape("bare.npz: not a pursuit AlphaZero "
                                                   "checkpoint (it holds no state arrays;")):
        train.saved_iteration(str(tmp_path / "bare.npz"))
    np.savez(tmp_path / "noenv.npz", config=np.asarray('{"hidden": [8]}'), leaf_0000=np.zeros(2))
    with pytest.raises(ValueError, match=re.escape("noenv.npz: its recorded configuration is "
                                                   "unreadable (it has no field 'env')")):
        train.recorded_config(str(tmp_path / "noenv.npz"))
    # A pursuit checkpoint of a deeper network (more leaves), saved without its config.
    deeper = train.init(dataclasses.replace(CFG, hidden=(8, 8)))[1]
    train.save(str(tmp_path / "deeper.npz"), deeper)
    n, m = len(jax.tree.leaves(deeper)), len(jax.tree.leaves(state))
    with pytest.raises(ValueError, match=re.escape(
            f"deeper.npz: written for another configuration: it holds {n} arrays, this "
            f"configuration's state has {m}")):
        train.load(str(tmp_path / "deeper.npz"), state)
    with pytest.raises(CheckpointError, match=re.escape("missing.npz: no such file")):
        train.load(str(tmp_path / "missing.npz"), state)


@pytest.mark.parametrize("make, message", [
    (lambda: selfplay.SearchConfig(num_simulations=0),
     "SearchConfig.num_simulations must be an integer >= 1, got 0"),
    (lambda: selfplay.SearchConfig(num_simulations=2.5),
     "SearchConfig.num_simulations must be an integer >= 1, got 2.5"),
    (lambda: selfplay.SearchConfig(kind="alphago"), "SearchConfig.kind must be one of 'gumbel', 'puct'"),
    (lambda: selfplay.SearchConfig(dirichlet_fraction=1.5),
     "SearchConfig.dirichlet_fraction must be a number in [0, 1], got 1.5"),
    (lambda: dataclasses.replace(CFG, explore_fraction=-0.1),
     "TrainConfig.explore_fraction must be a number in [0, 1], got -0.1"),
    (lambda: dataclasses.replace(CFG, hidden=(8, 0)),
     "TrainConfig.hidden must be a tuple of one or more layer widths, each an integer >= 1, "
     "got (8, 0)"),
    (lambda: dataclasses.replace(CFG, hidden=(8.5,)), "TrainConfig.hidden must be a tuple"),
    (lambda: dataclasses.replace(CFG, hidden=64), "TrainConfig.hidden must be a tuple"),
    (lambda: dataclasses.replace(CFG, batch_size=0), "TrainConfig.batch_size must be an integer >= 1"),
    (lambda: dataclasses.replace(CFG, batch_size=2.5),
     "TrainConfig.batch_size must be an integer >= 1, got 2.5"),
    (lambda: dataclasses.replace(CFG, env={"grid_size": 3}),
     "TrainConfig.env must be a jaxsolve.games.pursuit_evasion.Params, got {'grid_size': 3}"),
    (lambda: dataclasses.replace(CFG, search={"kind": "puct"}),
     "TrainConfig.search must be a selfplay.SearchConfig"),
    (lambda: dataclasses.replace(CFG, learning_rate="1e-3"),
     "TrainConfig.learning_rate must be a finite number > 0, got '1e-3'"),
    # An infinite rate or decay trained to a NaN loss without a word.
    (lambda: dataclasses.replace(CFG, learning_rate=float("inf")),
     "TrainConfig.learning_rate must be a finite number > 0, got inf"),
    (lambda: dataclasses.replace(CFG, weight_decay=float("inf")),
     "TrainConfig.weight_decay must be a finite number >= 0, got inf"),
])
def test_configs_refuse_bad_settings_when_built(make, message):
    # At construction, not deep inside the jitted self-play or training step.
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_configs_store_canonical_values():
    cfg = dataclasses.replace(CFG, hidden=[8], batch_size=np.int64(16))
    assert cfg == CFG and hash(cfg) == hash(CFG) and cfg.hidden == (8,)
    assert type(cfg.batch_size) is int


def test_train_refuses_bad_iterations_and_a_state_of_another_configuration():
    # Checked before anything compiles: unchecked, -3 would run 0 iterations, 1.5 fail
    # in range(), and another network's state inside the jitted step's matrix product.
    for iterations in (1.5, -3):
        with pytest.raises(ValueError, match=re.escape(
                f"train: iterations must be None or an integer >= 0, got {iterations}")):
            train.train(CFG, iterations, progress=False)
    other = train.init(dataclasses.replace(CFG, hidden=(16,)))[1]
    with pytest.raises(ValueError, match=r"train: state was made for another configuration: "
                                         r".*\(leaf 1\) has shape \(16, 9\), this configuration's "
                                         r"\(8, 9\): the network's widths"):
        train.train(CFG, 1, state=other, progress=False)
    with pytest.raises(ValueError, match="train: state must be a TrainState of this configuration"):
        train.train(CFG, 1, state=other.params, progress=False)


def test_network_names_an_observation_of_another_width():
    graphdef, params = network.init_params(ENV.obs_size, hidden=(8,))
    with pytest.raises(ValueError, match=re.escape(
            f"network.apply: obs must be [B, {ENV.obs_size}] (the network's input width), "
            f"got shape (2, 35)")):
        network.apply(graphdef, params, jnp.zeros((2, 35)))


def test_evaluation_arguments_are_checked_before_compiling():
    graphdef, s = train.init(CFG)
    sol = exact.solve(ENV)
    run = lambda **kw: evaluate.evaluate(ENV, CFG.search, graphdef, s.params, kw.pop("sol", sol),
                                         jax.random.PRNGKey(0), **kw)
    with pytest.raises(ValueError, match="evaluate: batch must be an integer >= 1, got 0"):
        run(batch=0)
    # The TrainConfig for its SearchConfig is named, not an AttributeError ('kind').
    with pytest.raises(ValueError, match=re.escape(
            "evaluate: cfg must be the agent's selfplay.SearchConfig (TrainConfig.search), "
            "got TrainConfig(")):
        evaluate.evaluate(ENV, CFG, graphdef, s.params, sol, jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=re.escape(
            "evaluate: unknown opponent 'randm'; expected 'random' or 'mcts'")):
        run(opponents=("randm",))
    with pytest.raises(ValueError, match=re.escape(
            "evaluate: the solution is of the game with grid_size=5, max_turns=6")):
        run(sol=exact.solve(pe.goal_variant(5)))
    with pytest.raises(ValueError, match="play: batch must be an integer >= 1, got 0"):
        selfplay.play(graphdef, ENV, CFG.search, s.params, jax.random.PRNGKey(0), 0)
    # A single name is one opponent, not a sequence of letters (a stub match: no compile).
    stub = lambda *args: dict(agent_wins=jnp.ones(2, bool), mistakes=0, won_moves=0)
    assert run(opponents="random", matches={"random": stub}) == {
        "win_vs_random_as_evader": 1.0, "win_vs_random_as_defender": 1.0, "mistake_rate": 0.0}


def test_checkpoint_records_its_game_and_network(tmp_path):
    """A checkpoint saved with its config refuses a run of another game or network,
    naming the setting; other settings may change (more simulations later on); one
    saved without a config (the older format, without the record) loads unchecked."""
    _, state = train.init(CFG)
    path = str(tmp_path / "ckpt.npz")
    train.save(path, state, config=CFG)
    more_search = dataclasses.replace(CFG, search=selfplay.SearchConfig(num_simulations=8))
    train.load(path, state, config=more_search)
    wedge = dataclasses.replace(CFG, env=dataclasses.replace(ENV, sensor="wedge"))
    with pytest.raises(ValueError, match=re.escape(
            f"{path}: checkpoint was trained with sensor='ray'; this run uses sensor='wedge'")):
        train.load(path, state, config=wedge)
    wider = dataclasses.replace(CFG, hidden=(16,))
    with pytest.raises(ValueError, match=re.escape(
            "checkpoint was trained with hidden=(8,); this run uses hidden=(16,)")):
        train.load(path, train.init(wider)[1], config=wider)
    old = str(tmp_path / "old.npz")
    train.save(old, state)
    train.load(old, state, config=wedge)


def test_damaged_checkpoints_are_named(tmp_path):
    _, state = train.init(CFG)
    path = tmp_path / "ckpt.npz"
    train.save(str(path), state, config=CFG)
    data = path.read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[:3000])  # no zip directory left
    damaged = bytearray(data)
    damaged[200] ^= 0xFF  # inside the first member: its CRC fails on reading
    (tmp_path / "damaged.npz").write_bytes(bytes(damaged))
    for name, says in (("truncated.npz", r"not a readable checkpoint \(BadZipFile"),
                       ("damaged.npz", r"array 'leaf_0000' cannot be read \(.*Bad CRC-32")):
        with pytest.raises(CheckpointError, match=f"{name}: {says}"):
            train.load(str(tmp_path / name), state)
    # Intact archives whose arrays no training writes: text where numbers belong (not
    # "could not convert string to float"), a network of NaN (which would be graded,
    # losing every game), a negative iteration count.
    members = dict(np.load(path))
    first = members["leaf_0000"]
    for name, leaf, says in (
            ("text.npz", ("leaf_0000", np.full(first.shape, "x")),
             "not a readable checkpoint: leaf 0 holds <U1 data, not numbers"),
            ("nan.npz", ("leaf_0000", np.full_like(first, np.nan)),
             "the network's parameters hold NaN or infinity"),
            ("steps.npz", (max(k for k in members if k.startswith("leaf_")), np.int32(-3)),
             "not a readable checkpoint: it counts -3 iterations done")):
        np.savez(tmp_path / name, **{**members, leaf[0]: leaf[1]})
        with pytest.raises(ValueError, match=re.escape(f"{name}: {says}")):
            train.load(str(tmp_path / name), state)


def test_puct_self_play_takes_the_most_visited_move_after_the_temperature_moves(monkeypatch):
    # The search's move, which `play` takes after `temperature_moves`, must be PUCT's
    # most visited action (root noise on), not a sample at temperature 1, in which
    # about 1 move in 13 is not the most visited one.
    cfg = selfplay.SearchConfig(num_simulations=16, kind="puct")
    graphdef, params = network.init_params(ENV.obs_size, hidden=(8,), seed=1)
    real, seen = selfplay.run_search, []

    def recording(*args, **kwargs):
        out = real(*args, **kwargs)
        jax.debug.callback(lambda a, w: seen.append((np.asarray(a), np.asarray(w))),
                           out.action, out.action_weights)
        return out

    monkeypatch.setattr(selfplay, "run_search", recording)
    jax.block_until_ready(selfplay.play(graphdef, ENV, cfg, params, jax.random.PRNGKey(0), 64,
                                        temperature_moves=0))
    jax.effects_barrier()
    assert len(seen) == 2 * ENV.max_turns
    for action, weights in seen:
        # The chosen move has the most visits (ties: any of the tied ones).
        chosen = np.take_along_axis(weights, action[:, None], 1)[:, 0]
        np.testing.assert_array_equal(chosen, weights.max(1))


def test_stop_fn_without_evaluations_is_refused():
    with pytest.raises(ValueError, match="stop_fn is asked after each evaluation"):
        train.train(CFG, None, stop_fn=lambda m: True, progress=False)
    with pytest.raises(ValueError, match="stop_fn is asked after each evaluation"):
        train.train(CFG, 3, eval_fn=lambda p: {}, stop_fn=lambda m: True, progress=False)


def test_a_cached_match_of_other_settings_is_refused(compiled):
    graphdef, _ = compiled
    _, s = train.init(CFG)
    sol, matches = exact.solve(ENV), {}
    evaluate.evaluate(ENV, CFG.search, graphdef, s.params, sol, jax.random.PRNGKey(0), batch=2,
                      matches=matches)
    with pytest.raises(ValueError, match=r"matches\['random'\] was compiled for another.*"
                                         r"batch 2, asked 4"):
        evaluate.evaluate(ENV, CFG.search, graphdef, s.params, sol, jax.random.PRNGKey(0),
                          batch=4, matches=matches)
    # A match compiled without the per-ply callback cannot drive a bar: refused too.
    with pytest.raises(ValueError, match=r"network, batch or progress"):
        evaluate.evaluate(ENV, CFG.search, graphdef, s.params, sol, jax.random.PRNGKey(0),
                          batch=2, matches=matches, progress=True)


def test_evaluation_progress_counts_every_ply_and_changes_no_rate(compiled, capsys):
    """`progress=True` adds a host callback per ply: the bar ends at opponents x 2
    sides x 2 * max_turns plies, and the games (same key) are the same games."""
    graphdef, _ = compiled
    _, s = train.init(CFG)
    sol = exact.solve(ENV)
    run = lambda progress: evaluate.evaluate(ENV, CFG.search, graphdef, s.params, sol,
                                             jax.random.PRNGKey(3), batch=2, progress=progress)
    quiet = run(False)
    capsys.readouterr()
    shown = run(True)
    assert shown == quiet and shown.counts == quiet.counts
    plies = 2 * 2 * ENV.max_turns
    err = capsys.readouterr().err
    assert f"{plies}/{plies}" in err and "evaluate (" in err, err


@pytest.mark.parametrize("kwargs, message", [
    ({"eval_every": 2}, "train: eval_every=2 but no eval_fn to run"),
    ({"eval_every": -1}, "train: eval_every must be an integer >= 0, got -1"),
    ({"max_seconds": -1.0}, "train: max_seconds must be None or a finite number >= 0, got -1.0"),
])
def test_train_refuses_settings_that_would_be_ignored(kwargs, message):
    # Each would otherwise be silently ignored (no evaluation; no time limit).
    with pytest.raises(ValueError, match=re.escape(message)):
        train.train(CFG, 1, progress=False, **kwargs)


# ------------------------------------------------------------------ Ctrl-C in training
def _assert_same_state(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture(scope="module")
def two_iterations():
    """The state after 2 uninterrupted iterations of CFG: an interrupted run's state of
    iteration 2 must be it, bit for bit (so resuming from it continues the run exactly,
    test_checkpoint_resume_is_identical)."""
    return train.train(CFG, 2, progress=False)[1]


def _saved_and_loaded(interrupted: train.Interrupted, path):
    """The interrupted run's state, saved as the CLI does and read back."""
    train.save(str(path), interrupted.state, config=CFG)
    assert train.saved_iteration(str(path)) == int(interrupted.state.step)
    return train.load(str(path), train.init(CFG)[1], config=CFG)


def test_ctrl_c_between_iterations_keeps_the_last_completed_one(two_iterations, tmp_path):
    # Ctrl-C while the callback (or an evaluation) runs after iteration 2: the state of
    # iteration 2 comes back in Interrupted.
    def interrupt(i, state, metrics):
        if i == 1:
            raise KeyboardInterrupt
    with pytest.raises(train.Interrupted) as stop:
        train.train(CFG, 3, callback=interrupt, progress=False)
    assert isinstance(stop.value, KeyboardInterrupt)  # callers that only know Ctrl-C
    assert int(stop.value.state.step) == 2 and len(stop.value.history) == 2
    _assert_same_state(_saved_and_loaded(stop.value, tmp_path / "a.npz"), two_iterations)


def test_ctrl_c_during_an_iteration_waits_for_it(two_iterations, tmp_path, monkeypatch,
                                                  request):
    # A real SIGINT sent from inside the jitted iteration that makes iteration 2. The
    # iteration consumes (donates) its input, so raising at once would lose both
    # states; the interrupt is held until the iteration is done, so iteration 2 comes
    # back (its metrics unrecorded: history holds iteration 1 only).
    import os
    import signal
    # Ctrl-C as in a terminal, also where this runs as a background job (which
    # ignores SIGINT): Python's own handler for the test, the previous one restored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    real = train.make_iteration

    def signalling(cfg, graphdef):
        iteration = real(cfg, graphdef)

        def send(step):
            if int(step) == 1:
                os.kill(os.getpid(), signal.SIGINT)

        def run(state):
            jax.debug.callback(send, state.step)
            return iteration(state)
        return run
    monkeypatch.setattr(train, "make_iteration", signalling)
    with pytest.raises(train.Interrupted) as stop:
        train.train(CFG, 3, progress=False)
    assert int(stop.value.state.step) == 2 and len(stop.value.history) == 1
    # Iteration 2's time is counted though its metrics are not: what a resumed
    # --minutes budget subtracts.
    assert stop.value.train_seconds > stop.value.history[0]["train_seconds"] > 0
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    _assert_same_state(_saved_and_loaded(stop.value, tmp_path / "b.npz"), two_iterations)


def test_train_leaves_the_callers_state_usable():
    """The jitted iteration donates its input: a state passed to train() must not be
    deleted by it ("Array has been deleted"), so the README's load-then-train can
    reuse it."""
    _, s = train.init(CFG)
    _, a, _ = train.train(CFG, 1, state=s, progress=False)
    _, b, _ = train.train(CFG, 1, state=s, progress=False)  # s again, still whole
    assert int(s.step) == 0 and int(a.step) == int(b.step) == 1
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_exploring_starts_that_round_to_none_are_refused_and_rates_cover_played_games():
    """explore_fraction=0.1 of 4 games rounded to no exploring start without a word;
    explore_fraction=1 plays no game from the initial position, whose win rate was
    reported as 0 (0 of max(0, 1))."""
    with pytest.raises(ValueError, match=r"explore_fraction=0.1 of games_per_iter=4 games "
                                         r"rounds to no exploring start"):
        dataclasses.replace(CFG, explore_fraction=0.1)
    for fraction, keys in [(1.0, {"explore_evader_wins"}),
                           (0.5, {"explore_evader_wins", "selfplay_evader_wins"}),
                           (0.0, {"selfplay_evader_wins"})]:
        cfg = dataclasses.replace(CFG, explore_fraction=fraction)
        graphdef, state = train.init(cfg)
        _, metrics = jax.eval_shape(train.make_iteration(cfg, graphdef), state)  # no compile
        assert set(metrics) - {"loss", "policy_loss", "value_loss"} == keys, fraction
