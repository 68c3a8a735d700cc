"""Liar's dice, generated directly as arrays.

The game is OpenSpiel's `liars_dice`: two players; chance rolls every die at the
start, one chance node per die (player 0's dice first, outcome a is face a + 1);
then players alternate, player 0 first, each either raising the bid or, after the
first bid, calling "Liar" (action B = total dice * faces), which ends the game. A
bid is a (quantity, face) pair ranked by `bidding_rule`: "reset-face" ranks
quantity-major (bid b = (b // faces + 1, b % faces + 1)), "reset-quantity"
face-major (b = (b % dice + 1, b // dice + 1)). The highest face is wild. If at
least `quantity` dice show the face (or the wild face) the bidder wins (+1, caller
-1), else the caller wins. A player's information state is its own dice, sorted,
and the bid sequence; OpenSpiel's strings ("13 1-2 2-5") are the infoset names.

OpenSpiel's C++ game also reads per-player `numdice0` / `numdice1`, but
`pyspiel.load_game` (2.0.2) rejects them, so `dice=(d0, d1)` with d0 != d1 is built
by the same rules but has not been checked against OpenSpiel.

Sizes: with O = faces^(d0 + d1) roll outcomes and B bids, the bidding tree after
each roll is every increasing bid sequence, possibly followed by "Liar": 2^B
decision nodes and 2^B - 1 terminals. dice=(1, 1), faces=6: 294,883 histories.
dice=(2, 2) multiplies O by faces^2 and the bidding tree by 2^(2 faces).

Because every roll outcome is followed by the same bidding tree, a bidding depth
is built once, as k-element bid sequences in lexicographic (= breadth-first)
order, and the level is that tree tiled over the O outcomes (outcome-major, which
is also breadth-first order, the dice coming first on every path).
"""

from __future__ import annotations

import math

import numpy as np

from jaxsolve.builders.assemble import (DEFAULT_MAX_BYTES, Level, Spec, assemble,
                                        check_budget, ragged_arange)
from jaxsolve import validate
from jaxsolve.errors import ArgumentTypeError, GameError
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import GameTree
from jaxsolve.validate import is_int

_RULES = ("reset-face", "reset-quantity")


def _unrank(bid, total_dice: int, faces: int, rule: str):
    """(quantity, face) of bid ids (ints or arrays), as OpenSpiel's UnrankBid."""
    if rule == "reset-face":
        return bid // faces + 1, bid % faces + 1
    return bid % total_dice + 1, bid // total_dice + 1


def _check(dice, faces, bidding_rule):
    if (not isinstance(dice, (tuple, list)) or not all(is_int(d) for d in dice)
            or not is_int(faces)):
        validate.fail("liars_dice", f"dice must be two integers (dice per player) and faces "
                                    f"an integer, got dice={dice!r}, faces={faces!r}",
                      ArgumentTypeError)
    if len(dice) != 2 or min(dice) < 1:
        raise GameError(f"liars_dice: dice={dice!r}, expected two positive counts "
                        "(dice per player; OpenSpiel's liar's dice has two players)")
    if faces < 1:
        raise GameError(f"liars_dice: faces={faces}, expected at least 1")
    if bidding_rule not in _RULES:
        raise GameError(f"liars_dice: bidding_rule={bidding_rule!r}, expected one of {_RULES}")


def _bid_level_size(bids: int, k: int) -> int:
    """Sequences of k moves: k increasing bids, or k - 1 bids then Liar (k >= 2)."""
    return math.comb(bids, k) + (math.comb(bids, k - 1) if k >= 2 else 0)


def liars_dice_spec(dice: tuple[int, int] = (1, 1), faces: int = 6, *,
                    bidding_rule: str = "reset-face") -> Spec:
    """Sizes and names of the liar's dice tree.

    Args:
      dice: dice per player (d0, d1).
      faces: sides per die.
      bidding_rule: "reset-face" or "reset-quantity".

    Returns:
      The `Spec`.

    Raises:
      ArgumentTypeError: `dice` or `faces` is not made of integers.
      GameError: a parameter outside what the builder supports.
    """
    _check(dice, faces, bidding_rule)
    d0, d1 = (int(d) for d in dice)
    total = d0 + d1
    bids = total * faces  # also the id of "Liar"
    outcomes = faces**total
    sizes = [faces**k for k in range(total)]
    sizes += [outcomes * _bid_level_size(bids, k) for k in range(bids + 2)]
    hands = [math.comb(d + faces - 1, d) for d in (d0, d1)]  # sorted own dice
    infosets = sum(math.comb(bids, k) * min(hands[k % 2], outcomes) for k in range(bids + 1))
    dice_param = f"numdice={d0}" if d0 == d1 else f"numdice0={d0},numdice1={d1}"
    name = (f"liars_dice(bidding_rule={bidding_rule},dice_sides={faces},{dice_param},"
            "players=2)")

    def bid_name(b: int) -> str:
        if b == bids:
            return "Liar"
        q, f = _unrank(b, total, faces, bidding_rule)
        return f"{q}-{f}"

    def infoset_name(player: int, path: list[int]) -> str:
        own = path[:d0] if player == 0 else path[d0:total]
        return ("".join(str(a + 1) for a in sorted(own))
                + "".join(f" {bid_name(b)}" for b in path[total:]))

    return Spec(
        name=name, num_players=2, num_actions=bids + 1, num_chance_outcomes=faces,
        level_sizes=tuple(sizes), num_chance=sum(sizes[:total]),
        num_terminals=outcomes * (2**bids - 1), max_sequence_length=(bids + 2) // 2,
        max_chance_length=total, num_infosets=infosets, utility_sum=0.0,
        infoset_name=infoset_name, action_name=lambda p, a: bid_name(a))


def _levels(d0: int, d1: int, faces: int, rule: str, dtype):
    total = d0 + d1
    bids = total * faces
    for k in range(total):  # one chance level per die
        n = faces**k
        yield Level(player=np.full(n, CHANCE, np.int8), num_children=np.full(n, faces),
                    child_action=np.tile(np.arange(faces), n),
                    chance_probs=np.full((n, faces), 1.0 / faces, dtype))
    outcomes = faces**total
    # [O, total] faces 1..faces of every roll, the first die most significant.
    rolls = (np.arange(outcomes)[:, None] // faces ** np.arange(total - 1, -1, -1)) % faces + 1
    hand = []  # [O] id of each player's sorted dice: equal ids <=> same information
    for cols in (slice(0, d0), slice(d0, total)):
        _, ids = np.unique(np.sort(rolls[:, cols], axis=1), axis=0, return_inverse=True)
        hand.append(ids.reshape(-1).astype(np.int64))
    # matches[o, f - 1]: dice of roll o showing face f or the wild (highest) face.
    wild = rolls == faces
    matches = np.stack([((rolls == f) | wild).sum(axis=1) for f in range(1, faces + 1)], 1)
    del rolls, wild

    # The bidding tree, one depth at a time: per sequence its last move (-1 at the
    # start), whether that was "Liar", and the last bid made.
    last = np.array([-1])
    bid = np.array([-1])
    called = np.array([False])
    for k in range(bids + 2):
        seqs = len(last)
        # Children: every higher bid, then "Liar" (id `bids`) once a bid stands: the
        # actions last+1 .. bids, or 0 .. bids-1 before the first bid.
        counts = np.where(called, 0, bids - last if k else bids)
        actions = ragged_arange(last + 1, counts)
        player = np.where(called, TERMINAL, k % 2).astype(np.int8)
        key = None
        if not called.all():
            # Own dice and the bid sequence (this level's sequence index).
            key = (np.repeat(hand[k % 2], seqs) * seqs + np.tile(np.arange(seqs), outcomes))
        utilities = None
        if called.any():
            quantity, face = _unrank(bid[called], total, faces, rule)
            bidder = (k - 2) % 2  # made the last bid; the caller is the other player
            wins = matches[:, face - 1] >= quantity  # [O, terminals of the level]
            u = np.where(wins, 1.0, -1.0).astype(dtype).reshape(-1)
            utilities = np.zeros((u.size, 2), dtype)
            utilities[:, bidder], utilities[:, 1 - bidder] = u, -u
        yield Level(player=np.tile(player, outcomes), num_children=np.tile(counts, outcomes),
                    child_action=np.tile(actions, outcomes), key=key,
                    chance_probs=None, utilities=utilities)
        parent = np.repeat(np.arange(seqs), counts)
        called = actions == bids
        bid = np.where(called, bid[parent], actions)
        last = actions


def liars_dice(dice: tuple[int, int] = (1, 1), faces: int = 6, *,
               bidding_rule: str = "reset-face", dtype=np.float32,
               max_bytes: int = DEFAULT_MAX_BYTES, progress: bool = False,
               histories: bool = True) -> GameTree:
    """The GameTree of OpenSpiel's liar's dice.

    Equal, array for array (and in infoset names), to
    `compile_game(pyspiel.load_game("liars_dice", {"numdice": d, "dice_sides":
    faces, "bidding_rule": bidding_rule}))` for dice=(d, d), except for the float
    dtype (chance probabilities 1/faces are rounded in float32).

    Args:
      dice: dice per player (d0, d1).
      faces: sides per die; the highest face is wild.
      bidding_rule: "reset-face" or "reset-quantity" (how bid ids are ranked).
      dtype: float dtype of chance probabilities and utilities.
      max_bytes: refuse (GameError naming the estimate) before allocating above this.
      progress: show a progress bar on stderr (histories assembled, depth).
      histories: False returns the tree without its history arrays and per-leaf
        paths (`GameTree.without_histories`: what full-width solving and evaluation
        read, about a sixth of the bytes), without building the paths.

    Returns:
      The GameTree.

    Raises:
      GameError: a parameter outside what the builder supports, or a tree above
        `max_bytes`.
      ArgumentError: `dice`, `faces`, `max_bytes`, `dtype`, `progress` or
        `histories` is invalid.
    """
    spec = liars_dice_spec(dice, faces, bidding_rule=bidding_rule)
    check_budget(spec, max_bytes, dtype, "liars_dice")
    return assemble(spec, _levels(int(dice[0]), int(dice[1]), faces, bidding_rule, dtype),
                    dtype, progress=validate.static("liars_dice", "progress", progress,
                                                    validate.FLAG_RULE),
                    histories=validate.static("liars_dice", "histories", histories,
                                              validate.FLAG_RULE),
                    label=f"liars_dice({tuple(dice)}, {faces})")
