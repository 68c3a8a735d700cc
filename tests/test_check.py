"""check_game: every built-in game passes; deliberately broken games fail the right
check at the right history; the `jaxsolve check` command line."""

import copy
import itertools
import re

import pytest

import jaxsolve
from jaxsolve import cli, games
from jaxsolve.check import CHECKS, check_game
from jaxsolve import protocol
from jaxsolve.protocol import TERMINAL
from toy_games import SpecGame, chance, decision, leaf


def broken(name, params=None, **methods):
    """The built-in game `name` whose states override `methods`; the subclass survives
    clone(), so every state of the game is a broken one."""
    game = games.load(name, **(params or {}))
    make = game.new_initial_state
    base = type(make())
    cls = type("Broken" + base.__name__, (base,), {"__slots__": (), **methods})

    def clone(self):
        new = base.clone(self)
        new.__class__ = cls
        return new

    def new_initial_state():
        state = make()
        state.__class__ = cls
        return state

    if "clone" not in methods:
        cls.clone = clone
    game.new_initial_state = new_initial_state
    return game


def first_history(name, params, where):
    """The first history in breadth-first order (the compiled tree's node order, an
    independent walk) whose node satisfies `where(tree, node)`."""
    tree = jaxsolve.compile_game(games.load(name, **params))
    node = next(n for n in range(tree.sizes.num_nodes) if where(tree, n))
    out = []
    while tree.parent[node] >= 0:
        out.append(int(tree.parent_action[node]))
        node = tree.parent[node]
    return out[::-1]


def assert_fails(report, check, history, *words):
    """`check` failed, first at `history`, with `words` in its message and the report."""
    result = report[check]
    assert result.status == "FAIL", str(report)
    assert result.history == history, str(report)
    for w in words:
        assert w in result.message, result.message
    assert not report.ok
    text = str(report)
    assert f"FAIL {check}:" in text and f"first at history {history}" in text


# ---------------------------------------------------------------------- built-in games
@pytest.mark.parametrize("name", games.names())
def test_every_builtin_game_passes(name):
    report = check_game(games.load(name))
    assert report.ok, str(report)
    assert report.full_tree and [r.name for r in report.results] == list(CHECKS)
    assert all(report.perfect_recall) and not report.findings
    assert str(report).endswith("result: OK")


def test_orbital_entry_position_turn_infostates_pass_but_report_imperfect_recall():
    report = check_game(games.load("orbital_pursuit_evasion", infostate="entry_position_turn"))
    assert report.ok, str(report)
    assert report.perfect_recall == (False, True)
    assert report["perfect_recall"].message.startswith("player 0: imperfect recall")
    # The game's docstring says the perfect-recall check does not pass: not PASS.
    assert report["perfect_recall"].status == "NOTE"
    assert "NOTE perfect_recall: player 0: imperfect recall" in str(report)
    assert len(report.findings) == 1 and "player 0 has imperfect recall" in report.findings[0]
    assert "finding: player 0 has imperfect recall" in str(report)


def test_large_tree_is_checked_along_playouts_and_says_so():
    report = check_game(games.load("leduc_poker"), max_nodes=300, playouts=20)
    assert report.ok and not report.full_tree
    assert "more than max_nodes=300" in report.findings[-1]


def test_numpy_action_lists_pass_as_compile_game_takes_them():
    # legal_actions() as a NumPy array (and chance outcomes as NumPy scalars) compile,
    # so the playouts take them too, without "The truth value of an array with more
    # than one element is ambiguous".
    import numpy as np  # noqa: PLC0415

    def legal_actions(self, player=None):
        return np.asarray(type(self).__mro__[1].legal_actions(self))

    def chance_outcomes(self):
        return [(np.int64(a), np.float64(p))
                for a, p in type(self).__mro__[1].chance_outcomes(self)]
    game = broken("kuhn_poker", legal_actions=legal_actions, chance_outcomes=chance_outcomes)
    jaxsolve.compile_game(game)
    for max_nodes in (10**6, 20):  # the whole tree, and playouts beyond max_nodes
        report = check_game(game, max_nodes=max_nodes, playouts=5)
        assert report.ok and report.full_tree == (max_nodes > 20), str(report)


# ---------------------------------------------------------------------- broken games
def test_unsorted_legal_actions():
    def legal_actions(self, player=None):
        legal = type(self).__mro__[1].legal_actions(self)
        return legal[::-1] if len(self._moves) == 2 else legal
    report = check_game(broken("spoof", legal_actions=legal_actions))
    # tail at 0 (THH), toggle 0 wins at once; toggle 1, keep: Player 0's second turn.
    assert_fails(report, "legal_actions_valid", [0, 1, 0], "not sorted", "[2, 1, 0]")


def test_action_ids_compile_game_refuses_fail_the_check_too():
    """An id of 2**30 passed the check while compile_game (and `jaxsolve solve`)
    refused it: ids are columns of the tree's arrays, below 2**24."""
    def legal_actions(self, player=None):
        legal = type(self).__mro__[1].legal_actions(self)
        return [0, 2**30] if self.current_player() >= 0 else legal
    game = broken("kuhn_poker", legal_actions=legal_actions)
    game.num_distinct_actions = lambda: None  # declares no bound: only the 2**24 one
    assert_fails(check_game(game), "legal_actions_valid", [0, 1],
                 "contains action 1073741824: action ids are columns",
                 "must lie below 16,777,216", "number the actions")
    with pytest.raises(jaxsolve.GameError, match="must lie below 16,777,216"):
        jaxsolve.compile_game(game)


def test_a_chance_node_whose_legal_actions_are_not_its_outcomes_fails():
    """OpenSpiel requires the two to agree; the check let [0, 1, 2, 3] pass beside
    Kuhn's three-card deal."""
    def legal_actions(self, player=None):
        legal = type(self).__mro__[1].legal_actions(self)
        return [0, 1, 2, 3] if not self._cards else legal
    assert_fails(check_game(broken("kuhn_poker", legal_actions=legal_actions)),
                 "chance_outcomes", [], "legal_actions() is [0, 1, 2, 3] at this chance node "
                 "but chance_outcomes() lists the actions [0, 1, 2]")


def test_nondeterministic_legal_actions():
    calls = itertools.count()

    def legal_actions(self, player=None):
        return [0, 1] if next(calls) % 2 else [0]
    report = check_game(broken("mini_maneuver", legal_actions=legal_actions))
    # The root is chance; the first decision is the Operator's after the first card.
    assert_fails(report, "legal_actions_deterministic", [0], "and then")


def test_nondeterministic_apply_action():
    calls = itertools.count()

    def _apply_action(self, action):
        if self._card is not None and self._signal is None and next(calls) % 2:
            action = 1 - action
        type(self).__mro__[1]._apply_action(self, action)
    report = check_game(broken("mini_maneuver", _apply_action=_apply_action))
    assert_fails(report, "apply_action", [0, 0], "two children for action 0 differ")


def test_chance_probabilities_not_summing_to_one():
    spec = decision(0, "a", leaf(0, 0), chance((0.5, leaf(1, -1)), (0.4, leaf(-1, 1))))
    assert_fails(check_game(SpecGame(spec)), "chance_outcomes", [1], "sum to 0.9")
    negative = chance((1.5, leaf(1, -1)), (-0.5, leaf(-1, 1)))
    assert_fails(check_game(SpecGame(negative)), "chance_outcomes", [], "negative")


def test_returns_of_wrong_length():
    game = broken("kuhn_poker", returns=lambda self: type(self).__mro__[1].returns(self)[:1])
    expected = first_history("kuhn_poker", {}, lambda t, n: t.node_player[n] == TERMINAL)
    assert_fails(check_game(game), "returns_valid", expected, "1 entries for 2 players")


def test_infostate_string_shared_by_two_players():
    spec = decision(0, "x", leaf(1, -1), decision(1, "x", leaf(0, 0), leaf(-1, 1)))
    report = check_game(SpecGame(spec))
    assert_fails(report, "infostate_consistent", [1], "'x' belongs to player 0 at history []",
                 "to player 1 here")
    with pytest.raises(jaxsolve.GameError, match=re.escape(  # and compile_game agrees
            "history [1] (state: path=1): information state 'x' belongs to player 0 at "
            "history [] but to player 1 here")):
        jaxsolve.compile_game(SpecGame(spec))


def test_one_infostate_with_two_legal_sets():
    spec = chance((0.5, decision(0, "x", leaf(1, -1), leaf(-1, 1))),
                  (0.5, decision(0, "x", leaf(1, -1), leaf(-1, 1), leaf(0, 0))))
    assert_fails(check_game(SpecGame(spec)), "infostate_consistent", [1],
                 "legal actions [0, 1] at history [0] but [0, 1, 2] here")


def test_utilities_outside_declared_bounds():
    def returns(self):
        r = type(self).__mro__[1].returns(self)
        return [2 * r[0], 2 * r[1]] if r[0] > 0 else r
    expected = first_history("spoof", {}, lambda t, n: t.node_player[n] == TERMINAL and
                             t.utilities[t.node_index[n], 0] > 0)
    assert expected == [0, 0]  # tail at 0 (THH), Player 0 toggles coin 0: all heads
    assert_fails(check_game(broken("spoof", returns=returns)), "returns_in_bounds", expected,
                 "[2.0, -2.0]", "[-1.0, 1.0]")


def test_non_zero_sum_returns_in_a_zero_sum_game():
    def returns(self):
        r = type(self).__mro__[1].returns(self)
        return [r[0], r[1] / 2] if self._card == 1 else r  # inside the bounds [-2, 2]
    report = check_game(broken("mini_maneuver", returns=returns))
    # Card 1 (Maneuver), Signal, Watch: (-2, 2) becomes (-2, 1).
    assert_fails(report, "constant_sum", [1, 0, 0], "[-2.0, 1.0] sum to -1", "utility_sum() = 0.0")
    assert report["returns_valid"].passed and report["returns_in_bounds"].passed


def test_a_playout_that_never_ends():
    def current_player(self):
        return type(self).__mro__[1].current_player(self) if self._tail is None else (
            len(self._moves) % 2)
    game = broken("spoof", current_player=current_player, is_terminal=lambda self: False)
    report = check_game(game, max_nodes=200, max_steps=300)
    result = report["playouts_finish"]
    assert result.status == "FAIL" and len(result.history) == 300, str(report)
    assert "did not end within max_steps=300" in result.message
    assert not report.full_tree and "more than max_nodes=200" in report.findings[-1]
    assert "(300 actions)" in str(report)


def test_exceptions_from_the_game_are_reported_not_raised():
    def information_state_string(self, player):
        if len(self._moves) == 3:
            raise RuntimeError("boom")
        return type(self).__mro__[1].information_state_string(self, player)
    report = check_game(broken("spoof", information_state_string=information_state_string))
    depth4 = lambda t, n: t.node_player[n] >= 0 and n >= t.sizes.level_offsets[4]  # noqa: E731
    expected = first_history("spoof", {}, depth4)  # the first decision after 3 moves
    assert_fails(report, "infostate_consistent", expected, "raised RuntimeError: boom")

    def child(self, action):
        if action == 2 and self._tail is not None:
            raise ValueError("no coin 2 today")
        return type(self).__mro__[1].child(self, action)
    assert_fails(check_game(broken("spoof", child=child)), "apply_action", [0, 2],
                 "applying action 2 raised ValueError: no coin 2 today")

    class NoGame:
        def num_players(self):
            return 2

        def new_initial_state(self):
            raise OSError("disk on fire")
    report = check_game(NoGame())
    assert_fails(report, "game_info", [], "OSError: disk on fire")
    assert all(r.status == "SKIP" for r in report.results[1:])


@pytest.mark.parametrize("method, check, history", [
    ("current_player", "current_player", []),
    ("legal_actions", "legal_actions_valid", []),
    ("chance_outcomes", "chance_outcomes", [0]),
    ("returns", "returns_valid", [0, 0, 0]),
    ("information_state_string", "infostate_consistent", []),
    ("child", "apply_action", [0]),
])
def test_a_missing_protocol_method_is_named(method, check, history):
    # Each fails the check that calls it, at the history that lacks it, rather than
    # stopping the checks in game_info with "AttributeError: 'S' object has no
    # attribute 'returns'" at history [].
    game = SpecGame(decision(0, "p0", *[chance((1.0, decision(1, "p1", leaf(1, -1),
                                                              leaf(0, 0))))] * 2))

    class Lacking(type(game.new_initial_state())):
        def __getattribute__(self, name):
            if name == method:
                raise AttributeError(name)
            return super().__getattribute__(name)

        def child(self, action):
            return Lacking(self.game, super().child(action).node, self.path + (action,))
    game.new_initial_state = lambda: Lacking(game, game.spec)
    expected = "needs child(action)" if method == "child" else f"has no {method}() method"
    assert_fails(check_game(game), check, history, expected)


def test_a_nan_chance_probability_is_one_finding_not_two():
    # NaN != NaN, so two calls returning [(0, nan), ...] must not be called different too.
    game = SpecGame(chance((float("nan"), leaf(1, -1)), (0.5, leaf(0, 0))))
    report = check_game(game)
    assert_fails(report, "chance_outcomes", [], "nan")
    assert report["legal_actions_deterministic"].status == "PASS", str(report)


def test_clone_sharing_state_is_caught():
    game = broken("mini_maneuver", clone=lambda self: self)
    report = check_game(game, playouts=0)
    assert report["apply_action"].status == "FAIL", str(report)


# ---------------------------------------------------------------------- command line
def test_check_command(capsys, monkeypatch):
    assert cli.main(["check", "mini_maneuver", "--playouts", "5"]) == 0
    out = capsys.readouterr().out
    assert "PASS legal_actions_valid" in out and out.strip().endswith("result: OK")
    assert cli.main(["check", "spoof", "--param", "max_rounds=2", "shuffle_initial=true"]) == 0
    assert "shuffle_initial=True" in capsys.readouterr().out
    for argv in (["nope"], ["spoof", "--param", "max_rounds=0"], ["spoof", "--param", "x"],
                 ["spoof", "--playouts", "-1"], ["spoof", "--bogus"]):
        assert cli.main(["check", *argv]) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1, argv
        assert captured.err.startswith("jaxsolve: error:")
    bad = broken("mini_maneuver", returns=lambda self: [9.0, -9.0])
    monkeypatch.setattr(games, "load", lambda name, **params: bad)
    assert cli.main(["check", "mini_maneuver"]) == 1
    assert "FAIL returns_in_bounds" in capsys.readouterr().out


def test_checking_a_pyspiel_game_without_a_tensor_prints_no_openspiel_error(capfd):
    """tic-tac-toe declares no information-state tensor; asking its shape anyway made
    OpenSpiel's C++ print "OpenSpiel exception: InformationStateTensorShape
    unimplemented." on stderr, past Python, above the report."""
    pytest.importorskip("pyspiel")
    assert cli.main(["check", "openspiel:tic_tac_toe", "--max-nodes", "500",
                     "--playouts", "3"]) == 0
    captured = capfd.readouterr()
    assert "OpenSpiel exception" not in captured.err and captured.err == "", captured.err
    assert "SKIP tensor_shapes: no information_state_tensor()" in captured.out


class _Endless:
    """Player 0 waits forever: one action, never terminal. The states have no text of
    their own (Python's default repr)."""

    class State:
        def __init__(self, waited=0):
            self.waited = waited

        def current_player(self):
            return 0

        def is_terminal(self):
            return False

        def legal_actions(self):
            return [0]

        def child(self, action):
            return _Endless.State(self.waited + 1)

        def returns(self):
            return [0.0, 0.0]

        def information_state_string(self, player):
            return f"waited {self.waited}"

    def num_players(self):
        return 2

    def new_initial_state(self):
        return _Endless.State()


def test_a_history_that_never_ends_stops_the_walk_at_max_steps():
    """The walk itself meets the endless history (a chain, so max_nodes is far): it
    fails at the history of max_steps actions, runs no playouts, and says so; the
    message carries no `<... object at 0x...>` for a state without text."""
    report = check_game(_Endless(), max_steps=400)
    result = report["playouts_finish"]
    assert result.status == "FAIL" and result.history == [0] * 400, str(report)
    assert "history of length 400 with no terminal state (max_steps=400)" in result.message
    assert "walk stopped at the first history of max_steps=400 actions" in report.findings[-1]
    assert "object at 0x" not in str(report) and "(state:" not in str(report)
    with pytest.raises(jaxsolve.GameError, match=r"no terminal state \(max_depth=400"):
        jaxsolve.compile_game(_Endless(), max_depth=400)  # compile_game refuses it alike


class _EndlessChoices(_Endless):
    """Two actions at every history, never terminal: breadth-first, the walk would hold
    max_nodes histories long before one of max_steps actions."""

    class State(_Endless.State):
        def legal_actions(self):
            return [0, 1]

        def child(self, action):
            return _EndlessChoices.State(self.waited + 1)

    def new_initial_state(self):
        return _EndlessChoices.State()


def test_an_endless_game_with_choices_is_found_along_its_first_actions_as_compile_finds_it():
    """`jaxsolve check` walked 200,000 histories and ran its playouts (41 s) where
    `solve` refused the game in a second: once the walk holds as many histories as
    compile_game's does when it looks, check follows the first actions as it does."""
    from jaxsolve.compile import PROBE_AFTER_NODES

    report = check_game(_EndlessChoices(), max_steps=300)
    result = report["playouts_finish"]
    assert result.status == "FAIL" and result.history == [0] * 300, str(report)
    assert "history of length 300 with no terminal state (max_steps=300)" in result.message
    assert "on the command line, --max-depth" in result.message
    assert "found by following the first action from the root" in report.findings[-1]
    assert report.histories <= PROBE_AFTER_NODES + 1 < check_game.__kwdefaults__["max_nodes"]
    with pytest.raises(jaxsolve.GameError, match=r"no terminal state \(max_depth=300"):
        jaxsolve.compile_game(_EndlessChoices(), max_depth=300)


def test_a_changed_parent_blames_the_method_that_made_its_children():
    """A game with child() only was told to look at its clone(); a protocol.State,
    whose child() is a clone and apply_action, is told to look at clone()."""
    class Marks(_Endless.State):  # child() marks the state it is called on
        def __init__(self, waited=0):
            super().__init__(waited)
            self.marked = False

        def current_player(self):
            return TERMINAL if self.waited else 0

        def is_terminal(self):
            return bool(self.waited)

        def child(self, action):
            self.marked = True
            return Marks(self.waited + 1)

        def information_state_string(self, player):
            return f"marked {self.marked}"

    class OneMove(_Endless):
        def new_initial_state(self):
            return Marks()

    message = check_game(OneMove(), playouts=0)["apply_action"].message
    assert "(does child() change the state it is called on?)" in message, message
    assert "clone()" not in message

    class SharedList(protocol.State):  # clone() shares the list apply_action appends to
        def __init__(self):
            self.moves = []

        def current_player(self):
            return TERMINAL if self.moves else 0

        def legal_actions(self, player=None):
            return [0]

        def clone(self):
            return copy.copy(self)

        def apply_action(self, action):
            self.moves.append(action)

        def returns(self):
            return [0.0, 0.0]

        def information_state_string(self, player):
            return f"moves {len(self.moves)}"

    class Shares(_Endless):
        def new_initial_state(self):
            return SharedList()

    message = check_game(Shares(), playouts=0)["apply_action"].message
    assert "(does clone() share state with the original?)" in message, message


def test_a_game_class_is_refused_with_the_call_that_makes_an_instance():
    report = check_game(SpecGame)
    assert_fails(report, "game_info", [], "got the class SpecGame; pass an instance: SpecGame()")


@pytest.mark.parametrize("spec, check", [
    (decision(0, "a", leaf(0, 0), chance((0.5, leaf(1, -1)), (0.4, leaf(-1, 1)))),
     "chance_outcomes"),
    (decision(0, "a", leaf(0, 0), leaf(1, -1, 0)), "returns_valid"),
    ({**decision(0, "a", leaf(0, 0), leaf(1, -1)), "legal": [1, 0]}, "legal_actions_valid"),
    (chance((0.5, decision(0, "x", leaf(0, 0), leaf(0, 0))),
            (0.5, decision(1, "x", leaf(0, 0), leaf(0, 0)))), "infostate_consistent"),
])
def test_compile_game_and_check_game_word_a_broken_rule_alike(spec, check):
    """One rule, one wording: compile_game refuses the game with the problem that
    check_game reports, at the same history."""
    result = check_game(SpecGame(spec))[check]
    assert result.status == "FAIL"
    with pytest.raises(jaxsolve.GameError) as refused:
        jaxsolve.compile_game(SpecGame(spec))
    message = str(refused.value)
    assert message.startswith(f"history {result.history}")
    assert message.endswith(": " + result.message.split(" (state: ")[0]), (message, result.message)
