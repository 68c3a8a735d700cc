"""General-sum and n-player evaluation against references nobody here wrote:
OpenSpiel's per-player best-response gains, and the independent tree-walk reference
in tests/reference (which shares no code with jaxsolve)."""

import numpy as np
import pytest

import jaxsolve
from conftest import BEST_RESPONSE_VALUES, POLICY_VALUE, builtin_tree
from jaxsolve import games

# OpenSpiel's and the reference's values to 1e-12: float64.
pytestmark = pytest.mark.float64

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python.algorithms import exploitability as os_exploitability  # noqa: E402
from open_spiel.python.algorithms import expected_game_score  # noqa: E402

from jaxsolve.openspiel import to_tabular_policy  # noqa: E402


def _random_policy(tree, seed):
    rng = np.random.default_rng(seed)
    p = np.where(tree.legal, rng.uniform(0.05, 1.0, np.shape(tree.legal)), 0.0)
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("name", ["matrix_pd", "matrix_bos"])
def test_simultaneous_general_sum_game_per_player_gains_equal_openspiel(name):
    # A simultaneous-move pyspiel game is accepted as it is (turn-based conversion).
    game = pyspiel.load_game(name)
    tree = jaxsolve.compile_game(game)
    turn_based = pyspiel.convert_to_turn_based(game)
    for seed in range(3):
        policy = _random_policy(tree, seed)
        tabular = to_tabular_policy(tree, turn_based, policy)
        ref = os_exploitability.nash_conv(turn_based, tabular, return_only_nash_conv=False)
        gains = np.asarray(BEST_RESPONSE_VALUES(tree, policy) - POLICY_VALUE(tree, policy))
        np.testing.assert_allclose(gains, ref.player_improvements, atol=1e-12)
        values = expected_game_score.policy_value(turn_based.new_initial_state(), [tabular] * 2)
        np.testing.assert_allclose(POLICY_VALUE(tree, policy), values, atol=1e-12)


def test_three_player_kuhn_gains_equal_openspiel():
    game = pyspiel.load_game("kuhn_poker", {"players": 3})
    tree = jaxsolve.compile_game(game)
    policy = _random_policy(tree, 7)
    ref = os_exploitability.nash_conv(game, to_tabular_policy(tree, game, policy),
                                      return_only_nash_conv=False)
    gains = np.asarray(BEST_RESPONSE_VALUES(tree, policy) - POLICY_VALUE(tree, policy))
    np.testing.assert_allclose(gains, ref.player_improvements, atol=1e-12)


def test_conjunction_best_responses_equal_independent_reference():
    lp = pytest.importorskip("reference.sequence_form_lp")
    game = games.load("conjunction")
    tree = builtin_tree("conjunction")
    policy = _random_policy(tree, 3)
    table = {name: {a: float(policy[i, a]) for a in np.nonzero(tree.legal[i])[0]}
             for i, name in enumerate(tree.names.infosets)}
    owner = np.asarray(tree.infoset_player)
    strategies = [{k: v for i, (k, v) in enumerate(table.items()) if owner[i] == p} for p in range(2)]
    br = np.asarray(BEST_RESPONSE_VALUES(tree, policy))
    for p in range(2):
        assert br[p] == pytest.approx(lp.best_response_value(game, strategies, p), abs=1e-12)
    np.testing.assert_allclose(POLICY_VALUE(tree, policy), lp.expected_values(game, strategies), atol=1e-12)


def test_conjunction_best_responses_equal_openspiel():
    """OpenSpiel's own Python best response, run on our conjunction game through
    `as_openspiel_game`, gives the same per-player gains as ours (general-sum)."""
    from jaxsolve.openspiel import as_openspiel_game

    game = games.load("conjunction")
    view = as_openspiel_game(game)
    tree = builtin_tree("conjunction")
    from open_spiel.python import policy as os_policy

    for seed in range(3):
        policy = _random_policy(tree, 10 + seed)
        tabular = os_policy.TabularPolicy(view)
        for name, row in tabular.state_lookup.items():
            i = tree.names.infosets.index(name)
            tabular.action_probability_array[row] = policy[i, :tabular.action_probability_array.shape[1]]
        ref = os_exploitability.nash_conv(view, tabular, return_only_nash_conv=False)
        gains = np.asarray(BEST_RESPONSE_VALUES(tree, policy) - POLICY_VALUE(tree, policy))
        np.testing.assert_allclose(gains, ref.player_improvements, atol=1e-12)
