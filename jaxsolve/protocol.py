"""The game protocol: what a Python game implements so that `compile_game` can walk it.

It is OpenSpiel's Python interface, reduced to what a solver needs, so that a
`pyspiel.Game` satisfies it unchanged and a game written in plain Python needs no
OpenSpiel at all. Duck typing is enough; `Game` and `State` below are optional base
classes that supply the conveniences (`child`, `is_chance_node`, `action_to_string`).

A game object provides:

    num_players() -> int
    new_initial_state() -> State
    num_distinct_actions() -> int          # optional; a legal id at or above it is refused
    utility_sum() -> float | None          # optional; constant sum of returns, if any
    min_utility() / max_utility() -> float # optional; check_game checks returns lie within

A state provides:

    current_player() -> int     # a player index 0..n-1, CHANCE (-1) or TERMINAL (-4)
    legal_actions() -> list[int]          # sorted, distinct, non-negative
    chance_outcomes() -> list[(int, float)]   # at chance nodes: (action, probability)
    apply_action(action) and/or child(action) # mutate in place / return a new state
    clone() -> State                      # needed only with apply_action and no child
    is_terminal() -> bool
    returns() -> list[float]              # one per player, at terminal states
    information_state_string(player) -> str   # identical exactly across an infoset
    action_to_string(player, action) -> str   # optional: names in strategy tables
    information_state_tensor(player) -> array # optional: fixed-length features

Players are numbered 0..n-1 and `returns()[p]` is player p's. `compile_game` calls
`information_state_string(p)` only at decision nodes and only for the player p to move
(chance and terminal states need none), and two histories are one infoset exactly when
those strings are equal. Actions are the game's own integer ids (below 2**24): an id
is one column of every policy array (`[infosets, largest id used + 1]`, whatever
num_distinct_actions() declares), so a node lists the ids it allows, and different
infosets may allow different ids (the other columns of their rows are masked,
`tree.legal`). `jaxsolve.check_game(game)` checks all of this on
a game and names the first offending history.

Simultaneous-move nodes (current_player() == SIMULTANEOUS) are not walked directly:
pass a pyspiel game through `jaxsolve.openspiel.from_pyspiel`, which applies
OpenSpiel's turn-based conversion.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol, Sequence, runtime_checkable

CHANCE = -1
SIMULTANEOUS = -2
TERMINAL = -4


def _missing(obj, method: str) -> NotImplementedError:
    """The error of a base-class method that a subclass must override."""
    return NotImplementedError(f"{type(obj).__name__} must implement {method} (see "
                               "jaxsolve.protocol)")


def is_game(obj: Any) -> bool:
    """Whether `obj` is a game object (not a class).

    Args:
      obj: anything.

    Returns:
      True if `obj` is not a class and has `num_players` and `new_initial_state`.
    """
    return (not isinstance(obj, type) and hasattr(obj, "num_players")
            and hasattr(obj, "new_initial_state"))


@runtime_checkable
class GameState(Protocol):
    """Structural type of a state (see the module docstring for the contracts).

    Not instantiated: it types the states a game returns.
    """

    def current_player(self) -> int:
        """The player to move.

        Returns:
          A player index in 0..n-1, `CHANCE` (-1) or `TERMINAL` (-4).
        """

    def legal_actions(self) -> Sequence[int]:
        """The actions allowed here.

        Returns:
          The action ids, sorted, distinct and non-negative.
        """

    def is_terminal(self) -> bool:
        """Whether the game has ended.

        Returns:
          True at terminal states.
        """

    def returns(self) -> Sequence[float]:
        """Each player's return, read at terminal states.

        Returns:
          One number per player: `returns()[p]` is player p's.
        """

    def information_state_string(self, player: int) -> str:
        """What `player` knows here; equal strings are one infoset.

        Args:
          player: the player to move (the only one `compile_game` asks about).

        Returns:
          A string identical exactly across the histories of an infoset.
        """


@runtime_checkable
class GameLike(Protocol):
    """Structural type of a game (see the module docstring for the contracts).

    Not instantiated: `compile_game` and `check_game` are annotated with it.
    """

    def num_players(self) -> int:
        """The number of players.

        Returns:
          n: the players are numbered 0..n-1.
        """

    def new_initial_state(self) -> Any:
        """A new state at the start of the game.

        Returns:
          The root state, a `GameState`.
        """


class State:
    """Optional base class for protocol states.

    Subclasses implement `current_player`, `legal_actions`, `chance_outcomes` (at chance
    nodes), `_apply_action`, `returns` and `information_state_string`; this class
    supplies `apply_action`, `child`, `clone`, `is_chance_node`, `is_terminal` and a
    default `action_to_string`.
    """

    def current_player(self) -> int:
        """The player to move; subclasses implement it.

        Returns:
          A player index in 0..n-1, `CHANCE` (-1) or `TERMINAL` (-4).

        Raises:
          NotImplementedError: where a subclass does not implement it.
        """
        raise _missing(self, "current_player()")

    def legal_actions(self, player: int | None = None) -> list[int]:
        """The actions allowed here; subclasses implement it.

        Args:
          player: OpenSpiel's optional player argument; the walk passes none.

        Returns:
          The action ids, sorted, distinct and non-negative (below 2**24).

        Raises:
          NotImplementedError: where a subclass does not implement it.
        """
        raise _missing(self, "legal_actions()")

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The outcomes of a chance node; subclasses with chance nodes implement it.

        Returns:
          (action, probability) pairs, the probabilities summing to 1.

        Raises:
          NotImplementedError: where a subclass does not implement it.
        """
        raise _missing(self, "chance_outcomes()")

    def _apply_action(self, action: int) -> None:
        raise _missing(self, "_apply_action(action)")

    def returns(self) -> list[float]:
        """Each player's return at a terminal state; subclasses implement it.

        Returns:
          One number per player: `returns()[p]` is player p's.

        Raises:
          NotImplementedError: where a subclass does not implement it.
        """
        raise _missing(self, "returns()")

    def information_state_string(self, player: int) -> str:
        """What `player` knows here; subclasses implement it.

        Args:
          player: the player to move.

        Returns:
          A string identical exactly across the histories of an infoset.

        Raises:
          NotImplementedError: where a subclass does not implement it.
        """
        raise _missing(self, "information_state_string(player)")

    def apply_action(self, action: int) -> None:
        """Plays `action` in place, by the subclass's `_apply_action`.

        Args:
          action: a legal action id, or a chance outcome's action.
        """
        self._apply_action(action)

    def child(self, action: int) -> "State":
        """The state after `action`, leaving this one unchanged.

        Args:
          action: a legal action id, or a chance outcome's action.

        Returns:
          A new state: a clone with the action applied.
        """
        new = self.clone()
        new.apply_action(action)
        return new

    def clone(self) -> "State":
        """A copy of this state.

        Returns:
          A deep copy, independent of this state.
        """
        return copy.deepcopy(self)

    def is_terminal(self) -> bool:
        """Whether the game has ended.

        Returns:
          True where `current_player()` is `TERMINAL`.
        """
        return self.current_player() == TERMINAL

    def is_chance_node(self) -> bool:
        """Whether chance moves here.

        Returns:
          True where `current_player()` is `CHANCE`.
        """
        return self.current_player() == CHANCE

    def action_to_string(self, player: int, action: int) -> str:
        """An action's name in strategy tables.

        Args:
          player: the player to move.
          action: the action id.

        Returns:
          The id as a string; subclasses may name actions.
        """
        return str(action)


class Game:
    """Optional base class for protocol games: subclasses implement
    `new_initial_state` and declare their sizes as class attributes (or override the
    methods): `players`, `actions` (num_distinct_actions), `utility_range`
    ((min, max) of any return) and `constant_sum` (0.0 for zero-sum games)."""

    players: int = 2
    actions: int | None = None
    utility_range: tuple[float, float] | None = None
    constant_sum: float | None = None  # None: general-sum

    def num_players(self) -> int:
        """The number of players, the class attribute `players`.

        Returns:
          n: the players are numbered 0..n-1.
        """
        return self.players

    def num_distinct_actions(self) -> int | None:
        """The declared number of action ids, the class attribute `actions`.

        Returns:
          The bound every legal id lies below, or None where undeclared.
        """
        return self.actions

    def utility_sum(self) -> float | None:
        """The constant sum of the returns, the class attribute `constant_sum`.

        Returns:
          The sum (0.0 for a zero-sum game), or None for a general-sum game.
        """
        return self.constant_sum

    def min_utility(self) -> float | None:
        """The least return any player can get, from `utility_range`.

        Returns:
          The lower bound, or None where undeclared.
        """
        return None if self.utility_range is None else self.utility_range[0]

    def max_utility(self) -> float | None:
        """The largest return any player can get, from `utility_range`.

        Returns:
          The upper bound, or None where undeclared.
        """
        return None if self.utility_range is None else self.utility_range[1]

    def new_initial_state(self) -> State:
        """A new state at the start of the game; subclasses implement it.

        Returns:
          The root state.

        Raises:
          NotImplementedError: where a subclass does not implement it.
        """
        raise _missing(self, "new_initial_state()")
