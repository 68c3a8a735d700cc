"""The independent sequence-form LP reference, checked against published numbers.

Truths used here come from the literature or from OpenSpiel, never from this project's
solver code:
  * Kuhn poker value for player 0: -1/18 (Kuhn 1950).
  * Leduc poker value for player 0: -0.0856064 (e.g. OpenSpiel / Lanctot et al.).
  * NashConv of the uniform policy: Kuhn 11/12, Leduc 4.747222222 (OpenSpiel tests).
  * Kuhn equilibria (Kuhn 1950): player 1's strategy is unique; player 0's is a
    one-parameter family in alpha = P(bet | Jack) in [0, 1/3].
  * 2x2 zero-sum matrix game without saddle point: value (ad - bc) / (a + d - b - c).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")
pytest.importorskip("scipy")

try:  # tests/ is on sys.path when it is not a package (pytest's default rootdir mode)
    from reference.sequence_form_lp import (
        EMPTY_SEQUENCE, best_response_value, build_sequence_form, expected_values,
        solve_zero_sum)
except ImportError:  # tests/ is a package
    from tests.reference.sequence_form_lp import (  # type: ignore[no-redef]
        EMPTY_SEQUENCE, best_response_value, build_sequence_form, expected_values,
        solve_zero_sum)

PASS, BET = 0, 1  # Kuhn poker actions


def nash_conv(game, strategies) -> float:
    """sum_p (BR_p - on-policy value_p), by the reference tree walks."""
    evs = expected_values(game, strategies)
    return sum(best_response_value(game, strategies, p) - evs[p] for p in range(2))


def uniform_strategies(sf):
    return tuple(
        {info: {a: 1.0 / len(legal) for a in legal} for info, legal in sf.infoset_actions[p].items()}
        for p in range(2)
    )


@pytest.fixture(scope="module")
def kuhn():
    return pyspiel.load_game("kuhn_poker")


@pytest.fixture(scope="module")
def leduc():
    return pyspiel.load_game("leduc_poker")


@pytest.fixture(scope="module")
def kuhn_solution(kuhn):
    return solve_zero_sum(kuhn)


@pytest.fixture(scope="module")
def leduc_solution(leduc):
    return solve_zero_sum(leduc)


# ---------------------------------------------------------------- game values (LP)


def test_kuhn_value(kuhn_solution):
    assert kuhn_solution.value == pytest.approx(-1.0 / 18.0, abs=1e-7)


def test_leduc_value(leduc_solution):
    assert leduc_solution.value == pytest.approx(-0.0856064, abs=1e-6)


def test_realization_plans_satisfy_constraints(leduc_solution):
    sf = leduc_solution.sequence_form
    for p, (M, rhs) in enumerate(((sf.E, sf.e), (sf.F, sf.f))):
        plan = leduc_solution.realization_plans[p]
        z = np.array([plan[s] for s in sf.sequences[p]])
        assert plan[EMPTY_SEQUENCE] == pytest.approx(1.0, abs=1e-9)
        assert np.abs(M @ z - rhs).max() < 1e-8
        assert z.min() > -1e-9
    # The bilinear payoff of the two plans is the game value.
    x = np.array([leduc_solution.realization_plans[0][s] for s in sf.sequences[0]])
    y = np.array([leduc_solution.realization_plans[1][s] for s in sf.sequences[1]])
    assert x @ (sf.A @ y) == pytest.approx(leduc_solution.value, abs=1e-7)


def test_kuhn_equilibrium_matches_published_family(kuhn_solution):
    s0, s1 = kuhn_solution.strategies
    # Player 1 (second to act) has a unique equilibrium strategy.  Info strings are
    # "<card><history>" with cards J=0, Q=1, K=2.
    expected_bet = {"0p": 1 / 3, "1p": 0.0, "2p": 1.0, "0b": 0.0, "1b": 1 / 3, "2b": 1.0}
    for info, bet in expected_bet.items():
        assert s1[info][BET] == pytest.approx(bet, abs=1e-6), info
    # Player 0: bet J with alpha in [0, 1/3], K with 3 alpha, never bet Q; after
    # pass-bet: fold J, call Q with alpha + 1/3, call K (where reachable).
    alpha = s0["0"][BET]
    assert -1e-9 <= alpha <= 1 / 3 + 1e-9
    assert s0["1"][BET] == pytest.approx(0.0, abs=1e-6)
    assert s0["2"][BET] == pytest.approx(3 * alpha, abs=1e-6)
    assert s0["0pb"][BET] == pytest.approx(0.0, abs=1e-6)
    assert s0["1pb"][BET] == pytest.approx(alpha + 1 / 3, abs=1e-6)
    if s0["2"][PASS] > 1e-6:  # "2pb" is unreachable when alpha = 1/3
        assert s0["2pb"][BET] == pytest.approx(1.0, abs=1e-6)


def test_matrix_game_closed_form_plain_python():
    a, b, c, d = 2.0, -1.0, -1.0, 1.0
    sol = solve_zero_sum(MatrixGame([[(a, -a), (b, -b)], [(c, -c), (d, -d)]]))
    assert sol.value == pytest.approx((a * d - b * c) / (a + d - b - c), abs=1e-9)
    # Equilibrium row mix: p(row 0) = (d - c) / (a + d - b - c).
    assert sol.strategies[0]["p0"][0] == pytest.approx((d - c) / (a + d - b - c), abs=1e-9)


# ---------------------------------------------------------------- exploitability


def test_uniform_nash_conv_kuhn(kuhn, kuhn_solution):
    uniform = uniform_strategies(kuhn_solution.sequence_form)
    assert nash_conv(kuhn, uniform) == pytest.approx(11.0 / 12.0, abs=1e-10)


def test_uniform_nash_conv_leduc(leduc, leduc_solution):
    uniform = uniform_strategies(leduc_solution.sequence_form)
    assert nash_conv(leduc, uniform) == pytest.approx(4.747222222, abs=1e-8)


@pytest.mark.parametrize("name", ["kuhn", "leduc"])
def test_lp_equilibrium_is_unexploitable(name, request):
    game = request.getfixturevalue(name)
    sol = request.getfixturevalue(f"{name}_solution")
    br = [best_response_value(game, sol.strategies, p) for p in range(2)]
    assert (br[0] + br[1]) / 2 < 1e-7
    assert expected_values(game, sol.strategies)[0] == pytest.approx(sol.value, abs=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_response_matches_openspiel_on_random_policies(kuhn, seed):
    from open_spiel.python import policy as policy_lib
    from open_spiel.python.algorithms import exploitability

    rng = np.random.default_rng(seed)
    tabular = policy_lib.TabularPolicy(kuhn)
    probs = rng.random(tabular.action_probability_array.shape) * tabular.legal_actions_mask
    tabular.action_probability_array = probs / probs.sum(axis=1, keepdims=True)
    # Map to {info_string: {action: prob}} through the policy's own info-state strings.
    strategies = tuple(
        {
            info: {
                a: float(tabular.action_probability_array[tabular.state_lookup[info], a])
                for a in np.flatnonzero(tabular.legal_actions_mask[tabular.state_lookup[info]])
            }
            for info in tabular.states_per_player[p]
        }
        for p in range(2)
    )
    ours_ev = expected_values(kuhn, strategies)
    improvements = [best_response_value(kuhn, strategies, p) - ours_ev[p] for p in range(2)]
    theirs = exploitability.nash_conv(kuhn, tabular, return_only_nash_conv=False)
    np.testing.assert_allclose(improvements, theirs.player_improvements, atol=1e-10)
    assert sum(improvements) == pytest.approx(theirs.nash_conv, abs=1e-10)
    cpp_policy = policy_lib.python_policy_to_pyspiel_policy(tabular)
    assert sum(improvements) / 2 == pytest.approx(pyspiel.exploitability(kuhn, cpp_policy), abs=1e-10)


def test_best_response_general_sum():
    # Bimatrix game (simultaneous, via hidden sequential moves); both play (1/4, 3/4).
    payoffs = [[(3.0, 1.0), (0.0, 0.0)], [(0.0, 0.0), (1.0, 3.0)]]
    game = MatrixGame(payoffs)
    mix = {0: 0.25, 1: 0.75}
    strategies = ({"p0": mix}, {"p1": mix})
    # Row 0 earns 3 * 1/4, row 1 earns 1 * 3/4; column 0 earns 1/4, column 1 earns 9/4.
    assert best_response_value(game, strategies, 0) == pytest.approx(0.75)
    assert best_response_value(game, strategies, 1) == pytest.approx(9 / 4)
    ev = expected_values(game, strategies)
    assert ev == pytest.approx([3 / 16 + 9 / 16, 1 / 16 + 27 / 16])


# ---------------------------------------------------------------- input validation


def test_rejects_non_two_player():
    with pytest.raises(ValueError, match="2-player"):
        build_sequence_form(pyspiel.load_game("kuhn_poker", {"players": 3}))


def test_rejects_general_sum():
    with pytest.raises(ValueError, match="zero-sum"):
        build_sequence_form(MatrixGame([[(1.0, 1.0), (0.0, 0.0)], [(0.0, 0.0), (1.0, 1.0)]]))


def test_rejects_imperfect_recall():
    with pytest.raises(ValueError, match="imperfect recall"):
        build_sequence_form(ForgetfulGame())


# ---------------------------------------------------------------- plain-Python games
# Deliberately without `child`: the reference must fall back to clone + apply_action.


class _MatrixState:
    def __init__(self, payoffs):
        self.payoffs, self.moves = payoffs, []

    def current_player(self):
        return -4 if len(self.moves) == 2 else len(self.moves)

    def is_terminal(self):
        return len(self.moves) == 2

    def legal_actions(self):
        return [0, 1]

    def apply_action(self, action):
        self.moves.append(action)

    def clone(self):
        return copy.deepcopy(self)

    def returns(self):
        return list(self.payoffs[self.moves[0]][self.moves[1]])

    def information_state_string(self, player):
        return f"p{player}"  # player 1 does not see player 0's move


class MatrixGame:
    def __init__(self, payoffs):
        self.payoffs = payoffs

    def num_players(self):
        return 2

    def new_initial_state(self):
        return _MatrixState(self.payoffs)


class _ForgetfulState(_MatrixState):
    """Player 0 moves twice and forgets its first move; player 1 never moves."""

    def current_player(self):
        return -4 if len(self.moves) == 2 else 0

    def returns(self):
        return [1.0, -1.0] if self.moves[0] == self.moves[1] else [-1.0, 1.0]

    def information_state_string(self, player):
        return f"round{len(self.moves)}"


class ForgetfulGame(MatrixGame):
    def __init__(self):
        super().__init__(None)

    def new_initial_state(self):
        return _ForgetfulState(None)
