"""Bad games are refused at compile time with a GameError naming the history."""

import re
import sys
import warnings

import pytest

import jaxsolve
from jaxsolve import GameError, compile_game
from toy_games import SpecGame, chance, decision, leaf


def _error(game, **kwargs) -> str:
    with pytest.raises(GameError) as info:
        compile_game(game, **kwargs)
    return str(info.value)


def test_negative_chance_probability():
    msg = _error(SpecGame(chance((1.5, leaf(1, -1)), (-0.5, leaf(0, 0)))))
    assert "history []" in msg and "negative" in msg


def test_chance_not_summing_to_one():
    game = SpecGame(decision(0, "a", chance((0.5, leaf(1, -1)), (0.4, leaf(0, 0))), leaf(0, 0)))
    msg = _error(game)
    assert "history [0]" in msg and "sum to 0.9" in msg


def test_unsorted_duplicate_and_negative_actions():
    node = decision(0, "a", leaf(0, 0), leaf(1, -1))
    assert "not sorted" in _error(SpecGame({**node, "legal": [1, 0]}))
    assert "twice" in _error(SpecGame({**node, "legal": [0, 0]}))
    assert "negative" in _error(SpecGame({**node, "legal": [-1, 0]}))
    assert "empty" in _error(SpecGame({**node, "legal": []}))


def test_action_beyond_declared_range():
    class Declared(SpecGame):
        def num_distinct_actions(self):
            return 1
    msg = _error(Declared(decision(0, "a", leaf(0, 0), leaf(1, -1))))
    assert "num_distinct_actions() = 1" in msg


def test_infoset_shared_by_two_players():
    game = SpecGame(chance((0.5, decision(0, "x", leaf(0, 0), leaf(0, 0))),
                           (0.5, decision(1, "x", leaf(0, 0), leaf(0, 0)))))
    msg = _error(game)
    assert "'x' belongs to player 0 at history [0] but to player 1 here" in msg
    assert "history [1]" in msg


def test_infoset_with_different_legal_actions():
    game = SpecGame(chance((0.5, decision(0, "x", leaf(0, 0), leaf(0, 0))),
                           (0.5, decision(0, "x", leaf(0, 0), leaf(0, 0), leaf(0, 0)))))
    msg = _error(game)
    assert "legal actions [0, 1] at history [0] but [0, 1, 2] here" in msg


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_utilities(bad):
    msg = _error(SpecGame(decision(0, "a", leaf(0, 0), leaf(bad, 0))))
    assert "history [1]" in msg and "not finite" in msg


def test_returns_of_wrong_length():
    msg = _error(SpecGame(decision(0, "a", leaf(0, 0), leaf(1, -1, 0))))
    assert "3 entries for 2 players" in msg


def test_tree_beyond_max_nodes_reports_memory():
    # A binary tree of depth 12 has 8191 histories.
    def full(d):
        return leaf(0, 0) if d == 0 else decision(d % 2, f"d{d}", full(d - 1), full(d - 1))
    msg = _error(SpecGame(full(12)), max_nodes=1000)
    assert "max_nodes=1,000" in msg and re.search(r"\d+\.\d\d GiB", msg)


def test_not_a_game():
    assert "not a game" in _error(object())


def test_deep_game_needs_no_recursion():
    depth = sys.getrecursionlimit() + 500
    node = leaf(1, -1)
    for d in range(depth):
        node = decision(d % 2, f"d{d}", node, leaf(0, 0))
    tree = compile_game(SpecGame(node))
    assert tree.sizes.num_nodes == 2 * depth + 1
    assert len(tree.sizes.level_offsets) == depth + 2


def test_imperfect_recall_is_reported_and_allowed():
    # Player 0 moves, then moves again without remembering its first move.
    game = SpecGame(decision(0, "first", decision(0, "second", leaf(1, -1), leaf(0, 0)),
                             decision(0, "second", leaf(0, 0), leaf(2, -2))))
    with pytest.warns(jaxsolve.ImperfectRecallWarning, match="player 0 reaches 'second'"):
        tree = compile_game(game)
    assert tree.sizes.perfect_recall == (False, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compile_game(SpecGame(decision(0, "a", leaf(0, 0), leaf(1, -1)))).sizes.perfect_recall == (True, True)
