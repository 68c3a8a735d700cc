"""Bad games are refused at compile time with a GameError naming the history."""

import re
import sys
import warnings

import pytest

import jaxsolve
from jaxsolve import GameError, compile_game
from jaxsolve.games.kuhn_poker import KuhnPoker
from jaxsolve.protocol import CHANCE, TERMINAL, Game, State
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


@pytest.mark.parametrize("player", [2, -2 - 5])
def test_player_out_of_range(player):
    # Players numbered 1..2 instead of 0..1 are named, not an IndexError from the walk.
    game = SpecGame(decision(0, "a", decision(player, "b", leaf(0, 0)), leaf(1, -1)))
    msg = _error(game)
    assert f"current_player() returned {player}, expected 0..1" in msg and "history [0]" in msg


@pytest.mark.parametrize("setting", ["max_nodes", "max_depth"])
def test_walk_limits_must_be_integers(setting):
    with pytest.raises(TypeError, match=f"^compile_game: {setting} must be an integer, got '10'"):
        compile_game(KuhnPoker(), **{setting: "10"})


def test_payoffs_beyond_float32_are_refused_without_x64():
    # They passed the finiteness check and became inf on the device.
    import jax
    game = SpecGame(decision(0, "a", leaf(1e39, -1e39), leaf(0, 0)))
    with jax.enable_x64(True):
        assert compile_game(game).utilities.max() == 1e39  # float64: fine
    with jax.enable_x64(False):
        msg = _error(game)
    assert "returns reach 1e+39, beyond float32's range" in msg and "jax_enable_x64" in msg


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


def test_huge_action_ids_are_refused_before_any_array_is_made(monkeypatch):
    # Chip amounts as ids: [0, 10**9] would end in NumPy's "MemoryError: Unable to
    # allocate 26.1 GiB for an array with shape (7, 1000000001)". Ids up to 2**24 - 1
    # are taken; decisions and chance outcomes alike.
    node = decision(0, "a", leaf(0, 0), leaf(1, -1), actions=[0, 10**9])
    msg = _error(SpecGame(decision(1, "b", leaf(0, 0), node)))
    assert msg.startswith("history [1]") and ("legal_actions() contains action 1000000000: "
                                              "action ids are columns") in msg
    assert "must lie below 16,777,216" in msg
    dealt = {"chance": [(0, 0.5, leaf(0, 0)), (2**24, 0.5, leaf(1, -1))]}
    msg = _error(SpecGame(decision(0, "a", leaf(0, 0), dealt)))
    assert "chance_outcomes() contains action 16777216" in msg
    # The bound itself, where its arrays are small: the largest id below it compiles.
    monkeypatch.setattr(jaxsolve.rules, "MAX_ACTION_ID", 8)
    largest = decision(0, "a", leaf(0, 0), leaf(1, -1), actions=[0, 7])
    assert compile_game(SpecGame(chance((1.0, largest)))).sizes.num_actions == 8
    largest["actions"][1] = (8, leaf(1, -1))
    assert "below 8; number the actions" in _error(SpecGame(largest))


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
    # Sizes in readable units (not "0.00 GiB"); the walk's ~1 KiB a history, the
    # measured peak, is what runs out, far beyond the arrays' tens of bytes.
    assert "max_nodes=1,000" in msg
    reached = int(re.search(r"reached ([\d,]+) at depth", msg).group(1).replace(",", ""))
    assert 1000 < reached <= 8191
    assert (f"walking them in Python takes about {reached}.0 KiB (~1 KiB per "
            "history) and the tree at least") in msg, msg
    assert re.search(r"the tree at least \d+\.\d KiB", msg), msg


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
    with pytest.warns(jaxsolve.ImperfectRecallWarning, match="player 0 reaches 'second'") as got:
        tree = compile_game(game)
    # What the user is told to distrust: the best response (it can err either way) and
    # the average policy (it differs from OpenSpiel's on such games).
    message = str(got[0].message)
    assert "can err either way" in message and "average policy" in message
    # Both paths by the infosets' strings and the histories, as the user wrote them.
    assert ("reaches 'second' after action 1 at 'first' at history [1] but after action 0 "
            "at 'first' at history [0]") in message
    assert tree.sizes.perfect_recall == (False, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compile_game(SpecGame(decision(0, "a", leaf(0, 0), leaf(1, -1)))).sizes.perfect_recall == (True, True)


# ---------------------------------------------------------------- protocol violations
class Line(State):
    """One player moves along a line with one action; `ends_at` moves end the game
    (None: never). Variants below override one method to break the protocol."""

    ends_at: int | None = 1

    def __init__(self):
        self.n = 0

    def current_player(self):
        return TERMINAL if self.n == self.ends_at else self.n % 2

    def legal_actions(self, player=None):
        return [0]

    def _apply_action(self, action):
        self.n += 1

    def returns(self):
        return [0.0, 0.0]

    def information_state_string(self, player):
        return f"{player}:{self.n}"


def game_of(state_class) -> Game:
    class OneGame(Game):
        def new_initial_state(self):
            return state_class()
    return OneGame()


def variant(**methods) -> Game:
    return game_of(type("Variant", (Line,), methods))


def test_a_game_that_never_ends_is_refused_at_max_depth():
    never = variant(ends_at=None)  # one action, forever
    with pytest.raises(GameError, match=r"history \[0, 0, .*, \.\.\., (0, )*0\] \(10000 actions\).*"
                       r"history of length 10000 with no terminal state.*never end"):
        compile_game(never)
    # Cycling back to an earlier state with two actions: found along the first actions
    # once the walk has grown, instead of filling max_nodes level by level.
    cycling = variant(ends_at=None, legal_actions=lambda self, player=None: [0, 1],
                      _apply_action=lambda self, action: setattr(self, "n", 1 - self.n))
    with pytest.raises(GameError, match="history of length 10000 with no terminal"):
        compile_game(cycling)


def test_a_long_history_and_a_long_infoset_string_are_shortened_in_messages():
    # 300 forced moves, then a choice, then a node whose infoset string (1000
    # characters) player 1 shares with player 0 on the other branch: the message
    # shows each history by its start, its end and its length, and cuts the string.
    class Long(Line):
        def current_player(self):
            if self.n >= 302:
                return TERMINAL
            return 1 if self.n == 301 and self.last == 1 else 0

        def legal_actions(self, player=None):
            return [0, 1] if self.n == 300 else [0]

        def _apply_action(self, action):
            self.n, self.last = self.n + 1, action

        def information_state_string(self, player):
            return "x" * 1000 if self.n == 301 else f"n={self.n}"

    with pytest.raises(GameError) as raised:
        compile_game(game_of(Long))
    message = str(raised.value)
    assert len(message) < 700, message
    assert re.search(r"history \[0, 0, .*, \.\.\., 0, 0, 0, 0, 0, 0, 0, 0, 0, 1\] \(301 actions\)",
                     message), message
    assert "'" + "x" * 100 in message and "x" * 200 not in message
    report = str(jaxsolve.check_game(game_of(Long)))
    assert "belongs to player 0" in report and "x" * 200 not in report
    assert "..., 0, 0, 0, 0, 0, 0, 0, 0, 0, 1] (301 actions)" in report


def test_an_endless_branch_is_refused_by_the_walk():
    # Action 0 ends the game, action 1 goes on forever: the first actions end at
    # once, and the breadth-first walk reaches the limit along [1, 1, ...].
    class Branch(Line):
        def current_player(self):
            return TERMINAL if self.n < 0 else self.n % 2

        def legal_actions(self, player=None):
            return [0, 1]

        def _apply_action(self, action):
            self.n = -1 if action == 0 else self.n + 1
    with pytest.raises(GameError, match=r"history \[1, 1, 1, 1, 1\]: history of length 5 "
                       r"with no terminal state \(max_depth=5\)"):
        compile_game(game_of(Branch), max_depth=5)
    deep = SpecGame(decision(0, "a", decision(1, "b", leaf(0, 0), leaf(1, -1)), leaf(0, 0)))
    assert compile_game(deep, max_depth=2).sizes.num_nodes == 5  # length 2 may end


@pytest.mark.parametrize("methods, says", [
    ({"legal_actions": lambda self, player=None: ["call", "fold"]},
     r"history \[\].*legal_actions\(\) contains 'call', which is not an integer"),
    ({"legal_actions": lambda self, player=None: [0.0, 1.5]},
     r"legal_actions\(\) contains 0\.0, which is not an integer"),
    ({"legal_actions": lambda self, player=None: [True]},
     r"legal_actions\(\) contains True, which is not an integer"),
    ({"legal_actions": lambda self, player=None: None},
     r"legal_actions\(\) gave None; expected a list of integer actions"),
    ({"current_player": lambda self: CHANCE, "chance_outcomes": lambda self: {0: .5, 1: .5}},
     r"chance_outcomes\(\) must be a list of \(action, probability\) pairs, got "
     r"\{0: 0\.5, 1: 0\.5\}"),
    ({"current_player": lambda self: CHANCE, "chance_outcomes": lambda self: [.5, .5]},
     r"pairs, got \[0\.5, 0\.5\]"),
    ({"current_player": lambda self: CHANCE if self.n == 0 else TERMINAL,
      "chance_outcomes": lambda self: [(0, "1")]},
     r"chance probability '1' is not a number"),
    ({"returns": lambda self: None},
     r"history \[0\].*returns\(\) gave None at a terminal; expected 2 numbers \(one per "
     r"player\)"),
    ({"returns": lambda self: 1.0}, r"returns\(\) gave 1\.0 at a terminal"),
    ({"returns": lambda self: ["1", 0]}, r"returns\(\) contains '1', which is not a number"),
    ({"current_player": lambda self: None},
     r"history \[\].*current_player\(\) returned None, expected an integer"),
    ({"_apply_action": lambda self, action: [][1]},
     r"history \[\].*child\(0\) raised IndexError: list index out of range"),
])
def test_protocol_violations_name_the_history(methods, says):
    with pytest.raises(GameError, match=says):
        compile_game(variant(**methods))


def test_methods_left_to_implement_are_named():
    class NoReturns(State):
        def current_player(self):
            return TERMINAL

    with pytest.raises(GameError, match=r"history \[\].*returns\(\) raised "
                       r"NotImplementedError: NoReturns must implement returns\(\)"):
        compile_game(game_of(NoReturns))
    with pytest.raises(GameError, match=r"must implement new_initial_state\(\)"):
        compile_game(Game())


def test_a_state_that_cannot_make_children_is_named():
    class NoClone:  # duck-typed, with apply_action but neither child nor clone
        def current_player(self):
            return 0

        def is_terminal(self):
            return False

        def legal_actions(self):
            return [0]

        def apply_action(self, action):
            pass

        def information_state_string(self, player):
            return ""

    with pytest.raises(GameError, match=r"history \[\].*the state \(NoClone\) needs "
                       r"child\(action\), or clone\(\) and apply_action\(action\)"):
        compile_game(game_of(NoClone))


def _grow_and_return_self(state, action):
    state._apply_action(action)
    return state


def _self(state):
    return state


@pytest.mark.parametrize("methods, says", [
    ({"child": _grow_and_return_self}, r"child\(0\) returned the state itself"),
    ({"child": None, "clone": _self}, r"clone\(\) returned the state itself"),
])
def test_a_child_that_is_its_parent_is_refused(methods, says):
    """A child() that appends to its own history and returns self compiled to a
    smaller, wrong tree without a word (the reviewer's case: 5 histories for 15)."""
    if methods.get("child", 0) is None:  # clone() + apply_action, with no child()
        class NoChild(Line):
            def __getattribute__(self, name):
                if name == "child":
                    raise AttributeError(name)
                return object.__getattribute__(self, name)
        state_class = type("Variant", (NoChild,), {"clone": _self})
    else:
        state_class = type("Variant", (Line,), methods)
    state_class.ends_at = 3
    with pytest.raises(GameError, match=r"history \[\].*" + says):
        compile_game(game_of(state_class))


@pytest.mark.parametrize("players, says", [
    (0, r"num_players\(\) returned 0, expected an integer >= 1"),
    (2.0, r"num_players\(\) returned 2\.0, expected an integer >= 1"),
])
def test_num_players_must_be_a_positive_integer(players, says):
    game = variant()
    game.players = players
    with pytest.raises(GameError, match=says):
        compile_game(game)


def test_one_player_games_compile():
    game = variant()
    game.players = 1
    game.new_initial_state = lambda: type("Solo", (Line,), {"returns": lambda s: [1.0]})()
    tree = compile_game(game)
    assert tree.sizes.num_players == 1
    # Hand derivation: one forced move, then the only return, 1.0; the player cannot
    # do better, so the value is 1 and the exploitability 0.
    policy = jaxsolve.uniform_policy(tree)
    assert float(jaxsolve.policy_value(tree, policy)[0]) == 1.0
    assert float(jaxsolve.best_response_values(tree, policy)[0]) == 1.0


def test_a_game_class_instead_of_an_instance():
    with pytest.raises(GameError, match=r"got the class KuhnPoker; pass an instance: "
                       r"KuhnPoker\(\)"):
        compile_game(KuhnPoker)


# ---------------------------------------------------------------- max_nodes while walking
class Wide(State):
    """Three levels, `width` actions per node; counts the children made."""

    width = 200
    made = 0

    def __init__(self, depth=0):
        self.depth = depth

    def current_player(self):
        return TERMINAL if self.depth == 2 else self.depth

    def legal_actions(self, player=None):
        return list(range(self.width))

    def child(self, action):
        Wide.made += 1
        return Wide(self.depth + 1)

    def returns(self):
        return [0.0, 0.0]

    def information_state_string(self, player):
        return str(self.depth)


def test_max_nodes_is_checked_while_a_level_grows():
    # Checked only once a level is complete, the limit would let this game make all
    # 40,200 children before refusing it; the walk stops before the node whose
    # children would cross it.
    Wide.made = 0
    with pytest.raises(GameError, match=r"more than max_nodes=1,000 histories \(reached "
                                        r"1,001 at depth 2\).*about 1001\.0 KiB"):
        compile_game(game_of(Wide), max_nodes=1000)
    assert Wide.made <= 1000


# ---------------------------------------------------------------- infoset_key
def test_infoset_key_errors_name_the_key_and_the_history():
    kuhn = KuhnPoker()
    with pytest.raises(GameError, match=r"history \[0, 1\].*infoset_key\(state, 0\) raised "
                                        r"AttributeError: .*no_such_field") as info:
        compile_game(kuhn, infoset_key=lambda s, p: f"{s.no_such_field}")
    assert isinstance(info.value.__cause__, AttributeError)
    # The key function's result, not information_state_string's, is blamed.
    with pytest.raises(GameError, match=r"history \[0, 1\].*infoset_key\(state, 0\) "
                                        r"returned int, expected str"):
        compile_game(kuhn, infoset_key=lambda s, p: 0)
    # abstract() passes its key through, so its errors are named too, not a bare
    # AttributeError.
    from jaxsolve.abstraction import abstract
    with pytest.raises(GameError, match=r"history \[0, 1\].*infoset_key\(state, 0\) raised"):
        abstract(kuhn, lambda s, p: f"{s.no_such_field}")


@pytest.mark.parametrize("key, got", [
    ("p0", "got 'p0'"), (5, "got int"),
    (lambda s: "x", r"got <lambda>\(s\), which cannot be called as infoset_key\(state, "
                    r"player\)"),
])
def test_an_infoset_key_that_is_no_two_argument_function_is_refused(key, got):
    # Refused up front, not a bare TypeError at the first decision node.
    with pytest.raises(jaxsolve.ArgumentTypeError, match=r"^compile_game: infoset_key must "
                       r"be None or a function \(state, player\) -> str, " + got):
        compile_game(KuhnPoker(), infoset_key=key)


def test_a_declared_utility_sum_the_returns_break_is_refused_at_the_terminal():
    """The game declares zero-sum, but one terminal pays both players 1: without the
    check the tree would be taken for zero-sum (no NashConv report for a general-sum
    game) and a saved copy would not load (GameTree.load checks the sum)."""
    class Declares(SpecGame):
        def utility_sum(self):
            return 0.0
    game = Declares(decision(0, "p0", leaf(1.0, -1.0), leaf(1.0, 1.0)))
    with pytest.raises(GameError, match=re.escape(
            "history [1]: the returns [1.0, 1.0] sum to 2, but the game declares "
            "utility_sum() = 0")):
        compile_game(game)
    assert compile_game(SpecGame(game.spec)).sizes.utility_sum is None  # undeclared: observed
