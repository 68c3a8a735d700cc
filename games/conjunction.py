"""Conjunction negotiation: two satellite operators, private priorities.

Two operators whose satellites face a possible collision each decide whether to
maneuver out of the way, knowing only their own satellite's mission priority. The
game and its cost table come from a course project on solving this negotiation with
vanilla CFR; the project asks what a third action (maneuver up or down) would
change, and `num_actions=3` is one answer.

Rules. Chance assigns Alice's (player 0) priority, then Bob's (player 1), each
independently 0 = "High" or 1 = "Low" with probability 1/2. Alice, knowing her own
priority (and Bob's too when `alice_sees_bob_priority`), chooses an action; then
Bob, knowing his own priority and Alice's action (not her priority), chooses his.
The game ends and each player receives its entry of the cost table (costs are
negative utilities):

    returns = costs[alice_priority, bob_priority, alice_action, bob_action, :]

General-sum: utility_sum() is None.

Actions. num_actions=2 (default): 0 = "Maneuver" (M), 1 = "Hold" (H).
num_actions=3: 0 = "Maneuver up", 1 = "Maneuver down", 2 = "Hold".

Parameters:
  costs: array of shape (2, 2, A, A, 2), A = num_actions, indexed [alice_priority,
    bob_priority, alice_action, bob_action, player] (priority 0 = High, 1 = Low).
    Default None: for A = 2 the default cost table (TWO_ACTION_COSTS below; in it each
    operator pays -3 for maneuvering at High priority and -1 otherwise, except
    that both holding is a collision, -10 each); for A = 3 its extension
    THREE_ACTION_COSTS, built from the 2-action table by reading up/down as M:
      * one maneuvers (up or down), the other holds -> the M/H entry;
      * both hold                                  -> the H/H entry (collision);
      * opposite directions (up/down, down/up)     -> the M/M entry: the
        satellites separate, and both pay their maneuver cost;
      * same direction (up/up, down/down)          -> the H/H entry (-10,
        -10): both shift the same way, the relative geometry is unchanged and
        the conjunction persists, exactly as if both had held.
    So with three actions the players must coordinate a direction, which is what
    the extra action adds strategically.
  alice_sees_bob_priority: bool, default False. True removes Alice's uncertainty
    (she sees Bob's priority before deciding): her infoset then also holds it.
  num_actions: 2 (default) or 3.

Information states (default): Alice 2 infosets "alice p=H" / "alice p=L"; Bob 4
infosets "bob p=H alice=M" etc. (his priority x Alice's action). With
alice_sees_bob_priority Alice has 4 ("alice p=H bob=L"); with 3 actions Bob has 6.
Information-state tensor, length 4 + 2A (float32), one layout for both players:
[0:2] Alice's priority one-hot (Alice only), [2:4] Bob's priority one-hot (Bob,
or Alice when she sees it), [4:4+A] Alice's action one-hot (both, once taken),
[4+A:4+2A] Bob's action one-hot (Bob only).
"""

from __future__ import annotations

import numpy as np

from jaxsolve._deprecated import module_getattr
from jaxsolve.errors import ArgumentError
from jaxsolve.protocol import CHANCE, TERMINAL, Game, State

ALICE, BOB = 0, 1
HIGH, LOW = 0, 1
MANEUVER, HOLD = 0, 1                  # num_actions = 2
UP, DOWN, HOLD3 = 0, 1, 2              # num_actions = 3
PRIORITY_NAMES = ("High", "Low")
_ACTION_NAMES = {2: ("Maneuver", "Hold"), 3: ("Maneuver up", "Maneuver down", "Hold")}
_ACTION_SHORT = {2: ("M", "H"), 3: ("U", "D", "H")}


def _default_costs() -> np.ndarray:
    """The default 2-action cost table, [alice_priority, bob_priority, alice_action,
    bob_action, player]."""
    c = np.zeros((2, 2, 2, 2, 2))
    # rows: (alice_prio, bob_prio): {(a, b): (alice_cost, bob_cost)}
    table = {
        (HIGH, HIGH): {(0, 0): (-3, -3), (0, 1): (-3, -1), (1, 0): (-1, -3), (1, 1): (-10, -10)},
        (HIGH, LOW): {(0, 0): (-3, -1), (0, 1): (-3, -1), (1, 0): (-1, -1), (1, 1): (-10, -10)},
        (LOW, HIGH): {(0, 0): (-1, -3), (0, 1): (-1, -1), (1, 0): (-1, -3), (1, 1): (-10, -10)},
        (LOW, LOW): {(0, 0): (-1, -1), (0, 1): (-1, -1), (1, 0): (-1, -1), (1, 1): (-10, -10)},
    }
    for (ap, bp), entries in table.items():
        for (a, b), cost in entries.items():
            c[ap, bp, a, b] = cost
    return c


def _three_action_costs(two: np.ndarray) -> np.ndarray:
    """The documented extension: up/down read as M; same direction = collision."""
    c = np.zeros((2, 2, 3, 3, 2))
    as_two = (MANEUVER, MANEUVER, HOLD)
    for a in range(3):
        for b in range(3):
            if a != HOLD3 and a == b:        # same direction: conjunction persists
                c[:, :, a, b] = two[:, :, HOLD, HOLD]
            else:
                c[:, :, a, b] = two[:, :, as_two[a], as_two[b]]
    return c


TWO_ACTION_COSTS = _default_costs()
THREE_ACTION_COSTS = _three_action_costs(TWO_ACTION_COSTS)
# SEED_COSTS, the old name of TWO_ACTION_COSTS, works for one more version and warns.
__getattr__ = module_getattr({"SEED_COSTS": "TWO_ACTION_COSTS"}, globals())


class Conjunction(Game):
    """The conjunction negotiation game; see the module docstring."""

    players = 2

    def __init__(self, *, costs=None, alice_sees_bob_priority: bool = False,
                 num_actions: int = 2):
        if (not isinstance(num_actions, (int, np.integer)) or isinstance(num_actions, bool)
                or num_actions not in (2, 3)):
            raise ArgumentError(f"conjunction: parameter 'num_actions' must be 2 or 3, "
                                f"got {num_actions!r}")
        if not isinstance(alice_sees_bob_priority, (bool, np.bool_)):
            raise ArgumentError(f"conjunction: parameter 'alice_sees_bob_priority' must be a "
                                f"bool, got {alice_sees_bob_priority!r}")
        n = int(num_actions)
        if costs is None:
            table = TWO_ACTION_COSTS if n == 2 else THREE_ACTION_COSTS
        else:
            try:
                table = np.array(costs, dtype=np.float64)
            except (TypeError, ValueError) as err:
                raise ArgumentError(f"conjunction: parameter 'costs' must be a numeric array "
                                    f"of shape (2, 2, {n}, {n}, 2)") from err
            if table.shape != (2, 2, n, n, 2):
                raise ArgumentError(
                    f"conjunction: parameter 'costs' must have shape (2, 2, {n}, {n}, 2) "
                    f"[alice_priority, bob_priority, alice_action, bob_action, player] for "
                    f"num_actions={n}, got {table.shape}")
            if not np.all(np.isfinite(table)):
                raise ArgumentError("conjunction: parameter 'costs' must be finite")
        self.costs = table.copy()
        self.costs.setflags(write=False)
        self.alice_sees_bob_priority = bool(alice_sees_bob_priority)
        self.actions = n

    def new_initial_state(self) -> "ConjunctionState":
        return ConjunctionState(self)

    def utility_sum(self) -> None:
        return None  # general-sum

    def min_utility(self) -> float:
        return float(self.costs.min())

    def max_utility(self) -> float:
        return float(self.costs.max())

    def information_state_tensor_shape(self) -> list[int]:
        return [4 + 2 * self.actions]

    def __repr__(self) -> str:
        default = TWO_ACTION_COSTS if self.actions == 2 else THREE_ACTION_COSTS
        costs = "None" if np.array_equal(self.costs, default) else "<array>"
        return (f"Conjunction(costs={costs}, alice_sees_bob_priority="
                f"{self.alice_sees_bob_priority}, num_actions={self.actions})")


class ConjunctionState(State):
    """The four moves so far, in order: priorities (A, B), then actions (A, B)."""

    __slots__ = ("_game", "_moves")

    def __init__(self, game: Conjunction):
        self._game = game
        self._moves: tuple[int, ...] = ()

    def clone(self) -> "ConjunctionState":
        new = ConjunctionState.__new__(ConjunctionState)
        new._game, new._moves = self._game, self._moves
        return new

    def current_player(self) -> int:
        k = len(self._moves)
        return CHANCE if k < 2 else (ALICE, BOB, TERMINAL)[min(k - 2, 2)]

    def legal_actions(self, player: int | None = None) -> list[int]:
        k = len(self._moves)
        return [HIGH, LOW] if k < 2 else list(range(self._game.actions)) if k < 4 else []

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return [(HIGH, 0.5), (LOW, 0.5)] if len(self._moves) < 2 else []

    def _apply_action(self, action: int) -> None:
        if action not in self.legal_actions():
            raise ArgumentError(f"illegal action {action!r} after moves {self._moves}")
        self._moves += (action,)

    def returns(self) -> list[float]:
        if len(self._moves) < 4:
            return [0.0, 0.0]
        return [float(v) for v in self._game.costs[self._moves]]

    def information_state_string(self, player: int) -> str:
        m, short = self._moves, _ACTION_SHORT[self._game.actions]
        if player == ALICE:
            if not m:
                return ""
            s = f"alice p={PRIORITY_NAMES[m[0]][0]}"
            if self._game.alice_sees_bob_priority and len(m) > 1:
                s += f" bob={PRIORITY_NAMES[m[1]][0]}"
            return s + (f" acted={short[m[2]]}" if len(m) > 2 else "")
        if player == BOB:
            if len(m) < 2:
                return ""
            s = f"bob p={PRIORITY_NAMES[m[1]][0]}"
            if len(m) > 2:
                s += f" alice={short[m[2]]}"
            return s + (f" acted={short[m[3]]}" if len(m) > 3 else "")
        raise ArgumentError(f"player must be 0 or 1, got {player!r}")

    def information_state_tensor(self, player: int) -> np.ndarray:
        if player not in (ALICE, BOB):
            raise ArgumentError(f"player must be 0 or 1, got {player!r}")
        m, n = self._moves, self._game.actions
        t = np.zeros(4 + 2 * n, dtype=np.float32)
        if player == ALICE and m:
            t[m[0]] = 1.0
        if len(m) > 1 and (player == BOB or self._game.alice_sees_bob_priority):
            t[2 + m[1]] = 1.0
        if len(m) > 2:
            t[4 + m[2]] = 1.0
        if player == BOB and len(m) > 3:
            t[4 + n + m[3]] = 1.0
        return t

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE:
            return f"{'Alice' if not self._moves else 'Bob'} priority {PRIORITY_NAMES[action]}"
        return _ACTION_NAMES[self._game.actions][action]

    def __str__(self) -> str:
        return " ".join(map(str, self._moves))
