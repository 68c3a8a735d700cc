"""Two-player Leduc poker, with the rules (and ids) of OpenSpiel's `leduc_poker`.

Rules. Six cards: ranks J < Q < K, two suits each; card id c has rank c // 2 and
suit c % 2 (0 = J1, 1 = J2, 2 = Q1, 3 = Q2, 4 = K1, 5 = K2). Both players ante 1.
Chance deals a private card to player 0, then to player 1 (uniform over the cards
left; the outcome id is the card id). Round 1 of betting follows, player 0 first;
then chance deals one public card from the four left, and round 2 follows, again
player 0 first. Actions: 0 = Fold, 1 = Call (a check when there is nothing to
call), 2 = Raise, which calls and then raises by 2 chips in round 1, 4 in round 2.

  * Fold is legal only when facing a raise (OpenSpiel offers no fold to a check).
  * Raise is legal while the round has had fewer than 2 raises.
  * A round ends when both players checked, or when a raise has been called.
  * Fold ends the hand: the other player takes the pot. After round 2, showdown: a
    private card pairing the public card wins; otherwise the higher private rank;
    equal ranks split the pot.

Returns are chips won minus chips put in, zero-sum, within [-13, 13].

Information-state tensor, length 38 (float32):
  [0, 2)     one-hot: the observing player
  [2, 8)     one-hot: the observing player's private card
  [8, 14)    one-hot: the public card (all zero before it is dealt)
  [14, 26)   round 1 betting, 4 slots x one-hot (Fold, Call, Raise)
  [26, 38)   round 2 betting, 4 slots x one-hot (Fold, Call, Raise)
A round has at most 4 actions (check, raise, raise, call), hence 4 slots.
"""

from __future__ import annotations

import numpy as np

from jaxsolve.errors import ArgumentError
from jaxsolve.protocol import CHANCE, TERMINAL, Game, State

FOLD, CALL, RAISE = 0, 1, 2
NUM_CARDS = 6
RAISE_SIZE = (2, 4)   # by round
MAX_RAISES = 2        # per round
_SLOTS = 4            # most actions in one round
_ACTION_NAMES = ("Fold", "Call", "Raise")
_ACTION_CHARS = "fcr"


def card_name(card: int) -> str:
    return "JQK"[card // 2] + str(card % 2 + 1)


class LeducPoker(Game):
    """Two-player Leduc poker (OpenSpiel's default parameters)."""

    players = 2
    actions = 3

    def new_initial_state(self) -> "LeducState":
        return LeducState()

    def utility_sum(self) -> float:
        return 0.0

    def min_utility(self) -> float:
        return -13.0  # ante 1 + two raises of 2 + two raises of 4

    def max_utility(self) -> float:
        return 13.0

    def information_state_tensor_shape(self) -> list[int]:
        return [2 + 2 * NUM_CARDS + 2 * 3 * _SLOTS]

    def __repr__(self) -> str:
        return "LeducPoker()"


class LeducState(State):
    """A node of the Leduc tree. The bookkeeping fields (stakes, raises, calls) are
    kept alongside the history rather than recomputed, because the compiler asks
    for current_player/legal_actions at every one of ~10^4 nodes."""

    def __init__(self):
        self.private: list[int] = []   # private[p] = player p's card, in dealing order
        self.public = -1               # the public card, -1 until dealt
        self.rounds: list[list[int]] = [[], []]  # betting sequence of each round
        self.ante = [1, 1]             # chips each player has put in
        self.stakes = 1                # the level a player must match to stay in
        self.raises = 0                # raises so far this round
        self.calls = 0                 # calls/checks since the last raise
        self.round = 0                 # 0 or 1
        self.folded = -1               # the player who folded, if any
        self.player = CHANCE           # whose turn: CHANCE, 0, 1 (TERMINAL derived)
        self.done = False

    def clone(self) -> "LeducState":
        new = LeducState.__new__(LeducState)
        new.__dict__.update(self.__dict__)
        # Only the lists are mutated in place, so only they need copying.
        new.private = self.private.copy()
        new.rounds = [self.rounds[0].copy(), self.rounds[1].copy()]
        new.ante = self.ante.copy()
        return new

    # -- protocol ----------------------------------------------------------------
    def current_player(self) -> int:
        return TERMINAL if self.done else self.player

    def legal_actions(self, player: int | None = None) -> list[int]:
        if self.done:
            return []
        if self.player == CHANCE:
            return [a for a, _ in self.chance_outcomes()]
        # Matches OpenSpiel: folding when not facing a bet is not offered.
        actions = [FOLD] if self.stakes > self.ante[self.player] else []
        actions.append(CALL)
        if self.raises < MAX_RAISES:
            actions.append(RAISE)
        return actions

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if self.done or self.player != CHANCE:
            return []
        left = [c for c in range(NUM_CARDS) if c not in self.private and c != self.public]
        p = 1.0 / len(left)
        return [(c, p) for c in left]

    def _apply_action(self, action: int) -> None:
        if self.done:
            raise ArgumentError("cannot act at a terminal state")
        if self.player == CHANCE:
            if action not in [a for a, _ in self.chance_outcomes()]:
                raise ArgumentError(f"card {action} is not in the deck")
            if len(self.private) < 2:
                self.private.append(action)
                if len(self.private) == 2:
                    self.player = 0
            else:
                self.public = action
                self.player = 0  # player 0 opens round 2 as well
            return
        if action not in self.legal_actions():
            raise ArgumentError(f"illegal Leduc action {action}; legal: {self.legal_actions()}")
        me = self.player
        self.rounds[self.round].append(action)
        if action == FOLD:
            self.folded = me
            self.done = True
            return
        if action == RAISE:
            # A raise first matches the current stakes, then lifts them.
            self.stakes += RAISE_SIZE[self.round]
            self.ante[me] = self.stakes
            self.raises += 1
            self.calls = 0
            self.player = 1 - me
            return
        self.ante[me] = self.stakes
        self.calls += 1
        # Two checks, or one call of a raise, close the round.
        if self.calls == (2 if self.raises == 0 else 1):
            if self.round == 1:
                self.done = True
            else:
                self.round, self.raises, self.calls = 1, 0, 0
                self.player = CHANCE  # the public card comes next
        else:
            self.player = 1 - me

    def returns(self) -> list[float]:
        if not self.done:
            return [0.0, 0.0]
        pot = self.ante[0] + self.ante[1]
        if self.folded >= 0:
            winners = [1 - self.folded]
        else:
            # A pair with the public card beats everything; otherwise the higher rank.
            # (OpenSpiel ranks the two-card hand, but the public card is shared, so
            # this is the same ordering.)
            strength = [(self.private[p] // 2 == self.public // 2, self.private[p] // 2)
                        for p in (0, 1)]
            best = max(strength)
            winners = [p for p in (0, 1) if strength[p] == best]
        share = pot / len(winners)
        return [(share if p in winners else 0.0) - self.ante[p] for p in (0, 1)]

    def information_state_string(self, player: int) -> str:
        card = card_name(self.private[player]) if player < len(self.private) else "?"
        public = f" public={card_name(self.public)}" if self.public >= 0 else ""
        history = "/".join("".join(_ACTION_CHARS[a] for a in r) for r in self.rounds)
        return f"p{player} card={card}{public} history={history}"

    def information_state_tensor(self, player: int) -> np.ndarray:
        out = np.zeros(2 + 2 * NUM_CARDS + 2 * 3 * _SLOTS, dtype=np.float32)
        out[player] = 1.0
        if player < len(self.private):
            out[2 + self.private[player]] = 1.0
        if self.public >= 0:
            out[2 + NUM_CARDS + self.public] = 1.0
        for r, seq in enumerate(self.rounds):
            base = 2 + 2 * NUM_CARDS + r * 3 * _SLOTS
            for i, a in enumerate(seq):
                out[base + 3 * i + a] = 1.0
        return out

    def action_to_string(self, player: int, action: int) -> str:
        if player == CHANCE:
            return f"Deal:{card_name(action)}"
        return _ACTION_NAMES[action]

    def __str__(self) -> str:
        cards = " ".join(card_name(c) for c in self.private)
        public = f" [{card_name(self.public)}]" if self.public >= 0 else ""
        history = "/".join("".join(_ACTION_CHARS[a] for a in r) for r in self.rounds)
        return f"{cards}{public} {history}"
