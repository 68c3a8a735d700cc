"""Spoof, the 3-coin game, bounded to `max_rounds` rounds.

A blind player tries to turn three coins all heads up while a sighted opponent
rearranges them. The rules below are those of the gym-spoof two-agent environment,
which takes the game from Doyen and Raskin, "Games with Imperfect Information:
Theory and Algorithms"; the round bound and the draw are this module's, since the
unbounded game need not end.

Rules. Three coins in positions 0, 1, 2. First the starting arrangement, two heads
and one tail, is set: by Player 1, who picks the position of the tail (actions 0,
1, 2), or, with shuffle_initial=True, by chance, uniformly over the 3
arrangements (outcome = position of the tail). Then rounds, each:

  1. Player 0, who never sees the coins, names a coin (0, 1, 2) to toggle.
  2. The coin is toggled. If now all three are heads, Player 0 wins; all tails,
     Player 1 wins; either ends the game at once (see "when the win is checked").
  3. Player 1 may swap the two coins that were not toggled: 0 = "Keep",
     1 = "Swap".
  4. Player 0 is told the number of heads.
After `max_rounds` rounds without a result the game is a draw.
Returns: Player 0 wins (+1, -1), Player 1 wins (-1, +1), draw (0, 0). Zero-sum.

When the win is checked. The rules repeat "toggle, optional swap, report the
count" until all heads or all tails. A swap never changes the number of heads, so
the result is fixed the moment the coin is toggled; we check it right after the
toggle and end the game there, so Player 1 is never asked a swap that cannot
matter. (Checking after the swap instead would only add a dummy Player 1 node.)
In the last round, if the toggle decides nothing, Player 1 still has its (by
then irrelevant) swap decision, so every round has the same shape.

Parameters:
  max_rounds: int >= 1, default 4: the number of toggle rounds before a draw.
  shuffle_initial: bool, default False: chance (True) or Player 1 (False) sets the
    starting arrangement.

Information states (perfect recall for both players):
  Player 0: its own toggles and the head counts it was told, e.g. "p0 t1:1 t1:2"
    (toggled coin 1, told 1 head; toggled coin 1, told 2 heads); a round's count
    is told after Player 1's swap (so while Player 1 decides, Player 0's string
    holds the toggle but not yet its count: "p0 t1"). It never sees the
    arrangement nor the swaps.
  Player 1: everything: "p1 tail=2 t1 s1 t0 | coins=HTT" -- the starting tail,
    every toggle (t) and swap decision (s) in order, and the current coins.
Information-state tensor, length 3 + 9 * max_rounds (float32), one layout:
  [0:3] starting tail position one-hot (Player 1 only); then per round r a block
  of 9 at 3 + 9r: [0:3] toggled coin one-hot (both), [3:5] Keep/Swap one-hot
  (Player 1 only), [5:9] heads told 0..3 one-hot (both; 0 and 3 end the game).
"""

from __future__ import annotations

import numpy as np

from jaxsolve.errors import ArgumentError
from jaxsolve.protocol import CHANCE, TERMINAL, Game, State

PLAYER0, PLAYER1 = 0, 1
KEEP, SWAP = 0, 1


class Spoof(Game):
    """The 3-coin game; see the module docstring for the rules and parameters."""

    players = 2
    actions = 3
    utility_range = (-1.0, 1.0)
    constant_sum = 0.0

    def __init__(self, *, max_rounds: int = 4, shuffle_initial: bool = False):
        if (not isinstance(max_rounds, (int, np.integer)) or isinstance(max_rounds, bool)
                or max_rounds < 1):
            raise ArgumentError(f"spoof: parameter 'max_rounds' must be an integer >= 1, "
                                f"got {max_rounds!r}")
        if not isinstance(shuffle_initial, (bool, np.bool_)):
            raise ArgumentError(f"spoof: parameter 'shuffle_initial' must be a bool, "
                                f"got {shuffle_initial!r}")
        self.max_rounds, self.shuffle_initial = int(max_rounds), bool(shuffle_initial)

    def new_initial_state(self) -> "SpoofState":
        return SpoofState(self.max_rounds, self.shuffle_initial)

    def information_state_tensor_shape(self) -> list[int]:
        return [3 + 9 * self.max_rounds]

    def __repr__(self) -> str:
        return f"Spoof(max_rounds={self.max_rounds}, shuffle_initial={self.shuffle_initial})"


class SpoofState(State):
    """The starting tail, the list of moves since (toggle, swap, toggle, ...) and
    the current coins (1 = head) as a tuple."""

    __slots__ = ("_max_rounds", "_shuffle", "_tail", "_moves", "_coins")

    def __init__(self, max_rounds: int, shuffle: bool):
        self._max_rounds, self._shuffle = max_rounds, shuffle
        self._tail: int | None = None
        self._moves: list[int] = []
        self._coins: tuple[int, int, int] | None = None

    def clone(self) -> "SpoofState":
        new = SpoofState.__new__(SpoofState)
        new._max_rounds, new._shuffle, new._tail = self._max_rounds, self._shuffle, self._tail
        new._moves, new._coins = self._moves.copy(), self._coins
        return new

    def _heads(self) -> int:
        return sum(self._coins)

    def current_player(self) -> int:
        if self._tail is None:
            return CHANCE if self._shuffle else PLAYER1
        if self._heads() in (0, 3) or len(self._moves) == 2 * self._max_rounds:
            return TERMINAL
        return PLAYER0 if len(self._moves) % 2 == 0 else PLAYER1

    def legal_actions(self, player: int | None = None) -> list[int]:
        cur = self.current_player()
        if cur == TERMINAL:
            return []
        if self._tail is None or cur == PLAYER0:
            return [0, 1, 2]
        return [KEEP, SWAP]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self._tail is None and self._shuffle:
            return [(0, 1 / 3), (1, 1 / 3), (2, 1 / 3)]
        return []

    def _apply_action(self, action: int) -> None:
        if action not in self.legal_actions():
            raise ArgumentError(f"illegal action {action!r} at {self}")
        if self._tail is None:
            self._tail = action
            self._coins = tuple(0 if i == action else 1 for i in range(3))
            return
        coins = list(self._coins)
        if len(self._moves) % 2 == 0:          # Player 0 toggles a coin
            coins[action] ^= 1
        elif action == SWAP:                   # Player 1 swaps the other two
            i, j = [k for k in range(3) if k != self._moves[-1]]
            coins[i], coins[j] = coins[j], coins[i]
        self._moves.append(action)
        self._coins = tuple(coins)

    def returns(self) -> list[float]:
        if self.current_player() != TERMINAL:
            return [0.0, 0.0]
        heads = self._heads()
        return [1.0, -1.0] if heads == 3 else [-1.0, 1.0] if heads == 0 else [0.0, 0.0]

    def _head_counts(self) -> list[int]:
        """Head counts told to Player 0 so far: one per finished round (after the swap;
        a swap never changes the count), plus the deciding count when a toggle ends
        the game."""
        coins, counts = [0 if i == self._tail else 1 for i in range(3)], []
        for k, a in enumerate(self._moves):
            if k % 2 == 0:
                coins[a] ^= 1
                counts.append(sum(coins))
            elif a == SWAP:  # the swap moves heads between coins: replay it too
                i, j = [c for c in range(3) if c != self._moves[k - 1]]
                coins[i], coins[j] = coins[j], coins[i]
        if len(self._moves) % 2 == 1 and counts[-1] not in (0, 3):
            counts.pop()   # the swap of this round is still pending
        return counts

    def information_state_string(self, player: int) -> str:
        if player == PLAYER0:
            counts = self._head_counts()
            return " ".join(["p0"] + [f"t{c}" + (f":{counts[r]}" if r < len(counts) else "")
                                      for r, c in enumerate(self._moves[0::2])])
        if player == PLAYER1:
            if self._tail is None:
                return "p1"
            parts = ["p1", f"tail={self._tail}"]
            parts += [("t" if k % 2 == 0 else "s") + str(a) for k, a in enumerate(self._moves)]
            parts += ["|", "coins=" + "".join("H" if c else "T" for c in self._coins)]
            return " ".join(parts)
        raise ArgumentError(f"player must be 0 or 1, got {player!r}")

    def information_state_tensor(self, player: int) -> np.ndarray:
        if player not in (PLAYER0, PLAYER1):
            raise ArgumentError(f"player must be 0 or 1, got {player!r}")
        t = np.zeros(3 + 9 * self._max_rounds, dtype=np.float32)
        if self._tail is None:
            return t
        if player == PLAYER1:
            t[self._tail] = 1.0
        for k, a in enumerate(self._moves):
            base = 3 + 9 * (k // 2)
            if k % 2 == 0:
                t[base + a] = 1.0
            elif player == PLAYER1:
                t[base + 3 + a] = 1.0
        for r, heads in enumerate(self._head_counts()):
            t[3 + 9 * r + 5 + heads] = 1.0
        return t

    def action_to_string(self, player: int, action: int) -> str:
        if self._tail is None:
            return f"Tail at {action}"
        if player == PLAYER0:
            return f"Toggle {action}"
        return "Swap" if action == SWAP else "Keep"

    def __str__(self) -> str:
        if self._tail is None:
            return "(arrangement not set)"
        return f"{''.join('H' if c else 'T' for c in self._coins)} moves={self._moves}"
