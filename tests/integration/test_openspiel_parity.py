"""Our CFR iterates equal OpenSpiel's own solvers' (same update scheme) in float64.

OpenSpiel's C++ CFRSolver / CFRPlusSolver and Python LCFRSolver / DCFRSolver are the
references: after 1, 10 and 100 iterations the average policies agree to 1e-8
(measured: at most 6.5e-10, Leduc CFR+ after 100 iterations, where per-iteration
rounding compounds; 1e-15 on Kuhn). A float32 slip would show on Leduc and 3-player
Kuhn (differences of 1e-4 and more). On liar's dice (4 sides) CFR+ could in principle part ways at a
floating-point tie of a regret at zero (one summation order gives 0, another 1e-17,
and regret matching jumps); through 100 iterations no such tie occurs and the
iterates agree to 4e-12. The exploitability we compute for the same policy agrees with
pyspiel.exploitability to 1e-9.
"""

import re

import numpy as np
import pytest

import jaxsolve
from jaxsolve.protocol import CHANCE, TERMINAL
from conftest import EXPLOITABILITY, RUN, openspiel_average, pyspiel_game, pyspiel_tree

# OpenSpiel's iterates and exploitability to 1e-8 and finer: float64 (module docstring).
pytestmark = pytest.mark.float64

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python.algorithms import discounted_cfr  # noqa: E402

from jaxsolve.openspiel import from_tabular_policy, to_tabular_policy  # noqa: E402


CPP = {"cfr-alt": lambda g: pyspiel.CFRSolver(g), "cfr+": lambda g: pyspiel.CFRPlusSolver(g)}
PY = {"lcfr": discounted_cfr.LCFRSolver, "dcfr": discounted_cfr.DCFRSolver}

GAMES = [
    ("kuhn_poker", {}),
    ("kuhn_poker", {"players": 3}),
    ("leduc_poker", {}),
    ("liars_dice", {"dice_sides": 4}),
]


@pytest.mark.parametrize("algo", ["cfr-alt", "cfr+"])
@pytest.mark.parametrize("name,params", GAMES, ids=lambda x: str(x))
def test_cfr_iterates_equal_openspiel_cpp(algo, name, params):
    game, tree = pyspiel_game(name, **params), pyspiel_tree(name, **params)
    ours, theirs = jaxsolve.SOLVERS[algo](), CPP[algo](game)
    state, done = ours.init(tree), 0
    for target in (1, 10, 100):
        state = RUN(ours, tree, state, target - done)
        for _ in range(target - done):
            theirs.evaluate_and_update_policy()
        done = target
        diff = np.abs(np.asarray(jaxsolve.average_policy(tree, state)) - openspiel_average(tree, theirs))
        assert diff.max() < 1e-8, f"{algo} on {name}{params} after {target}: {diff.max():.3g}"


@pytest.mark.parametrize("algo", ["lcfr", "dcfr"])
def test_discounted_iterates_equal_openspiel_python(algo):
    game, tree = pyspiel_game("kuhn_poker"), pyspiel_tree("kuhn_poker")
    ours, theirs = jaxsolve.SOLVERS[algo](), PY[algo](game)
    state = RUN(ours, tree, ours.init(tree), 30)
    for _ in range(30):
        theirs.evaluate_and_update_policy()
    diff = np.abs(np.asarray(jaxsolve.average_policy(tree, state)) - openspiel_average(tree, theirs))
    assert diff.max() < 1e-8, f"{algo}: {diff.max():.3g}"


@pytest.mark.parametrize("name,params", GAMES, ids=lambda x: str(x))
def test_exploitability_equals_pyspiel(name, params):
    game, tree = pyspiel_game(name, **params), pyspiel_tree(name, **params)
    rng = np.random.default_rng(0)
    for _ in range(2):
        logits = rng.normal(size=(tree.sizes.num_infosets, tree.sizes.num_actions)) * 2
        policy = np.where(tree.legal, np.exp(logits), 0.0)
        policy /= policy.sum(axis=1, keepdims=True)
        tabular = to_tabular_policy(tree, game, policy)
        np.testing.assert_allclose(from_tabular_policy(tree, tabular), policy, atol=1e-15)
        ours = float(EXPLOITABILITY(tree, policy))
        assert ours == pytest.approx(pyspiel.exploitability(game, tabular.to_dict()), abs=1e-9)


@pytest.mark.parametrize("name", ["mini_maneuver", "spoof"])
def test_openspiel_python_nash_conv_on_our_games(name):
    """OpenSpiel's Python best response, run on our protocol games through
    `as_openspiel_game`, gives our NashConv for a random policy; the view reports the
    game as zero-sum, as OpenSpiel's algorithms that check `get_type().utility` need."""
    from jaxsolve import games
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability

    from conftest import NASH_CONV, builtin_tree
    from jaxsolve.openspiel import as_openspiel_game

    view = as_openspiel_game(games.load(name))
    assert view.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    assert view.utility_sum() == 0.0
    tree = builtin_tree(name)
    rng = np.random.default_rng(1)
    policy = np.where(tree.legal, rng.uniform(0.1, 1.0, tree.legal.shape), 0.0)
    policy /= policy.sum(axis=1, keepdims=True)
    tabular = os_policy.TabularPolicy(view)
    for key, row in tabular.state_lookup.items():
        tabular.action_probability_array[row] = policy[tree.names.infosets.index(key)]
    assert float(NASH_CONV(tree, policy)) == pytest.approx(
        exploitability.nash_conv(view, tabular), abs=1e-9)


def test_openspiel_view_of_a_general_sum_game():
    from jaxsolve import games
    from jaxsolve.openspiel import as_openspiel_game

    view = as_openspiel_game(games.load("conjunction"))
    assert view.get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    assert view.utility_sum() is None


def test_a_python_game_where_a_pyspiel_game_belongs_is_named():
    from jaxsolve import games
    # to_tabular_policy wants the pyspiel game (or its name); a protocol game gets the
    # way to wrap it instead of an AttributeError from OpenSpiel's API.
    game = games.load("mini_maneuver")
    tree = jaxsolve.compile_game(game)
    with pytest.raises(jaxsolve.ArgumentError, match="not a pyspiel game.*as_openspiel_game"):
        to_tabular_policy(tree, game, jaxsolve.uniform_policy(tree))


@pytest.mark.parametrize("shape", [(3, 2), (12,), (12, 1), (2, 12)])
def test_to_tabular_policy_refuses_a_policy_of_another_shape(shape):
    # Unchecked, (3, 2) and (12,) would end in a bare IndexError, (12, 1) be silently
    # cut to its first column.
    game, tree = pyspiel_game("kuhn_poker"), pyspiel_tree("kuhn_poker")
    with pytest.raises(jaxsolve.ArgumentError, match=r"to_tabular_policy: policy has shape "
                       + re.escape(str(shape)) + r" but the tree has 12 infosets x 2 actions"):
        to_tabular_policy(tree, game, np.full(shape, 0.5))


def test_to_tabular_policy_refuses_a_game_other_than_the_trees():
    # 2-player Kuhn's infosets are all among the 3-player tree's: the player count tells.
    tree3 = pyspiel_tree("kuhn_poker", players=3)
    policy = np.full((tree3.sizes.num_infosets, tree3.sizes.num_actions), 0.5)
    with pytest.raises(jaxsolve.ArgumentError, match=r"to_tabular_policy: the tree is of a "
                       r"3-player game but kuhn_poker\(\) has 2 players"):
        to_tabular_policy(tree3, pyspiel_game("kuhn_poker"), policy)
    # Same players, other information states (a card-blind abstraction of Kuhn).
    game = pyspiel_game("kuhn_poker")
    blind = jaxsolve.compile_game(game, infoset_key=lambda s, p: f"{p}{s.history()[2:]}")
    with pytest.raises(jaxsolve.ArgumentError, match=r"to_tabular_policy: the tree's infoset "
                       r"'0\[\]' is not one of kuhn_poker\(\)'s"):
        to_tabular_policy(blind, game, jaxsolve.uniform_policy(blind))


def test_as_openspiel_game_refuses_a_compiled_tree():
    # Refused here, not later with an AttributeError from inside the view.
    from jaxsolve import games
    from jaxsolve.openspiel import as_openspiel_game

    tree = jaxsolve.compile_game(games.load("kuhn_poker"))
    with pytest.raises(jaxsolve.ArgumentTypeError, match=r"as_openspiel_game: takes a "
                       r"protocol game \(what compile_game was given.*not a compiled GameTree"):
        as_openspiel_game(tree)


def test_an_unknown_openspiel_game_names_the_close_ones_not_all(capfd):
    pytest.importorskip("pyspiel")
    from jaxsolve.openspiel import load_pyspiel
    with pytest.raises(jaxsolve.GameError) as info:
        load_pyspiel("kuhn_pokr")
    message = str(info.value)
    assert "Unknown game 'kuhn_pokr'; did you mean 'kuhn_poker'" in message
    assert "Available games" not in message and len(message) < 200
    # Nor does OpenSpiel's C++ print its whole list of games on the process's stderr.
    assert "leduc_poker" not in capfd.readouterr().err


def test_openspiels_own_string_form_carries_the_parameters():
    """"kuhn_poker(players=3)" is how OpenSpiel names a game with parameters; it is
    loaded, not refused as an unknown game. Uniform play's NashConv is OpenSpiel's own
    figure."""
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability

    from jaxsolve.openspiel import from_pyspiel, load_pyspiel
    tree = from_pyspiel("kuhn_poker(players=3)")
    assert tree.sizes.num_players == 3
    theirs = pyspiel.load_game("kuhn_poker", {"players": 3})
    uniform = np.asarray(tree.legal) / np.asarray(tree.legal).sum(1, keepdims=True)
    assert float(jaxsolve.nash_conv(tree, uniform)) == pytest.approx(
        exploitability.nash_conv(theirs, os_policy.UniformRandomPolicy(theirs)), abs=1e-6)
    with pytest.raises(jaxsolve.ArgumentError, match="already carries parameters"):
        load_pyspiel("kuhn_poker(players=3)", players=3)


def test_from_tabular_policy_reads_openspiels_cpp_policies_and_dicts():
    """What OpenSpiel's C++ solvers return (pyspiel.Policy, pyspiel.TabularPolicy) and
    TabularPolicy.to_dict() are read, not an AttributeError; each gives the
    rows OpenSpiel's Python TabularPolicy of the same policy gives, and OpenSpiel's
    own NashConv of it."""
    from open_spiel.python import policy as os_policy
    game, tree = pyspiel_game("kuhn_poker"), pyspiel_tree("kuhn_poker")
    solver = pyspiel.CFRSolver(game)
    for _ in range(5):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    tabular = os_policy.tabular_policy_from_callable(game, average.action_probabilities)
    expected = np.asarray(from_tabular_policy(tree, tabular))
    for given in (average, solver.tabular_average_policy(), tabular.to_dict()):
        np.testing.assert_array_equal(np.asarray(from_tabular_policy(tree, given)), expected)
    assert float(jaxsolve.nash_conv(tree, expected)) == pytest.approx(
        pyspiel.nash_conv(game, average), abs=1e-12)
    with pytest.raises(jaxsolve.GameError, match="the policy has no row for infoset '1'"):
        from_tabular_policy(tree, {"0": [(0, 1.0)]})
    with pytest.raises(TypeError, match="^from_tabular_policy: expected an OpenSpiel policy"):
        from_tabular_policy(tree, 3)


def test_compiling_a_game_openspiel_cannot_reload_prints_nothing(capfd):
    """Naming the tree reloads the game with all its parameters. Kuhn poker's matrix
    form, made turn-based, reloads as a turn-based wrapper of sequential Kuhn, which
    OpenSpiel refuses, and its C++ printed "OpenSpiel exception: ...
    turn_based_simultaneous_game.cc" although the game compiles all the same."""
    game = pyspiel.extensive_to_matrix_game(pyspiel.load_game("kuhn_poker"))
    tree = jaxsolve.compile_game(game)
    assert tree.names.game == "turn_based_simultaneous_game(game=kuhn_poker())"
    assert "OpenSpiel exception" not in capfd.readouterr().err


def test_an_unregistered_pyspiel_game_compiles_quietly(capfd):
    # Naming it must not call load_game("m"), which prints OpenSpiel's 127-line list of
    # the games it knows. Matching pennies: the row player's value is 0 (by hand).
    game = pyspiel.create_matrix_game("m", "m", ["H", "T"], ["H", "T"],
                                      [[1, -1], [-1, 1]], [[-1, 1], [1, -1]])
    tree = jaxsolve.compile_game(game)
    assert capfd.readouterr().err == ""
    assert tree.names.game == "turn_based_simultaneous_game(game=m())"
    uniform = np.asarray(tree.legal) / np.asarray(tree.legal).sum(1, keepdims=True)
    assert float(EXPLOITABILITY(tree, uniform)) == 0.0


class _Bare:
    """A protocol game with none of the optional methods: no child (clone +
    apply_action), no is_chance_node, no num_distinct_actions. Chance deals player 0
    a card (1 with probability 0.7); player 0 bets or checks; player 1, not seeing
    the card, calls or folds after a bet."""

    class State:
        def __init__(self):
            self.moves = []

        def current_player(self):
            n = len(self.moves)
            if n == 0:
                return CHANCE
            if n == 1 or (n == 2 and self.moves[1] == 0):
                return n - 1
            return TERMINAL

        def is_terminal(self):
            return self.current_player() == TERMINAL

        def legal_actions(self):
            return [0, 1]

        def chance_outcomes(self):
            return [(0, 0.3), (1, 0.7)]

        def clone(self):
            new = _Bare.State()
            new.moves = list(self.moves)
            return new

        def apply_action(self, action):
            self.moves.append(action)

        def returns(self):
            card, *rest = self.moves
            if rest == [1]:
                win = 1.0 if card else -1.0  # checked: showdown for 1
            elif rest == [0, 1]:
                win = 1.0  # bet, folded
            else:
                win = 2.0 if card else -2.0  # bet, called
            return [win, -win]

        def information_state_string(self, player):
            return f"card {self.moves[0]}" if player == 0 else "bet"

    def num_players(self):
        return 2

    def new_initial_state(self):
        return _Bare.State()


def test_openspiel_python_cfr_runs_on_a_game_without_the_optional_methods():
    """OpenSpiel's Python CFRSolver, through `as_openspiel_game`, on a game that has
    only the protocol's required methods: its iterates equal our alternating CFR's
    (not an AttributeError inside OpenSpiel)."""
    from open_spiel.python.algorithms import cfr as os_cfr

    from jaxsolve.openspiel import as_openspiel_game

    game = _Bare()
    tree = jaxsolve.compile_game(game)
    view = as_openspiel_game(game)
    assert view.num_distinct_actions() == tree.sizes.num_actions == 2
    theirs = os_cfr.CFRSolver(view)
    for _ in range(20):
        theirs.evaluate_and_update_policy()
    ours = jaxsolve.SOLVERS["cfr-alt"]()
    state = RUN(ours, tree, ours.init(tree), 20)
    diff = np.abs(np.asarray(jaxsolve.average_policy(tree, state)) - openspiel_average(tree, theirs))
    assert diff.max() < 1e-12
