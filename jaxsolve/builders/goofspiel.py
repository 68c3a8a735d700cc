"""Goofspiel with imperfect information, generated directly as arrays.

The game is OpenSpiel's `goofspiel(imp_info=True)` with a fixed point-card order
(`points_order` "descending", the usual benchmark, or "ascending": no chance nodes),
two players, after `pyspiel.convert_to_turn_based`, which is what `compile_game`
does with a simultaneous-move pyspiel game: each round player 0 bids, then player 1
bids without seeing that bid. The winner of a round (higher bid; ties discard) takes
the round's point card. With one card left each, OpenSpiel plays the last round
itself inside the previous round's move, so there are N - 1 decision rounds.

A player's information state is its own bids and the winner of each round so far
(`Win sequence`, -3 for a tie), plus the public point cards; OpenSpiel's strings
are reproduced exactly as infoset names.

Sizes, with M_r = (N! / (N - r)!)^2 the histories at the start of round r: round r
has M_r player-0 nodes and M_r (N - r) player-1 nodes, and there are (N!)^2
terminals. num_cards=7: 47,506,635 histories, 25,401,600 terminals.

Every node of one depth has the same player and the same number of children, so
the levels are products: node t of a round's next level has parent t // m and
grandparent t // m^2 (m = N - r cards left). Per-node state is the two hands
(bitmasks), the points, and per player an integer code of (own bids, winners) that
is the infoset key.
"""

from __future__ import annotations

import math

import numpy as np

from jaxsolve.builders.assemble import (DEFAULT_MAX_BYTES, Level, Spec, assemble,
                                        check_budget)
from jaxsolve import validate
from jaxsolve.errors import GameError
from jaxsolve.protocol import TERMINAL
from jaxsolve.tree import GameTree

_RETURNS = ("win_loss", "point_difference", "total_points")
_ORDERS = ("descending", "ascending")
_TIE = -3  # OpenSpiel's kInvalidPlayer, shown for a tied round


def _round_values(num_cards: int, points_order: str) -> list[int]:
    """Point value won in each round 0..N-1."""
    if points_order == "descending":
        return [num_cards - r for r in range(num_cards)]
    return [r + 1 for r in range(num_cards)]


def goofspiel_spec(num_cards: int, *, points_order: str = "descending",
                   returns_type: str = "win_loss") -> Spec:
    """Sizes and names of the turn-based imperfect-information goofspiel tree.

    Args:
      num_cards: N, 2..12.
      points_order: "descending" or "ascending".
      returns_type: "win_loss", "point_difference" or "total_points".

    Returns:
      The `Spec`.

    Raises:
      ArgumentTypeError: `num_cards` is no integer.
      GameError: a parameter outside what the builder supports.
    """
    num_cards = validate.static("goofspiel", "num_cards", num_cards, validate.integer_rule())
    if not 2 <= num_cards <= 12:
        raise GameError(f"goofspiel: num_cards={num_cards}; the builder supports 2..12 "
                        "(the tree of 8 cards already has 3e9 histories)")
    if points_order not in _ORDERS:
        raise GameError(f"goofspiel: points_order={points_order!r}; the builder supports "
                        f"{_ORDERS} (a random order adds chance nodes)")
    if returns_type not in _RETURNS:
        raise GameError(f"goofspiel: returns_type={returns_type!r}, expected one of {_RETURNS}")
    N = num_cards
    rounds = N - 1  # decision rounds; the last card is played automatically
    sizes, infosets = [], 0
    for r in range(rounds):
        m_r = (math.factorial(N) // math.factorial(N - r)) ** 2
        sizes += [m_r, m_r * (N - r)]
        # Per player: own bid sequences x winner sequences, at most one per history.
        infosets += 2 * min(math.perm(N, r) * 3**r, m_r)
    sizes.append(math.factorial(N) ** 2)
    values = _round_values(N, points_order)
    name = ("turn_based_simultaneous_game(game=goofspiel(egocentric=False,imp_info=True,"
            f"num_cards={N},num_turns=-1,players=2,points_order={points_order},"
            f"returns_type={returns_type}))")

    def infoset_name(player: int, path: list[int]) -> str:
        # path alternates P0, P1 bids; a player-1 node also holds P0's pending bid.
        r = len(path) // 2
        bids = (path[0:2 * r:2], path[1:2 * r:2])
        wins = [0 if a > b else 1 if b > a else _TIE for a, b in zip(*bids)]
        points = [sum(v for v, w in zip(values, wins) if w == q) for q in (0, 1)]
        own = bids[player]
        hand = [c for c in range(N) if c not in own]
        return (f"Current player: {player}\nP{player} hand: "
                + "".join(f"{c + 1} " for c in hand)
                + f"\nP{player} action sequence: " + "".join(f"{a} " for a in own)
                + "\nPoint card sequence: " + "".join(f"{v} " for v in values[:r + 1])
                + "\nWin sequence: " + "".join(f"{w} " for w in wins)
                + f"\nPoints: {points[0]} {points[1]} \nTerminal?: 0\n")

    return Spec(
        name=name, num_players=2, num_actions=N, num_chance_outcomes=1,
        level_sizes=tuple(sizes), num_chance=0, num_terminals=sizes[-1],
        max_sequence_length=rounds, max_chance_length=0, num_infosets=infosets,
        utility_sum=None if returns_type == "total_points" else 0.0,
        infoset_name=infoset_name, action_name=lambda p, a: f"[P{p}]Bid: {a + 1}")


def _kth_card(num_cards: int) -> np.ndarray:
    """[2^N, N] uint8: row `hand` lists the hand's cards ascending, then the others."""
    bits = (np.arange(2**num_cards)[:, None] >> np.arange(num_cards)) & 1
    return np.argsort(1 - bits, axis=1, kind="stable").astype(np.uint8)


def _levels(num_cards: int, values: list[int], returns_type: str, dtype):
    N = num_cards
    kth = _kth_card(N)
    # State at the player-0 nodes of the current round, one entry per node.
    hand0 = np.full(1, 2**N - 1, np.uint16)
    hand1 = hand0.copy()
    key0 = np.zeros(1, np.int64)  # code of (own bids, winners): the infoset key
    key1 = key0.copy()
    points0 = np.zeros(1, np.int16)
    points1 = points0.copy()
    for r in range(N - 1):
        n, m = len(hand0), N - r
        bid0 = kth[hand0, :m]  # [n, m] player 0's legal bids
        yield Level(player=np.zeros(n, np.int8), num_children=np.full(n, m, np.int32),
                    child_action=bid0.reshape(-1), key=key0)
        # Player 1 acts at n * m nodes, with its own hand and what it knows unchanged.
        bid1 = np.repeat(kth[hand1, :m], m, axis=0)  # [n * m, m]
        yield Level(player=np.ones(n * m, np.int8), num_children=np.full(n * m, m, np.int32),
                    child_action=bid1.reshape(-1), key=np.repeat(key1, m))
        # The round is resolved at the n * m * m nodes of the next level.
        card0 = np.repeat(bid0.reshape(-1), m)
        card1 = bid1.reshape(-1)
        del bid0, bid1
        grand = np.repeat(np.arange(n, dtype=np.int32), m * m)
        won0, won1 = card0 > card1, card1 > card0
        points0 = points0[grand] + np.int16(values[r]) * won0
        points1 = points1[grand] + np.int16(values[r]) * won1
        hand0 = hand0[grand] & ~(np.uint16(1) << card0.astype(np.uint16))
        hand1 = hand1[grand] & ~(np.uint16(1) << card1.astype(np.uint16))
        if r < N - 2:
            winner = np.where(won0, 0, np.where(won1, 1, 2))
            key0 = (key0[grand] * N + card0) * 3 + winner
            key1 = (key1[grand] * N + card1) * 3 + winner
            del winner
        del card0, card1, grand, won0, won1
    # Terminals: the last card of each hand is played automatically.
    last0, last1 = kth[hand0, 0], kth[hand1, 0]
    del hand0, hand1
    points0 += np.int16(values[N - 1]) * (last0 > last1)
    points1 += np.int16(values[N - 1]) * (last1 > last0)
    del last0, last1
    z = len(points0)
    utilities = np.empty((z, 2), dtype)
    if returns_type == "total_points":
        utilities[:, 0], utilities[:, 1] = points0, points1
    else:
        points0 -= points1
        del points1
        if returns_type == "win_loss":
            np.sign(points0, out=utilities[:, 0], casting="unsafe")
        else:  # each player's points minus the mean of both
            np.multiply(points0, 0.5, out=utilities[:, 0], casting="unsafe")
        np.negative(utilities[:, 0], out=utilities[:, 1])
    del points0
    yield Level(player=np.full(z, TERMINAL, np.int8), num_children=np.zeros(z, np.int8),
                child_action=np.zeros(0, np.int8), utilities=utilities)


def goofspiel(num_cards: int, *, points_order: str = "descending",
              returns_type: str = "win_loss", dtype=np.float32,
              max_bytes: int = DEFAULT_MAX_BYTES, progress: bool = False,
              histories: bool = True) -> GameTree:
    """The GameTree of OpenSpiel's turn-based imperfect-information goofspiel.

    Equal, array for array (and in infoset names), to
    `compile_game(pyspiel.load_game("goofspiel", {"num_cards": N, "imp_info": True,
    "points_order": points_order, "returns_type": returns_type}))`, except that
    utilities are `dtype` (float32 by default: the returns are small integers or
    halves, exact in float32).

    Args:
      num_cards: N, 2..12 (7 is the largest that fits in memory: 4.8e7 histories).
      points_order: "descending" (N, N-1, ..., 1) or "ascending".
      returns_type: "win_loss" (+1/-1/0), "point_difference" (points minus the
        mean) or "total_points" (general-sum).
      dtype: float dtype of utilities.
      max_bytes: refuse (GameError naming the estimate) before allocating if the
        build would need more memory than this.
      progress: show a progress bar on stderr (histories assembled, depth).
      histories: False returns the tree without its history arrays and per-leaf
        paths (`GameTree.without_histories`: what full-width solving and evaluation
        read, about a sixth of the bytes), without building the paths.

    Returns:
      The GameTree.

    Raises:
      GameError: a parameter outside what the builder supports, or a tree above
        `max_bytes`.
      ArgumentError: `num_cards`, `max_bytes`, `dtype`, `progress` or `histories`
        is invalid.

    Examples:
      >>> from jaxsolve.builders import goofspiel
      >>> goofspiel(3).sizes.num_nodes
      67
    """
    spec = goofspiel_spec(num_cards, points_order=points_order, returns_type=returns_type)
    check_budget(spec, max_bytes, dtype, "goofspiel")
    values = _round_values(num_cards, points_order)
    return assemble(spec, _levels(num_cards, values, returns_type, dtype), dtype,
                    progress=validate.static("goofspiel", "progress", progress,
                                             validate.FLAG_RULE),
                    histories=validate.static("goofspiel", "histories", histories,
                                              validate.FLAG_RULE),
                    label=f"goofspiel({num_cards})")
