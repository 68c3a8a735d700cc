"""Mini Maneuver: a two-player signalling game about hiding a satellite maneuver.

The game is the warm-up example of a tutorial on writing custom OpenSpiel games for
space situational awareness; the rules, information-state strings and tensor below
are the tutorial's.

Rules. Chance deals the Operator (player 0) one private card, each with probability
1/2: 0 = "No-maneuver" (N) or 1 = "Maneuver" (M). The Operator sees the card and
plays 0 = "Signal" (S) or 1 = "Quiet" (Q); the signal is public. The Observer
(player 1) sees the signal, not the card, and plays 0 = "Watch" (W) or 1 = "Skip"
(K). The game then ends. Returns (Operator, Observer):

    card M, Watch: (-2, +2)   caught maneuvering
    card M, Skip:  (+1, -1)   got away
    card N, Watch: (+1, -1)   wasted observation
    card N, Skip:  ( 0,  0)   nothing happens

Zero-sum, returns in [-2, 2]. The tree has 15 histories (1 + 2 + 4 + 8 terminals);
the Operator has 2 infosets (one per card), the Observer 2 (one per signal).

The game has no parameters.

Information states:
  Operator: "card=NO_MANEUVER" / "card=MANEUVER", with ",my_action=0|1" (0 = Signal,
    1 = Quiet) appended once it has acted; "" before the deal.
  Observer: "signal=S" / "signal=Q" once the Operator has acted ("" before).
Information-state tensor, length 4 (float32):
  [0] card is N, [1] card is M   (Operator only; zero for the Observer)
  [2] signal S, [3] signal Q     (both players, once the Operator has acted)
"""

from __future__ import annotations

import numpy as np

from jaxsolve.errors import ArgumentError
from jaxsolve.protocol import CHANCE, TERMINAL, Game, State

NO_MANEUVER, MANEUVER = 0, 1   # chance outcomes (the Operator's card)
SIGNAL, QUIET = 0, 1           # Operator actions
WATCH, SKIP = 0, 1             # Observer actions
OPERATOR, OBSERVER = 0, 1

_CARD_NAMES = ("No-maneuver", "Maneuver")
_CARD_SHORT = ("N", "M")
_CARD_IDS = ("NO_MANEUVER", "MANEUVER")  # the names in the information-state strings
_OPERATOR_NAMES = ("Signal", "Quiet")
_OPERATOR_SHORT = ("S", "Q")
_OBSERVER_NAMES = ("Watch", "Skip")
# _RETURNS[card][observer_action] = (operator, observer)
_RETURNS = (((1.0, -1.0), (0.0, 0.0)),     # No-maneuver: Watch, Skip
            ((-2.0, 2.0), (1.0, -1.0)))    # Maneuver:    Watch, Skip


class MiniManeuver(Game):
    """Mini Maneuver: chance card, Operator signal, Observer watch/skip."""

    players = 2
    actions = 2
    utility_range = (-2.0, 2.0)
    constant_sum = 0.0

    def __init__(self):
        pass

    def new_initial_state(self) -> "MiniManeuverState":
        return MiniManeuverState()

    def information_state_tensor_shape(self) -> list[int]:
        return [4]

    def __repr__(self) -> str:
        return "MiniManeuver()"


class MiniManeuverState(State):
    """The three moves so far (None until made)."""

    __slots__ = ("_card", "_signal", "_response")

    def __init__(self):
        self._card: int | None = None
        self._signal: int | None = None
        self._response: int | None = None

    def clone(self) -> "MiniManeuverState":
        new = MiniManeuverState.__new__(MiniManeuverState)
        new._card, new._signal, new._response = self._card, self._signal, self._response
        return new

    def current_player(self) -> int:
        if self._card is None:
            return CHANCE
        if self._signal is None:
            return OPERATOR
        if self._response is None:
            return OBSERVER
        return TERMINAL

    def legal_actions(self, player: int | None = None) -> list[int]:
        return [] if self._response is not None else [0, 1]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._card is not None:
            return []
        return [(NO_MANEUVER, 0.5), (MANEUVER, 0.5)]

    def _apply_action(self, action: int) -> None:
        if action not in (0, 1):
            raise ArgumentError(f"illegal Mini Maneuver action {action!r}; legal: 0, 1")
        if self._card is None:
            self._card = action
        elif self._signal is None:
            self._signal = action
        elif self._response is None:
            self._response = action
        else:
            raise ArgumentError("cannot act at a terminal state")

    def returns(self) -> list[float]:
        if self._response is None:
            return [0.0, 0.0]
        return list(_RETURNS[self._card][self._response])

    def information_state_string(self, player: int) -> str:
        if player == OPERATOR:
            if self._card is None:
                return ""
            s = f"card={_CARD_IDS[self._card]}"
            if self._signal is not None:
                s += f",my_action={self._signal}"
            return s
        if player == OBSERVER:
            return "" if self._signal is None else f"signal={_OPERATOR_SHORT[self._signal]}"
        raise ArgumentError(f"player must be 0 or 1, got {player!r}")

    def information_state_tensor(self, player: int) -> np.ndarray:
        if player not in (OPERATOR, OBSERVER):
            raise ArgumentError(f"player must be 0 or 1, got {player!r}")
        t = np.zeros(4, dtype=np.float32)
        if player == OPERATOR and self._card is not None:
            t[self._card] = 1.0
        if self._signal is not None:
            t[2 + self._signal] = 1.0
        return t

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE:
            return _CARD_NAMES[action]
        return (_OPERATOR_NAMES if player == OPERATOR else _OBSERVER_NAMES)[action]

    def __str__(self) -> str:
        parts = [_CARD_SHORT[self._card] if self._card is not None else "?"]
        if self._signal is not None:
            parts.append(_OPERATOR_SHORT[self._signal])
        if self._response is not None:
            parts.append("W" if self._response == WATCH else "K")
        return " ".join(parts)
