"""Kuhn poker for 2..10 players, with the rules (and ids) of OpenSpiel's `kuhn_poker`.

Rules. The deck holds players + 1 cards, 0 (lowest) .. players (highest). Every
player antes 1 chip. Chance then deals one card to player 0, 1, ..., n-1 in turn:
one chance node per card, uniform over the cards still in the deck; the outcome id
is the card. Betting is one lap, starting with player 0; each player has two
actions, 0 = Pass (check, or fold when facing a bet) and 1 = Bet (bet, or call).

  * If nobody bets, every player acts once and the highest card dealt takes the pot.
  * Once someone bets, the betting continues round the table until every other
    player (including those who checked before the bet) has answered it once with
    Pass (fold) or Bet (call, 1 chip). Among the first bettor and the callers, the
    highest card takes the pot.

Returns are chips won minus chips put in: the winner gets pot - own stake, every
other player loses their stake (1, or 2 if they bet/called). So the sum is zero,
and returns lie in [-2, 2 * (players - 1)].

Information-state tensor, length 6 * players - 1 (float32):
  [0, n)              one-hot: the observing player
  [n, 2n + 1)         one-hot: the observing player's card (all zero before dealt)
  [2n + 1, 6n - 1)    2 bits per betting slot, 2n - 1 slots (the longest game):
                      (1, 0) = Pass, (0, 1) = Bet, (0, 0) = not yet played
"""

from __future__ import annotations

import numpy as np

from jaxsolve.errors import ArgumentError
from jaxsolve.protocol import CHANCE, TERMINAL, Game, State

PASS, BET = 0, 1
_MIN_PLAYERS, _MAX_PLAYERS = 2, 10  # OpenSpiel's kuhn_poker allows the same range


class KuhnPoker(Game):
    """Kuhn poker with `players` players (2..10)."""

    actions = 2

    def __init__(self, *, players: int = 2):
        # bool is an int subclass; reject it too, since True would silently mean 1.
        if (not isinstance(players, (int, np.integer)) or isinstance(players, bool)
                or not _MIN_PLAYERS <= players <= _MAX_PLAYERS):
            raise ArgumentError(
                f"kuhn_poker: parameter 'players' must be an integer in "
                f"{_MIN_PLAYERS}..{_MAX_PLAYERS}, got {players!r}")
        self.players = int(players)

    def new_initial_state(self) -> "KuhnState":
        return KuhnState(self.players)

    def utility_sum(self) -> float:
        return 0.0

    def min_utility(self) -> float:
        return -2.0  # ante plus one call

    def max_utility(self) -> float:
        return 2.0 * (self.players - 1)  # every opponent called a bet

    def information_state_tensor_shape(self) -> list[int]:
        return [6 * self.players - 1]

    def __repr__(self) -> str:
        return f"KuhnPoker(players={self.players})"


class KuhnState(State):
    """A node of the Kuhn tree: the deal so far and the betting sequence so far.

    Everything else (whose turn, the first bettor, whether the hand is over) is
    derived from these two short lists, so a clone is two list copies.
    """

    __slots__ = ("_n", "_cards", "_bets")

    def __init__(self, players: int):
        self._n = players
        self._cards: list[int] = []  # _cards[p] is player p's card, in dealing order
        self._bets: list[int] = []   # PASS/BET actions, in order of play

    def clone(self) -> "KuhnState":
        new = KuhnState.__new__(KuhnState)
        new._n = self._n
        new._cards = self._cards.copy()
        new._bets = self._bets.copy()
        return new

    # -- derived facts -----------------------------------------------------------
    def _first_bettor(self) -> int:
        # Before the first bet every action is a pass, so the index of the first BET
        # in the sequence is also the first bettor's player id.
        try:
            return self._bets.index(BET)
        except ValueError:
            return -1

    def _terminal(self) -> bool:
        if len(self._cards) < self._n:
            return False
        first = self._first_bettor()
        if first < 0:
            return len(self._bets) == self._n
        # After the bet, the other n - 1 players answer once each.
        return len(self._bets) == first + self._n

    def _in_pot(self, player: int) -> int:
        # A player acts at most twice (slots p and p + n); any BET among them means
        # they put in a second chip.
        return 2 if BET in self._bets[player::self._n] else 1

    # -- protocol ----------------------------------------------------------------
    def current_player(self) -> int:
        if len(self._cards) < self._n:
            return CHANCE
        if self._terminal():
            return TERMINAL
        return len(self._bets) % self._n  # player 0 opens, then round the table

    def legal_actions(self, player: int | None = None) -> list[int]:
        cur = self.current_player()
        if cur == CHANCE:
            return [a for a, _ in self.chance_outcomes()]
        if cur == TERMINAL:
            return []
        return [PASS, BET]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if len(self._cards) >= self._n:
            return []
        left = [c for c in range(self._n + 1) if c not in self._cards]
        p = 1.0 / len(left)
        return [(c, p) for c in left]

    def _apply_action(self, action: int) -> None:
        cur = self.current_player()
        if cur == CHANCE:
            if action in self._cards or not 0 <= action <= self._n:
                raise ArgumentError(f"card {action} is not in the deck")
            self._cards.append(action)
        elif cur == TERMINAL:
            raise ArgumentError("cannot act at a terminal state")
        elif action not in (PASS, BET):
            raise ArgumentError(f"illegal Kuhn action {action}; legal: 0=Pass, 1=Bet")
        else:
            self._bets.append(action)

    def returns(self) -> list[float]:
        n = self._n
        if not self._terminal():
            return [0.0] * n
        stakes = [self._in_pot(p) for p in range(n)]
        # Contenders: everyone if nobody bet, else the bettor and the callers.
        contenders = [p for p in range(n) if self._first_bettor() < 0 or stakes[p] == 2]
        winner = max(contenders, key=lambda p: self._cards[p])
        pot = sum(stakes)
        return [float(pot - stakes[p]) if p == winner else -float(stakes[p])
                for p in range(n)]

    def information_state_string(self, player: int) -> str:
        card = str(self._cards[player]) if player < len(self._cards) else "?"
        history = "".join("b" if a == BET else "p" for a in self._bets)
        return f"p{player} card={card} history={history}"

    def information_state_tensor(self, player: int) -> np.ndarray:
        n = self._n
        out = np.zeros(6 * n - 1, dtype=np.float32)
        out[player] = 1.0
        if player < len(self._cards):
            out[n + self._cards[player]] = 1.0
        base = 2 * n + 1
        for i, a in enumerate(self._bets):
            out[base + 2 * i + a] = 1.0
        return out

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE:
            return f"Deal:{action}"
        return "Bet" if action == BET else "Pass"

    def __str__(self) -> str:
        deal = " ".join(map(str, self._cards))
        return f"{deal} {''.join('b' if a else 'p' for a in self._bets)}".strip()
