"""The protocol's rules, each once: what a game's reported values must satisfy.

`compile_game` (which refuses the first violation) and `check_game` (which reports
every check's first one) both call these functions, so a rule and its wording are
the same for both. A rule takes the values it judges (a state's answer, the game's
declarations) and returns the problem as text, or None when the values keep the
rule. `game_error` turns a problem into the `GameError` naming the history; the
`format_*` helpers render histories, keys and states for those messages.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from jaxsolve.errors import GameError
from jaxsolve.protocol import CHANCE, SIMULTANEOUS, TERMINAL, State
from jaxsolve.validate import is_int, is_real

# Action ids index columns: one id of 10**9 (chip amounts used as ids, say) would ask
# for an [infosets, 10**9] policy and die in NumPy's MemoryError. 2**24 columns is
# beyond any game's action count (the pyspiel games use a few thousand at most) and
# keeps flat sequence ids (infoset * columns + id) far inside int32 for small trees.
MAX_ACTION_ID = 2**24
# Chance probabilities sum to 1, and returns to a declared utility_sum(), within this;
# absolute, as GameTree.load checks a stored utility_sum.
TOLERANCE = 1e-6
# A longer history is shown by its first and last actions and its length: the start
# says where it branched off, the end where it loops.
_SHOWN_ACTIONS = 40
_SHOWN_TAIL = 10


# ---------------------------------------------------------------- messages
def format_history(history: list[int]) -> str:
    """A history for a message; a long one by its start, its end and its length.

    Args:
      history: the actions from the root.

    Returns:
      The text.
    """
    if len(history) <= _SHOWN_ACTIONS:
        return str(history)
    head = ", ".join(map(str, history[:_SHOWN_ACTIONS - _SHOWN_TAIL]))
    tail = ", ".join(map(str, history[-_SHOWN_TAIL:]))
    return f"[{head}, ..., {tail}] ({len(history)} actions)"


def format_key(key, limit: int = 160) -> str:
    """An information-state string (or any value) for a message.

    Args:
      key: the value.
      limit: the most characters shown (a game may key its infosets by the whole
        history).

    Returns:
      Its repr, `shorten`ed to `limit` characters.
    """
    return shorten(repr(key), limit)


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, ending in "..." where cut.

    Args:
      text: the text.
      limit: the most characters kept.

    Returns:
      The text, whole or cut.
    """
    return text if len(text) <= limit else text[:limit - 3] + "..."


def state_text(state, limit: int = 160) -> str:
    """A state for a message, on one line and at most `limit` characters.

    Args:
      state: a game state, or None.
      limit: the most characters shown.

    Returns:
      The text; "" when the state has no text of its own (Python's default
      `<... object at 0x...>` says nothing the history does not), "?" when its
      __str__ raises.
    """
    kind = type(state)
    if state is None or (kind.__str__ is object.__str__ and kind.__repr__ is object.__repr__):
        return ""
    try:
        text = " ".join(str(state).replace("\n", " | ").split())
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the real problem
        return "?"
    return shorten(text, limit)


def game_error(history: list[int], state, problem: str) -> GameError:
    """The GameError for `problem` at `history`.

    Args:
      history: the actions from the root to the offending state.
      state: that state, whose text the message adds if it has any.
      problem: what is wrong.

    Returns:
      The `GameError` (not raised).
    """
    text = state_text(state)
    return GameError(f"history {format_history(history)}"
                     + (f" (state: {text})" if text else "") + f": {problem}")


def raised(call: str, error: BaseException) -> str:
    """The problem of a game's call that raised.

    Args:
      call: the call as the message shows it (`call_text`).
      error: what it raised.

    Returns:
      "{call} raised {ErrorType}: {error}".
    """
    return f"{call} raised {type(error).__name__}: {error}"


def call_text(method: str, args: tuple) -> str:
    """A game's call as a message shows it.

    Args:
      method: the method's name.
      args: its arguments.

    Returns:
      "method(args...)", the arguments by repr.
    """
    return f"{method}({', '.join(map(repr, args))})"


# ---------------------------------------------------------------- the game
def class_given(game: type) -> str:
    """The problem of a game's class passed where an instance is needed.

    Args:
      game: the class.

    Returns:
      The problem, with the fix.
    """
    return f"got the class {game.__name__}; pass an instance: {game.__name__}()"


def num_players_problem(players) -> str | None:
    """The rule: num_players() is an integer >= 1.

    Args:
      players: what num_players() returned.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if not is_int(players) or players < 1:
        return f"num_players() returned {players!r}, expected an integer >= 1"
    return None


def declared_actions_problem(declared) -> str | None:
    """The rule: num_distinct_actions(), where declared, is an integer >= 1.

    Args:
      declared: what num_distinct_actions() returned, None where undeclared.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if declared is not None and (not is_int(declared) or declared < 1):
        return (f"num_distinct_actions() returned {declared!r}, expected an integer >= 1 "
                "(or None: inferred from the walk)")
    return None


def declared_utility_sum(game) -> float | None:
    """The constant sum of the returns the game declares.

    A pyspiel game declares one when its type is zero- or constant-sum; a protocol game
    through `utility_sum()`.

    Args:
      game: the game.

    Returns:
      The sum as a float, or None where the game declares none.

    Raises:
      GameError: the declaration is no number.
    """
    get_type = getattr(game, "get_type", None)
    if get_type is not None:
        kind = str(get_type().utility)
        return float(game.utility_sum()) if ("ZERO" in kind or "CONSTANT" in kind) else None
    value = declared(game, "utility_sum")
    if value is not None and not is_real(value):
        raise GameError(f"utility_sum() returned {value!r}, expected a number or None")
    return None if value is None else float(value)


def declared(game, method: str):
    """`game.method()`, where the game declares it.

    Args:
      game: the game.
      method: the optional method's name ("utility_sum", "num_distinct_actions").

    Returns:
      What it returns, or None where there is no such method or it raises
      NotImplementedError, RuntimeError or TypeError.
    """
    fn = getattr(game, method, None)
    if fn is None:
        return None
    try:
        return fn()
    except (NotImplementedError, RuntimeError, TypeError):
        return None


# ---------------------------------------------------------------- a state
def missing_method(state, method: str) -> str:
    """The problem of a state without a method the protocol needs.

    Args:
      state: the state.
      method: the method's name.

    Returns:
      The problem.
    """
    return (f"the state ({type(state).__name__}) has no {method}() method, which the "
            "protocol needs (see jaxsolve.protocol)")


def cannot_make_children(state) -> str | None:
    """Why `state` cannot make the state after an action.

    Args:
      state: the state.

    Returns:
      The problem where it has neither child(action) nor clone() and
      apply_action(action), else None.
    """
    if hasattr(state, "child") or (hasattr(state, "clone") and hasattr(state, "apply_action")):
        return None
    return (f"the state ({type(state).__name__}) needs child(action), or clone() and "
            "apply_action(action), to make the state after an action "
            "(jaxsolve.protocol.State supplies both)")


def children_change_parent(state) -> str:
    """The likely cause where making a state's children changed it, naming the method
    of the game's own code that made them (`make_child`'s choice): its child(), or
    its clone() where it has no child() or inherits `protocol.State.child` (a clone and
    apply_action).

    Args:
      state: the parent.

    Returns:
      The question to ask of the game's code.
    """
    if hasattr(state, "child") and getattr(type(state), "child", None) is not State.child:
        return "does child() change the state it is called on?"
    return "does clone() share state with the original?"


def make_child(state, action):
    """The state after `action`: child(action), or clone() then apply_action(action).

    Args:
      state: the state, left unchanged.
      action: the action or chance outcome.

    Returns:
      The new state.
    """
    if hasattr(state, "child"):
        return state.child(action)
    new = state.clone()
    new.apply_action(action)
    return new


def current_player_problem(player, num_players: int) -> str | None:
    """The rule: current_player() is a player 0..P-1, CHANCE or TERMINAL.

    A simultaneous-move node is named as such (it needs OpenSpiel's turn-based
    conversion).

    Args:
      player: what current_player() returned.
      num_players: P.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if type(player) is int and (0 <= player < num_players or player in (CHANCE, TERMINAL)):
        return None  # the usual case, first: the walk asks at every history
    if not is_int(player):
        return (f"current_player() returned {player!r}, expected an integer: a player "
                f"0..{num_players - 1}, CHANCE (-1) or TERMINAL (-4)")
    if player == SIMULTANEOUS:
        return ("simultaneous-move node: load the game with jaxsolve.openspiel.from_pyspiel, "
                "which applies OpenSpiel's turn-based conversion")
    if not (0 <= player < num_players or player in (CHANCE, TERMINAL)):
        return (f"current_player() returned {player}, expected 0..{num_players - 1}, "
                "CHANCE (-1) or TERMINAL (-4)")
    return None


def terminal_problem(terminal, player) -> str | None:
    """The rule: is_terminal() is true exactly where current_player() is TERMINAL.

    Args:
      terminal: what is_terminal() returned.
      player: what current_player() returned.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if bool(terminal) != (player == TERMINAL):
        return f"is_terminal() is {terminal} but current_player() is {player}"
    return None


def endless_problem(length: int, setting: str, limit: int) -> str:
    """The problem of a history that has not ended within a bound.

    Args:
      length: the history's number of actions.
      setting: the bound's name (max_depth, max_steps).
      limit: the bound's value it reached.

    Returns:
      The problem, with the fix.
    """
    return (f"history of length {length} with no terminal state ({setting}={limit:,}): "
            "the game may never end (does is_terminal() ever become true?); if its "
            f"histories really are this long, pass a larger {setting} (on the command "
            "line, --max-depth)")


def as_list(value) -> list | None:
    """`value` as a list when it is a sequence of items (list, tuple, range, array).

    Args:
      value: a game's answer.

    Returns:
      The list, or None (for None, a number, a string or a dict: no list of actions).
    """
    if isinstance(value, (str, bytes, dict)):
        return None
    try:
        return list(value)
    except TypeError:  # not iterable, or a 0-d array
        return None


def not_a_list(value) -> str:
    """The problem of a legal_actions() answer that is no list.

    Args:
      value: the answer.

    Returns:
      The problem.
    """
    return f"legal_actions() gave {value!r}; expected a list of integer actions"


def action_list_problem(actions: list, what: str, bound: int | None = None,
                        must_be_sorted: bool = True) -> str | None:
    """The rule of an action list: non-empty, integers in [0, bound) and below
    MAX_ACTION_ID, each once, ascending if `must_be_sorted`.

    Args:
      actions: the list.
      what: the call that gave it, for the message ("legal_actions()").
      bound: the declared num_distinct_actions(), None where undeclared.
      must_be_sorted: whether the list must be ascending.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if must_be_sorted and _plainly_valid(actions, bound):
        return None
    if len(actions) == 0:
        return f"{what} is empty at a non-terminal node"
    for a in actions:
        if not is_int(a):
            return f"{what} contains {a!r}, which is not an integer"
        if a < 0:
            return f"{what} contains the negative action {a}"
        if bound is not None and a >= bound:
            return (f"{what} contains action {a}, but the game declares "
                    f"num_distinct_actions() = {bound}")
        if a >= MAX_ACTION_ID:
            return (f"{what} contains action {a}: action ids are columns of the tree's "
                    "arrays (policies are [infosets, largest id + 1], children "
                    f"[histories, largest id + 1]), so they must lie below {MAX_ACTION_ID:,}; "
                    "number the actions 0, 1, 2, ... and name them with action_to_string")
    ordered = [int(a) for a in actions]
    if not must_be_sorted:
        ordered.sort()
    for a, b in zip(ordered, ordered[1:]):
        if a == b:
            return f"{what} lists action {a} twice: {ordered}"
        if b < a:
            return f"{what} is not sorted: {ordered}"
    return None


def _plainly_valid(actions: list, bound: int | None) -> bool:
    """Whether `actions` are Python ints, ascending from >= 0 and below the bounds: the
    usual case, told in one pass (the walk asks at every decision)."""
    previous = -1
    for a in actions:
        if type(a) is not int or a <= previous:
            return False
        previous = a
    limit = MAX_ACTION_ID if bound is None else min(bound, MAX_ACTION_ID)
    return 0 <= previous < limit


def is_pair(outcome) -> bool:
    """Whether a chance outcome is an (action, probability) pair.

    Args:
      outcome: one entry of chance_outcomes().

    Returns:
      True for a tuple, list or array of two items.
    """
    return isinstance(outcome, (tuple, list, np.ndarray)) and len(outcome) == 2


def chance_outcomes_problem(value) -> str | None:
    """The rule: chance_outcomes() is a list of (action, probability) pairs, with valid
    distinct actions and probabilities that are finite numbers >= 0 summing to 1.

    Args:
      value: what chance_outcomes() returned.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    outcomes = as_list(value)
    if outcomes is None or not all(is_pair(o) for o in outcomes):
        return f"chance_outcomes() must be a list of (action, probability) pairs, got {value!r}"
    problem = action_list_problem([a for a, _ in outcomes], "chance_outcomes()",
                                  must_be_sorted=False)
    if problem:
        return problem
    probs = [p for _, p in outcomes]
    odd = next((p for p in probs if not is_real(p)), None)
    if odd is not None:
        return f"chance probability {odd!r} is not a number"
    bad = [p for p in map(float, probs) if not math.isfinite(p) or p < 0]
    if bad:
        return f"chance probability {bad[0]} is negative or not finite"
    total = sum(map(float, probs))
    if abs(total - 1.0) > TOLERANCE:
        return f"chance probabilities sum to {total:.9g}, not 1"
    return None


def chance_legal_problem(legal, outcome_actions: list[int]) -> str | None:
    """The rule: at a chance node that answers legal_actions(), they are the outcomes'
    actions (OpenSpiel requires it; `as_openspiel_game` hands the game to code relying
    on it).

    Args:
      legal: what legal_actions() returned there, None where it gave nothing.
      outcome_actions: the actions of chance_outcomes(), sorted.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if legal is not None and sorted(legal) != outcome_actions:
        return (f"legal_actions() is {list(legal)} at this chance node but chance_outcomes() "
                f"lists the actions {outcome_actions} (OpenSpiel requires them equal)")
    return None


def returns_problem(value, num_players: int) -> str | None:
    """The rule: returns() at a terminal is one finite number per player.

    Args:
      value: what returns() returned.
      num_players: P.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    values = as_list(value)
    if values is not None and len(values) == num_players and all(
            type(v) is float and math.isfinite(v) for v in values):
        return None  # the usual case, first: the walk asks at every terminal
    if values is None:
        return (f"returns() gave {value!r} at a terminal; expected {num_players} numbers "
                "(one per player)")
    if len(values) != num_players:
        return f"returns() has {len(values)} entries for {num_players} players: {values}"
    odd = next((v for v in values if not is_real(v)), None)
    if odd is not None:
        return f"returns() contains {odd!r}, which is not a number"
    values = [float(v) for v in values]
    if not all(math.isfinite(v) for v in values):
        return f"returns() is not finite: {values}"
    return None


def returns_bounds_problem(values: list[float], low, high) -> str | None:
    """The rule: returns lie within the declared [min_utility(), max_utility()] (to a
    relative TOLERANCE); no bound is checked where either is undeclared.

    Args:
      values: the returns of one terminal.
      low: min_utility(), None where undeclared.
      high: max_utility(), None where undeclared.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if None in (low, high):
        return None
    tol = TOLERANCE * max(1.0, *map(abs, values))
    if not all(low - tol <= v <= high + tol for v in values):
        return (f"returns() {values} leave the declared [min_utility(), max_utility()] = "
                f"[{low}, {high}]")
    return None


def utility_sum_problem(utilities: np.ndarray, declared_sum: float) -> tuple[int, str] | None:
    """Every terminal's returns sum to the declared utility_sum(), within TOLERANCE.

    Args:
      utilities: [Z, P] the returns of Z terminals.
      declared_sum: the game's utility_sum().

    Returns:
      (the first offending row, its problem), or None.
    """
    off = np.abs(utilities.sum(axis=1) - declared_sum) > TOLERANCE
    if not off.any():
        return None
    z = int(np.argmax(off))
    return z, (f"the returns {utilities[z].tolist()} sum to {utilities[z].sum():.9g}, but "
               f"the game declares utility_sum() = {declared_sum}")


# ---------------------------------------------------------------- information states
def infoset_key_problem(key, named: str) -> str | None:
    """The rule: an information state's key is a str.

    Args:
      key: the key.
      named: the call that gave it, for the message.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if not isinstance(key, str):
        return f"{named} returned {type(key).__name__}, expected str"
    return None


def infoset_consistency_problem(key: str, first_player: int, first_legal: tuple,
                                first_history: Callable[[], list[int]], player: int,
                                legal: list[int]) -> str | None:
    """The rule: every history of one information state has its player and its legal
    actions.

    Args:
      key: the information state's string.
      first_player: the player at the first history met with `key`.
      first_legal: the legal actions there.
      first_history: gives that history (only called for a message).
      player: the player here.
      legal: the legal actions here.

    Returns:
      The problem as text, or None when the values keep the rule.
    """
    if first_player != player:
        return (f"information state {format_key(key)} belongs to player {first_player} "
                f"at history {format_history(first_history())} but to player {player} here")
    if tuple(first_legal) != tuple(legal):
        return (f"information state {format_key(key)} has legal actions {list(first_legal)} "
                f"at history {format_history(first_history())} but {list(legal)} here")
    return None


def own_move(key, action) -> str:
    """A player's last own (information state, action), for a message.

    Args:
      key: the information state, None for no own move yet.
      action: the action taken there.

    Returns:
      The text.
    """
    return "no move of its own" if key is None else f"action {action} at {format_key(key)}"


def imperfect_recall(key: str, move: str, history: list[int], first_move: str,
                     first_history: list[int]) -> str:
    """How a player forgets, for a message.

    Args:
      key: the information state it reaches.
      move: its last own move here (`own_move`).
      history: the history here.
      first_move: its last own move at the first history of `key`.
      first_history: that first history.

    Returns:
      The text: it reaches `key` after `move` here but after `first_move` there.
    """
    return (f"reaches {format_key(key)} after {move} at history {format_history(history)} "
            f"but after {first_move} at history {format_history(first_history)}")
