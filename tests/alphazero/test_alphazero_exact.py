"""The backward-induction solver against a brute-force plain-Python minimax."""

import dataclasses
import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsolve.alphazero import exact
from jaxsolve.games import pursuit_evasion as pe
from test_alphazero_env import ref_legal, ref_outcome, ref_step

TINY = [
    pe.Params(grid_size=3, max_turns=3, threshold=0.5),
    pe.Params(grid_size=3, max_turns=4, threshold=0.25, sensor="wedge", allow_stay=False),
    pe.Params(grid_size=3, max_turns=3, threshold=0.34, turn_rate=1, evader_start=(1, 0),
              goal_row=2),
    pe.Params(grid_size=5, max_turns=3, threshold=0.0, sensor="wedge", turn_rate=2,
              evader_start=(2, 0), goal_row=4),
    # A threshold just below 1/2: the brute force's k / t <= threshold allows 0.
    pe.Params(grid_size=3, max_turns=2, threshold=0.4999999999, evader_start=(1, 0),
              goal_row=2),
]


def brute_force(params):
    @functools.lru_cache(maxsize=None)
    def value(st):  # evader-side minimax value
        if st[3] == params.max_turns:
            return ref_outcome(params, st)
        vals = [value(ref_step(params, st, a)) for a in ref_legal(params, st)]
        return max(vals) if st[5] == 0 else min(vals)
    return value


@pytest.mark.parametrize("params", TINY)
def test_every_state_matches_brute_force(params):
    sol = exact.solve(params)
    value = brute_force(params)
    g = params.grid_size
    ve, vd = np.asarray(sol.value_evader), np.asarray(sol.value_defender)
    for t in range(params.max_turns):
        for k in range(t + 1):
            for c in range(g * g):
                for s in range(8):
                    st = (c % g, c // g, s, t, k, 0)
                    assert ve[t, k, c, s] == value(st), st
                    assert vd[t, k, c, s] == value(st[:5] + (1,)), st
    x, y = params.start
    assert float(sol.root_value) == value((x, y, 0, 0, 0, 0))


def test_a_threshold_just_below_one_half_makes_one_detection_lose():
    # By hand: on 3x3 the evader starts at (1, 0) and must stand on row 2 after two
    # defender moves, so it moves to row 1, then to row 2. Every ray sees exactly the
    # one neighbour of the centre in its direction (turn_rate 4: any direction), so its
    # cell on row 2 - a neighbour of the centre - is seen at the second defender move
    # whatever it does, while going through the unseen centre avoids the first. Best
    # play thus gives exactly one detection in 2 turns: the evader wins iff 1/2 does
    # not exceed the threshold (the rule is `detections / turns > threshold`). A brute
    # force over every move sequence agrees: -1, +1.
    def game(threshold):
        return pe.Params(grid_size=3, max_turns=2, threshold=threshold,
                         evader_start=(1, 0), goal_row=2)
    assert float(exact.solve(game(0.4999999999)).root_value) == -1.0
    assert float(exact.solve(game(0.5)).root_value) == 1.0


def test_default_game_is_a_forced_evader_win():
    # By hand: no ray of the centre-mounted sensor covers the centre, so "stay" forever
    # gives 0 detections. The exact solver agrees, for both sensors.
    assert float(exact.solve(pe.Params()).root_value) == 1.0
    assert float(exact.solve(pe.Params(sensor="wedge")).root_value) == 1.0
    assert exact.best_vs_random(pe.Params(), pe.EVADER) == 1.0
    # A random evader that stays at the centre all 20 turns, probability (1/9)^20 > 0,
    # is never seen: no defender wins every game against random play.
    assert exact.best_vs_random(pe.Params(), pe.DEFENDER) < 1.0


def test_goal_variant_needs_precise_play():
    p = pe.goal_variant(5)
    sol = exact.solve(p)
    assert float(sol.root_value) == 1.0
    moves = np.asarray(sol.optimal_moves(pe.EVADER))[0, 0, 2, 0]
    assert 0 < moves.sum() < 9  # some first moves already lose
    # Random play rarely wins it: the exact random-vs-random probability (backward
    # induction over the state space) against random games played out through the
    # environment's own step, a separate code path, within 5 standard errors.
    exact_p = exact.random_vs_random(p)
    n = 4096
    step = jax.vmap(functools.partial(pe.step, p))

    def ply(state, key):
        action = jax.vmap(pe.random_action)(jax.random.split(key, n), state)
        return step(state, action), None

    state = jax.vmap(lambda k: pe.init(p, k))(jax.random.split(jax.random.key(0), n))
    final, _ = jax.lax.scan(ply, state, jax.random.split(jax.random.key(1), 2 * p.max_turns))
    assert bool(final.terminated.all())
    wins = float(jnp.mean(final.rewards[:, pe.EVADER] > 0))
    assert abs(wins - exact_p) < 5 * np.sqrt(max(exact_p * (1 - exact_p), 1 / n) / n)
    assert exact_p < 0.1


def test_best_vs_random_on_a_hand_case():
    # 3x3, one turn, ray sensor: the evader is seen unless it stays at the centre.
    # Defender vs random evader: 8 of 9 moves leave the centre, and it then points
    # at the evader: 8/9. Evader vs random defender: stay, always wins.
    p = pe.Params(grid_size=3, max_turns=1, threshold=0.0)
    assert exact.best_vs_random(p, pe.DEFENDER) == pytest.approx(8 / 9)
    assert exact.best_vs_random(p, pe.EVADER) == 1.0
    # Random vs random: the evader wins at the centre (1/9) or when missed (8/9 * 7/8).
    assert exact.random_vs_random(p) == pytest.approx(1 / 9 + 8 / 9 * 7 / 8)


def test_mistakes_and_state_value_under_jit():
    p = pe.goal_variant(5)
    sol = exact.solve(p)
    s0 = pe.init(p, jax.random.key(0))
    batch = jax.tree.map(lambda x: jnp.stack([x] * 9), s0)
    mistakes = jax.jit(jax.vmap(lambda s, a: exact.is_mistake(sol, p, s, a)))(
        batch, jnp.arange(9))
    optimal = np.asarray(sol.optimal_moves(pe.EVADER))[0, 0, 2, 0]
    np.testing.assert_array_equal(np.asarray(mistakes), ~optimal)
    assert float(jax.jit(lambda s: exact.state_value(sol, p, s))(s0)) == 1.0


def test_a_solution_of_another_game_is_refused():
    """Out-of-range gathers clamp, so a 5x5 solution grading a 3x3 game would give a
    mistake rate of 0 without a word; a solution of the same size but other rules
    would grade it wrongly. The solved Params, or failing that the shapes, say so."""
    small = pe.Params(grid_size=3, max_turns=2)
    s0 = pe.init(small, jax.random.key(0))
    with pytest.raises(ValueError, match=re.escape(
            "state_value: the solution is of the game with grid_size=5, max_turns=3, "
            "evader_start=(2, 2); this game has grid_size=3, max_turns=2, "
            "evader_start=(1, 1)")):
        exact.state_value(exact.solve(pe.Params(max_turns=3)), small, s0)
    with pytest.raises(ValueError, match=re.escape(
            "is_mistake: the solution is of the game with sensor='wedge'; this game has "
            "sensor='ray'")):
        exact.is_mistake(exact.solve(dataclasses.replace(small, sensor="wedge")), small, s0, 0)
    by_hand = dataclasses.replace(exact.solve(pe.Params(max_turns=3)), params=None)
    with pytest.raises(ValueError, match=re.escape(
            "state_value: solution.value_evader has shape (4, 5, 25, 8), this game's is "
            "(3, 4, 9, 8)")):
        exact.state_value(by_hand, small, s0)


@pytest.mark.parametrize("side", [2, -1, 0.5, "evader"])
def test_best_vs_random_names_a_bad_side(side):
    # Any side but 0 or 1 is refused, not read as the defender's.
    with pytest.raises(ValueError, match=r"best_vs_random: side must be an integer in \[0, 1\] "
                                         r"\(0 the evader, 1 the defender\), got"):
        exact.best_vs_random(pe.Params(grid_size=3, max_turns=1), side)


def test_a_game_beyond_max_bytes_is_refused_before_allocating():
    # Unlimited, --grid 61 would end in RESOURCE_EXHAUSTED inside JAX and the base rules
    # on 301x301 in NumPy's _ArrayMemoryError, and max_turns=10**6 would be accepted.
    small = pe.Params(grid_size=3, max_turns=2)
    need = exact.estimate_bytes(small)
    # By hand from the docstring: a slab is 4 B x K=4 x C=9 x S=8 = 1152 B; the sweep
    # holds 20T+1 = 41 slabs plus 6 x 9 of work (95); solve adds the JAX copies (41)
    # and the staging copy of one q array (9T = 18): 154 slabs.
    assert need == 154 * 1152
    assert exact.estimate_bytes(small, solution=False) == 95 * 1152
    with pytest.raises(ValueError, match=re.escape(
            f"solve: the game with grid_size=3, max_turns=2 has 288 (detections, cell, "
            f"direction) states per turn; solving it needs about 173.2 KiB, more than "
            f"max_bytes=172.2 KiB. Raise max_bytes if that fits (solve(..., "
            f"max_bytes={need:_}))")):
        exact.solve(small, max_bytes=need - 1024)
    for call in (functools.partial(exact.best_vs_random, small, pe.EVADER),
                 functools.partial(exact.random_vs_random, small)):
        with pytest.raises(ValueError, match=r"(best|random)_vs_random: .*more than "
                                             r"max_bytes=1\.0 KiB"):
            call(max_bytes=1024)
    # Exactly the budget it needs is enough, and solves the game right.
    x, y = small.start
    solved = exact.solve(small, max_bytes=need)
    assert float(solved.root_value) == brute_force(small)((x, y, 0, 0, 0, 0))
    with pytest.raises(ValueError, match=r"solve: .*max_turns=1000000 .*more than "
                                         r"max_bytes=4\.00 GiB"):
        exact.solve(pe.Params(max_turns=10**6))
    with pytest.raises(ValueError, match=r"solve: max_bytes must be an integer >= 1, got 2\.5"):
        exact.solve(small, max_bytes=2.5)


def test_every_game_the_repo_solves_fits_the_default():
    # The largest: 11x11 with the base rules (20 turns) and the 11x11 goal variant.
    for params in (pe.Params(grid_size=11), pe.goal_variant(11)):
        assert exact.estimate_bytes(params) < exact.DEFAULT_MAX_BYTES / 40
