"""Orbital Pursuit-Evasion: a 5x5 grid sensor-allocation game.

An Attacker spacecraft tries to reach the centre of a grid of orbital phase space
undetected, while a Defender chooses each turn which of its sensors to activate. The
game comes from the same tutorial on writing custom OpenSpiel games for space
situational awareness as Mini Maneuver. The tutorial gives each sensor a detection
probability yet detects every covered Attacker; `detection` picks either reading, and
`infostate="entry_position_turn"` reproduces the tutorial's information-state strings
and tensor.

Rules. Cells are (row, col), 0..4, row 0 at the north; the centre is (2, 2). Chance
picks the Attacker's (player 0) entry cell uniformly: 0 = N (0,2), 1 = S (4,2),
2 = E (2,4), 3 = W (2,0). Then at most 3 turns, each:

  1. The Defender (player 1) activates one of 5 sensors, covering
       0 NW {(0,0),(0,1),(1,0),(1,1)}   1 NE {(0,3),(0,4),(1,3),(1,4)}
       2 SW {(3,0),(3,1),(4,0),(4,1)}   3 SE {(3,3),(3,4),(4,3),(4,4)}
       4 Centre cross {(1,2),(2,1),(2,2),(2,3),(3,2)}.
     If the Attacker's current cell is covered, it is detected: always with
     detection="deterministic"; with detection="stochastic" a chance node follows
     (0 = "Not detected", 1 = "Detected") detecting with probability 0.7 for the
     corner sensors 0-3 and 0.9 for the centre cross. Detection ends the game.
  2. The Attacker moves 0 = N, 1 = S, 2 = E, 3 = W or 4 = Stay, clamped to the grid
     (a move off the edge stays put). Reaching the centre ends the game.
After the third Attacker move without a result the game ends.
Returns: Attacker reaches the centre: (+1, -1); otherwise (detected, or time out)
the Defender wins: (-1, +1). Zero-sum.

Every centre neighbour lies under the cross, so the Attacker is always exposed to
sensor 4 on the turn before it wins (value -1 deterministic, -0.8 stochastic).

Parameters:
  detection: "deterministic" (default): a covered Attacker is always detected; or
    "stochastic": a covered Attacker is detected with the sensor's probability (0.7
    for a corner sensor, 0.9 for the centre cross), drawn at a chance node.
  infostate: "perfect_recall" (default) or "entry_position_turn" ("seed", its old
    name, still works in this version and warns).
    perfect_recall: Attacker "entry=N,moves=S.Stay,pos=(1,2),turn=2" -- its entry
      and its own moves (it never sees the Defender's sensor; that it was not
      detected is implied by the game going on, so there is nothing more to see).
      Defender: its "(sensor, result)" history, e.g. "s4=N,s0=N" ("no_history"
      at first), which is already perfect recall; a pending stochastic detection
      shows as "s4=?".
    entry_position_turn: the tutorial's strings: Attacker "entry=0,pos=(1,2),turn=1"
      (entry index, position, turn; the turn does not count a winning move). These FORGET
      the Attacker's own moves: different move sequences reaching the same cell on
      the same turn (e.g. N-then-S vs Stay-Stay, or a clamped move vs Stay) share
      one infoset, so the game has IMPERFECT RECALL for the Attacker (`jaxsolve
      check` reports NOTE perfect_recall for player 0, a finding rather than a
      failure: the game still compiles), and CFR's guarantees (and exact
      exploitability) do not hold in this mode.
Information-state tensors, length 30 (float32) for both players:
  Defender: turn t in 0..2 occupies [10t, 10t+10): [10t + s] sensor s chosen,
    [10t + 5 + s] sensor s detected.
  Attacker, infostate="entry_position_turn": [0:4] entry one-hot, [4:29] position one-hot
    (row * 5 + col), [29] turn / 3.
  Attacker, infostate="perfect_recall": [0:4] entry one-hot, [4:19] move one-hot
    per turn (4 + 5 * turn + move), [19:24] row one-hot, [24:29] column one-hot,
    [29] turn / 3 -- a faithful encoding of the perfect-recall infostate.
"""

from __future__ import annotations

import numpy as np

from jaxsolve._deprecated import renamed
from jaxsolve.errors import ArgumentError
from jaxsolve.protocol import CHANCE, TERMINAL, Game, State

ATTACKER, DEFENDER = 0, 1
GRID, CENTER, MAX_TURNS = 5, (2, 2), 3
ENTRIES = ((0, 2), (4, 2), (2, 4), (2, 0))
ENTRY_NAMES, MOVE_NAMES = ("N", "S", "E", "W"), ("N", "S", "E", "W", "Stay")
_DELTAS = ((-1, 0), (1, 0), (0, 1), (0, -1), (0, 0))
SENSOR_NAMES = ("NW", "NE", "SW", "SE", "Centre")
COVERAGE = (frozenset({(0, 0), (0, 1), (1, 0), (1, 1)}),
            frozenset({(0, 3), (0, 4), (1, 3), (1, 4)}),
            frozenset({(3, 0), (3, 1), (4, 0), (4, 1)}),
            frozenset({(3, 3), (3, 4), (4, 3), (4, 4)}),
            frozenset({(1, 2), (2, 1), (2, 2), (2, 3), (3, 2)}))
DETECTION_PROB, (NOT_DETECTED, DETECTED) = (0.7, 0.7, 0.7, 0.7, 0.9), (0, 1)
_DETECTIONS = ("deterministic", "stochastic")
_INFOSTATES = ("perfect_recall", "entry_position_turn")


def _move(pos: tuple[int, int], action: int) -> tuple[int, int]:
    dr, dc = _DELTAS[action]
    return min(GRID - 1, max(0, pos[0] + dr)), min(GRID - 1, max(0, pos[1] + dc))


class OrbitalPursuitEvasion(Game):
    """The 5x5 sensor-allocation game; the module docstring has rules and parameters."""

    players = 2
    actions = 5
    utility_range = (-1.0, 1.0)
    constant_sum = 0.0

    def __init__(self, *, detection: str = "deterministic", infostate: str = "perfect_recall"):
        if isinstance(infostate, str) and infostate == "seed":
            renamed("infostate='seed'", "infostate='entry_position_turn'",
                    "orbital_pursuit_evasion")
            infostate = "entry_position_turn"
        if detection not in _DETECTIONS:
            raise ArgumentError(f"orbital_pursuit_evasion: parameter 'detection' must be one "
                                f"of {_DETECTIONS}, got {detection!r}")
        if infostate not in _INFOSTATES:
            raise ArgumentError(f"orbital_pursuit_evasion: parameter 'infostate' must be one "
                                f"of {_INFOSTATES}, got {infostate!r}")
        self.detection, self.infostate = detection, infostate

    def new_initial_state(self) -> "OrbitalPursuitEvasionState":
        return OrbitalPursuitEvasionState(self.detection == "stochastic",
                                          self.infostate == "entry_position_turn")

    def information_state_tensor_shape(self) -> list[int]:
        return [30]

    def __repr__(self) -> str:
        return (f"OrbitalPursuitEvasion(detection={self.detection!r}, "
                f"infostate={self.infostate!r})")


class OrbitalPursuitEvasionState(State):
    """Entry, the Attacker's moves, the Defender's (sensor, detected) history and the
    pending sensor of a stochastic detection; the position is cached."""

    __slots__ = ("_stochastic", "_forgets_moves", "_entry", "_pos", "_moves", "_sensed",
                 "_pending", "_winner")

    def __init__(self, stochastic: bool, forgets_moves: bool):
        self._stochastic, self._forgets_moves = stochastic, forgets_moves
        self._entry: int | None = None
        self._pos: tuple[int, int] | None = None
        self._moves: list[int] = []
        self._sensed: list[tuple[int, bool]] = []
        self._pending: int | None = None   # sensor awaiting the detection chance node
        self._winner: int | None = None

    def clone(self) -> "OrbitalPursuitEvasionState":
        new = OrbitalPursuitEvasionState.__new__(OrbitalPursuitEvasionState)
        new._stochastic, new._forgets_moves = self._stochastic, self._forgets_moves
        new._entry, new._pos, new._pending, new._winner = (
            self._entry, self._pos, self._pending, self._winner)
        new._moves, new._sensed = self._moves.copy(), self._sensed.copy()
        return new

    def current_player(self) -> int:
        if self._winner is not None:
            return TERMINAL
        if self._entry is None or self._pending is not None:
            return CHANCE
        return DEFENDER if len(self._sensed) == len(self._moves) else ATTACKER

    def legal_actions(self, player: int | None = None) -> list[int]:
        cur = self.current_player()
        if cur == CHANCE:
            return [a for a, _ in self.chance_outcomes()]
        return [] if cur == TERMINAL else [0, 1, 2, 3, 4]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._entry is None:
            return [(i, 0.25) for i in range(4)]
        if self._pending is not None:
            p = DETECTION_PROB[self._pending]
            return [(NOT_DETECTED, 1.0 - p), (DETECTED, p)]
        return []

    def _apply_action(self, action: int) -> None:
        cur = self.current_player()
        if action not in self.legal_actions():
            raise ArgumentError(f"illegal action {action!r} at {self}")
        if cur == CHANCE and self._entry is None:
            self._entry, self._pos = action, ENTRIES[action]
        elif cur == CHANCE:
            self._resolve(self._pending, action == DETECTED)
            self._pending = None
        elif cur == DEFENDER:
            if self._pos not in COVERAGE[action]:
                self._resolve(action, False)
            elif self._stochastic:
                self._pending = action
            else:
                self._resolve(action, True)
        else:
            self._moves.append(action)
            self._pos = _move(self._pos, action)
            if self._pos == CENTER:
                self._winner = ATTACKER
            elif len(self._moves) >= MAX_TURNS:
                self._winner = DEFENDER

    def _resolve(self, sensor: int, detected: bool) -> None:
        self._sensed.append((sensor, detected))
        if detected:
            self._winner = DEFENDER

    def _turn(self) -> int:
        # The entry-position-turn strings do not count the winning move (the turn counter stops on
        # reaching the centre); perfect-recall strings count every move.
        won = self._forgets_moves and self._winner == ATTACKER
        return len(self._moves) - (1 if won else 0)

    def returns(self) -> list[float]:
        if self._winner is None:
            return [0.0, 0.0]
        return [1.0, -1.0] if self._winner == ATTACKER else [-1.0, 1.0]

    def information_state_string(self, player: int) -> str:
        if player == ATTACKER:
            if self._entry is None:
                return ""
            (r, c), turn = self._pos, self._turn()
            if self._forgets_moves:
                return f"entry={self._entry},pos=({r},{c}),turn={turn}"
            moves = ".".join(MOVE_NAMES[m] for m in self._moves)
            return f"entry={ENTRY_NAMES[self._entry]},moves={moves},pos=({r},{c}),turn={turn}"
        if player == DEFENDER:
            parts = [f"s{s}={'D' if d else 'N'}" for s, d in self._sensed]
            if self._pending is not None:
                parts.append(f"s{self._pending}=?")
            return ",".join(parts) if parts else "no_history"
        raise ArgumentError(f"player must be 0 or 1, got {player!r}")

    def information_state_tensor(self, player: int) -> np.ndarray:
        t = np.zeros(30, dtype=np.float32)
        if player == DEFENDER:
            for turn, (sensor, detected) in enumerate(self._sensed):
                t[10 * turn + sensor] = 1.0
                if detected:
                    t[10 * turn + 5 + sensor] = 1.0
        elif player == ATTACKER:
            if self._entry is None:
                return t
            t[self._entry] = 1.0
            (r, c), turn = self._pos, self._turn()
            if self._forgets_moves:
                t[4 + r * GRID + c] = 1.0
            else:
                for i, m in enumerate(self._moves):
                    t[4 + 5 * i + m] = 1.0
                t[19 + r] = t[24 + c] = 1.0
            t[29] = turn / MAX_TURNS
        else:
            raise ArgumentError(f"player must be 0 or 1, got {player!r}")
        return t

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE:
            if self._entry is None:
                return f"Entry {ENTRY_NAMES[action]}"
            return "Detected" if action == DETECTED else "Not detected"
        if player == DEFENDER:
            return f"Sensor {SENSOR_NAMES[action]}"
        return MOVE_NAMES[action]

    def __str__(self) -> str:
        if self._entry is None:
            return "initial(chance)"
        return (f"entry={ENTRY_NAMES[self._entry]} pos={self._pos} "
                f"moves={[MOVE_NAMES[m] for m in self._moves]} sensed={self._sensed}"
                + (f" pending={self._pending}" if self._pending is not None else ""))
