"""Pursuit-evasion rules (games/pursuit_evasion.py) against hand-worked positions and
an independent plain-Python statement of the rules."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsolve.alphazero import exact
from jaxsolve.games import pursuit_evasion as pe

DEFAULT = pe.Params()


@pytest.fixture(scope="module")
def step_fn():
    return jax.jit(pe.step, static_argnums=0)


def play(params, actions, step_fn):
    state = pe.init(params, jax.random.key(0))
    for a in actions:
        state = step_fn(params, state, jnp.int32(a))
    return state


def test_initial_state_is_the_default_observation():
    s = pe.init(DEFAULT, jax.random.key(0))
    assert s.observation.shape == (35,)
    expected = np.zeros(35, np.float32)
    expected[12] = 1  # evader at the centre, cell 2 * 5 + 2
    expected[25] = 1  # sensor N
    expected[33] = 1.0  # 20 / 20 turns remaining
    expected[34] = 0.0  # evader to move
    np.testing.assert_array_equal(s.observation, expected)
    assert int(s.current_player) == pe.EVADER and not bool(s.terminated)
    assert s.legal_action_mask.tolist() == [True] * 9


def test_move_then_detect_along_the_ray(step_fn):
    # Evader steps N to (2, 1); the defender's N ray covers (2, 1) and (2, 0).
    s = play(DEFAULT, [0], step_fn)
    assert int(s.cell) == 7 and int(s.current_player) == pe.DEFENDER
    assert s.legal_action_mask.tolist() == [True] * 8 + [False]
    assert float(s.observation[34]) == 1.0
    hit = step_fn(DEFAULT, s, jnp.int32(0))
    miss = step_fn(DEFAULT, s, jnp.int32(1))
    assert int(hit.detections) == 1 and int(miss.detections) == 0
    assert int(hit.turn) == 1 and float(hit.observation[33]) == pytest.approx(19 / 20)
    assert int(hit.sensor) == 0 and float(hit.observation[25]) == 1.0
    assert int(miss.sensor) == 1 and float(miss.observation[26]) == 1.0


def test_clamping_and_blind_cells(step_fn):
    # From the corner (0, 0) moving NW stays put; the knight-offset cell (3, 0) is seen
    # by no ray from the centre, the corner (0, 0) by the NW ray (range 2 <= 3).
    p = pe.Params(evader_start=(0, 0))
    s = play(p, [7], step_fn)
    assert int(s.cell) == 0
    _, _, seen, _, _ = pe.tables(DEFAULT)
    assert not seen[0 * 5 + 3].any() and not seen[12].any()
    assert seen[0, 7] and seen[0].sum() == 1
    assert seen.sum() == 16  # 8 rays x 2 cells inside a 5x5 grid
    _, _, wedge, _, _ = pe.tables(pe.Params(sensor="wedge"))
    assert wedge.sum() == 24 and wedge[7].tolist() == [1, 1, 0, 0, 0, 0, 0, 1]


def test_allow_stay_and_turn_rate_masks(step_fn):
    s = pe.init(pe.Params(allow_stay=False), jax.random.key(0))
    assert s.legal_action_mask.tolist() == [True] * 8 + [False]
    s = play(pe.Params(turn_rate=1), [8], step_fn)  # sensor N: may point NW, N, NE
    assert s.legal_action_mask.tolist() == [1, 1, 0, 0, 0, 0, 0, 1, 0]


def test_threshold_is_strict_and_terminal_is_absorbing(step_fn):
    # 10 detections in 20 turns is a rate of exactly 0.5: not above it, evader wins.
    p = pe.Params(evader_start=(2, 1))
    s = play(p, [8, 0] * 10 + [8, 1] * 9 + [8], step_fn)
    assert int(s.turn) == 19
    s = step_fn(p, s, jnp.int32(1))
    assert bool(s.terminated) and int(s.detections) == 10
    assert s.rewards.tolist() == [1.0, -1.0] and not s.legal_action_mask.any()
    s2 = play(p, [8, 0] * 11 + [8, 1] * 9, step_fn)
    assert int(s2.detections) == 11 and s2.rewards.tolist() == [-1.0, 1.0]
    after = step_fn(p, s2, jnp.int32(0))
    assert after.rewards.tolist() == [0.0, 0.0] and bool(after.terminated)
    assert int(after.detections) == 11 and int(after.turn) == 20
    for field in ("current_player", "observation", "legal_action_mask", "cell", "sensor"):
        np.testing.assert_array_equal(getattr(after, field), getattr(s2, field), err_msg=field)


@pytest.mark.parametrize("threshold, turns, allowed", [
    # The rule, detections / turns > threshold, worked out by hand:
    (0.5, 20, 10),            # 10/20 = 0.5 is not above 0.5; 11/20 is
    (0.5, 2, 1),              # 1/2 is not above 0.5
    (0.4999999999, 2, 0),     # 1/2 > 0.4999999999: a single detection loses
    (0.5 - 1e-12, 2, 0),      # likewise, closer still to 1/2
    (0.29, 100, 29),          # 29/100 > 0.29 is False in float64 (both are 0.29), yet
                              # 0.29 * 100 = 28.999999999999996, so a bare floor gives 28
    (0.0, 5, 0),              # any detection exceeds 0
    (0.99, 3, 2),             # 2/3 is not above 0.99, 3/3 is
    (1 / 6, 6, 1),            # goal_variant(5)'s threshold: 1/6 is not above itself
])
def test_max_detections_follows_the_strict_rule(threshold, turns, allowed):
    p = pe.Params(grid_size=3, max_turns=turns, threshold=threshold)
    assert p.max_detections == allowed
    # And literally the rule's comparison on either side of the boundary.
    assert not allowed / turns > threshold and (allowed + 1) / turns > threshold


def test_rules_compare_thresholds_by_the_detections_they_allow():
    # Over 3 turns, 1/3 and 0.34 both allow one detection (1/3 exceeds neither, 2/3
    # both), 0.333 none (1/3 exceeds it): the first two are one game.
    third, above, below = (pe.Params(grid_size=3, max_turns=3, threshold=t)
                           for t in (1 / 3, 0.34, 0.333))
    assert third != above and third.rules() == above.rules()
    assert third.rules() != below.rules()
    assert repr(below.rules()["threshold"]) == "0.333 (at most 0 detections)"
    # The centre, given or left out, is one start.
    assert pe.Params(evader_start=(2, 2)).rules() == pe.Params().rules()
    assert pe.Params(evader_start=(2, 1)).rules() != pe.Params().rules()
    # A solution is of the game with those rules, whichever threshold was written.
    solution = exact.solve(third)
    exact.check_solution(solution, above, "test")
    with pytest.raises(ValueError, match=re.escape(
            "the solution is of the game with threshold=0.3333333333333333 (at most 1 "
            "detection); this game has threshold=0.333 (at most 0 detections)")):
        exact.check_solution(solution, below, "test")


def test_goal_row(step_fn):
    p = pe.goal_variant(5)
    assert p.max_turns == 6 and p.max_detections == 1 and p.obs_size == 37
    # Walk straight S from (2, 0) to (2, 4) and wait; defender looks E (never sees).
    s = play(p, [4, 1, 4, 2, 4, 2, 4, 2, 8, 2, 8, 2], step_fn)
    assert bool(s.terminated) and int(s.cell) == 22 and s.rewards.tolist() == [1, -1]
    s = play(p, [4, 1, 4, 2, 4, 2, 0, 2, 8, 2, 8, 2], step_fn)
    assert s.rewards.tolist() == [-1, 1]  # not on the goal row at the end


# ---------------------------------------------------------------- independent rules
def ref_step(params, st, a):
    """Plain-Python rules: st = (x, y, sensor, turn, detections, player)."""
    g, c = params.grid_size, params.grid_size // 2
    x, y, s, t, k, p = st
    if p == 0:
        if a < 8:
            x = min(g - 1, max(0, x + pe.DX[a]))
            y = min(g - 1, max(0, y + pe.DY[a]))
        return (x, y, s, t, k, 1)
    if params.sensor == "ray":
        cells = {(c + r * pe.DX[a], c + r * pe.DY[a]) for r in range(1, params.sensor_range + 1)}
    else:
        cells = {(c + pe.DX[(a + j) % 8], c + pe.DY[(a + j) % 8]) for j in (-1, 0, 1)}
    return (x, y, a, t + 1, k + ((x, y) in cells), 0)


def ref_legal(params, st):
    if st[5] == 0:
        return list(range(9)) if params.allow_stay else list(range(8))
    return [d for d in range(8) if min(abs(d - st[2]), 8 - abs(d - st[2])) <= params.turn_rate]


def ref_outcome(params, st):
    x, y, _, t, k, _ = st
    ok = k / t <= params.threshold and (params.goal_row is None or y == params.goal_row)
    return 1.0 if ok else -1.0


@pytest.mark.parametrize("params", [pe.Params(), pe.goal_variant(5),
                                    pe.Params(sensor="wedge", turn_rate=2, allow_stay=False)])
def test_random_playouts_match_reference(params):
    batch = 64
    init = jax.vmap(lambda k: pe.init(params, k))
    step = jax.jit(jax.vmap(lambda s, a: pe.step(params, s, a)))
    rand = jax.jit(jax.vmap(pe.random_action))
    state = init(jax.random.split(jax.random.key(1), batch))
    x0, y0 = params.start
    ref = [(x0, y0, 0, 0, 0, 0)] * batch
    keys = jax.random.split(jax.random.key(2), 2 * params.max_turns)
    for i in range(2 * params.max_turns):
        mask = np.asarray(state.legal_action_mask)
        for b in range(batch):
            assert sorted(np.flatnonzero(mask[b])) == ref_legal(params, ref[b])
        a = rand(jax.random.split(keys[i], batch), state)
        state = step(state, a)
        ref = [ref_step(params, r, int(ai)) for r, ai in zip(ref, np.asarray(a))]
        g = params.grid_size
        assert np.asarray(state.cell).tolist() == [r[1] * g + r[0] for r in ref]
        assert np.asarray(state.detections).tolist() == [r[4] for r in ref]
    assert np.asarray(state.terminated).all()
    outcome = [ref_outcome(params, r) for r in ref]
    np.testing.assert_array_equal(np.asarray(state.rewards)[:, 0], outcome)
    np.testing.assert_array_equal(np.asarray(state.rewards)[:, 1], -np.array(outcome))


# ------------------------------------------------------------------ exploring starts
def ref_reachable(params):
    """Plain-Python breadth-first search with `ref_step`: for each turn t, the
    positions (k, x, y, sensor) with the evader to move, each with one action sequence
    from the initial position that reaches it."""
    x0, y0 = params.start
    layer = {(x0, y0, 0, 0, 0, 0): ()}
    out = []
    for _ in range(params.max_turns):
        out.append({(st[4], st[0], st[1], st[2]): path for st, path in layer.items()})
        nxt = {}
        for st, path in layer.items():
            for a in ref_legal(params, st):
                mid = ref_step(params, st, a)
                for d in ref_legal(params, mid):
                    nxt.setdefault(ref_step(params, mid, d), path + (a, d))
        layer = nxt
    return out


SMALL = [pe.goal_variant(3), pe.goal_variant(5),
         pe.Params(grid_size=3, max_turns=4, threshold=0.25, sensor="wedge", turn_rate=1,
                   allow_stay=False, evader_start=(0, 0))]


@pytest.mark.parametrize("params", SMALL)
def test_reachable_table_matches_search_over_move_sequences(params):
    table = pe.reachable(params)
    g = params.grid_size
    for t, states in enumerate(ref_reachable(params)):
        want = {(k, y * g + x, s) for k, x, y, s in states}
        assert set(zip(*np.nonzero(table[t]))) == want, t


@pytest.mark.parametrize("params", SMALL[::2])
def test_exploring_starts_are_reachable_live_positions(params):
    """Every exploring start is a position legal play reaches, with the evader to move
    and the game still winnable on detections, identical (every field, observation
    and legal mask included) to the state reached by replaying moves from `init`; and
    the draws cover every such position."""
    n = 8192
    starts = jax.jit(jax.vmap(lambda k: pe.exploring_start(params, k)))(
        jax.random.split(jax.random.key(3), n))
    ref = ref_reachable(params)
    g = params.grid_size
    turn, k, cell, sensor = (np.asarray(a) for a in (starts.turn, starts.detections,
                                                     starts.cell, starts.sensor))
    assert (np.asarray(starts.current_player) == pe.EVADER).all()
    assert not np.asarray(starts.terminated).any() and not np.asarray(starts.rewards).any()
    drawn = {(int(t), int(kk), int(c) % g, int(c) // g, int(s))
             for t, kk, c, s in zip(turn, k, cell, sensor)}
    live = {(t,) + st for t, states in enumerate(ref) for st in states
            if st[0] <= params.max_detections}
    assert drawn == live
    # Replay each position's move sequence from the initial position.
    step = jax.jit(lambda s, a: pe.step(params, s, a))
    for i in np.unique(np.array([turn, k, cell, sensor]).T, axis=0, return_index=True)[1]:
        t, kk, c, s = int(turn[i]), int(k[i]), int(cell[i]), int(sensor[i])
        state = pe.init(params, jax.random.key(0))
        for a in ref[t][(kk, c % g, c // g, s)]:
            state = step(state, jnp.int32(a))
        for name, want in vars(state).items():
            np.testing.assert_array_equal(np.asarray(getattr(starts, name)[i]), np.asarray(want),
                                          err_msg=name)


def test_exploring_start_turns_are_uniform():
    params = pe.goal_variant(5)
    turns = jax.jit(jax.vmap(lambda k: pe.exploring_start(params, k).turn))(
        jax.random.split(jax.random.key(4), 6000))
    counts = np.bincount(np.asarray(turns), minlength=params.max_turns)
    assert counts.shape == (6,) and np.all(np.abs(counts - 1000) < 150)  # ~5 sigma


# ------------------------------------------------------------ parameters checked when built
@pytest.mark.parametrize("fields, message", [
    # The detection rate lies in [0, 1]: below 0 every game is the defender's (the
    # evader may be seen -10 times), at 1 or above the sensor plays no part.
    (dict(threshold=-0.5), "threshold must be a number in [0, 1), got -0.5"),
    (dict(threshold=1.5), "threshold must be a number in [0, 1), got 1.5"),
    (dict(threshold=1.0), "threshold must be a number in [0, 1), got 1.0"),
    (dict(threshold=float("nan")), "threshold must be a number in [0, 1), got nan"),
    (dict(threshold="0.5"), "threshold must be a number in [0, 1), got '0.5'"),
    (dict(sensor_range=0), "sensor_range must be an integer >= 1, got 0"),
    (dict(sensor_range=-2), "sensor_range must be an integer >= 1, got -2"),
    (dict(grid_size=5.0), "grid_size must be an odd integer >= 3, got 5.0"),
    (dict(grid_size=4), "grid_size must be an odd integer >= 3, got 4"),
    (dict(max_turns=2.5), "max_turns must be an integer >= 1, got 2.5"),
    (dict(turn_rate=1.5), "turn_rate must be an integer in [0, 4] (eighths of a turn"),
    (dict(turn_rate=5), "turn_rate must be an integer in [0, 4] (eighths of a turn"),
    (dict(evader_start=(1,)), "evader_start must be None or an (x, y) pair of integers on "
                              "the 5x5 grid, got (1,)"),
    (dict(evader_start=(1.5, 2)), "evader_start must be None or an (x, y) pair"),
    (dict(evader_start=(5, 0)), "evader_start must be None or an (x, y) pair"),
    (dict(goal_row=5), "goal_row must be None or an integer in [0, 4] (a row), got 5"),
    (dict(allow_stay="no"), "allow_stay must be True or False, got 'no'"),
    (dict(sensor="cone"), "sensor must be one of 'ray', 'wedge', got 'cone'"),
])
def test_params_refuse_bad_fields_by_name(fields, message):
    with pytest.raises(ValueError, match=re.escape(f"Params: {message}")):
        pe.Params(**fields)


def test_goal_variant_of_one_turn_names_the_threshold_it_would_default_to():
    # The error names max_turns, not "threshold ... got 1.0", a parameter the caller
    # never gave.
    with pytest.raises(ValueError, match=re.escape("goal_variant: max_turns=1 makes the "
                                                   "default threshold 1 / max_turns = 1")):
        pe.goal_variant(5, max_turns=1)
    assert pe.goal_variant(5, max_turns=1, threshold=0.0).max_detections == 0


def test_step_on_a_batch_without_vmap_says_to_vmap():
    env = pe.goal_variant(3)
    batch = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.key(0), 4))
    with pytest.raises(ValueError, match=re.escape(
            "step: takes one game's state and a [] action, got state.cell of shape (4,)")):
        pe.step(env, batch, jnp.zeros(4, jnp.int32))
    stepped = jax.vmap(functools.partial(pe.step, env))(batch, jnp.full(4, 4, jnp.int32))
    assert stepped.cell.shape == (4,)


def test_params_store_canonical_values():
    """NumPy integers and a list start are accepted and stored as Python ints and a
    tuple: the Params stays hashable (a static jit argument) and equal to the plain one."""
    p = pe.Params(grid_size=np.int64(3), max_turns=np.int32(2), evader_start=[1, 0],
                  threshold=np.float32(0.5), allow_stay=np.bool_(True))
    plain = pe.Params(grid_size=3, max_turns=2, evader_start=(1, 0), threshold=0.5)
    assert p == plain and hash(p) == hash(plain)
    assert type(p.grid_size) is int and p.evader_start == (1, 0) and type(p.threshold) is float
    assert int(jax.jit(pe.init, static_argnums=0)(p, jax.random.key(0)).cell) == 1
