"""Battleship, generated directly as arrays (small boards).

The game is OpenSpiel's `battleship`, a sequential (turn-based) game with no
chance. First the players place their ships alternately, player 0 first, ship by
ship in the order of `ship_sizes`: action W*H + cell places a ship horizontally
with its top-left corner at `cell = row * W + col`, 2*W*H + cell vertically (only
ships longer than 1). A placement is legal if it does not overlap the player's own
ships and the remaining ships still fit. Then they alternate shots, player 0
first: action `cell` (any cell when `allow_repeated_shots`, else a cell the shooter
has not shot). The game ends when both have fired `num_shots` or when all of one
player's ships are sunk; a player's return is the value of the opponent's ships
it sank minus `loss_multiplier` times the value of its own sunk ships.

A player sees its own placements, every shot, and for its own shots whether they
hit water, hit a ship or sank it (`W`/`H`/`S`), plus the move number. Infoset
names are OpenSpiel's strings ("T=5 /h_1_1/oppshot_1_0/shot_0_0:W/...").

The placement phase depends only on each player's own placements, so each
player's placement tree is enumerated once in Python (tiny: a few placements per
ship on the boards this is for) and the levels of the phase are products of the
two. The shooting phase is generated level by level with per-node bitmasks of the
cells each player has shot; an infoset key is refined at every level from the
parent's key and what the player observed on the edge, then renumbered densely.

Sizes grow like (W*H)^(2 * num_shots) times the square of the number of
placements: a 2x2 board with one 1-cell ship and 2 shots each has 2,581
histories; 3 shots each, 23,317. Boards are limited to 63 cells (uint64 masks).
"""

from __future__ import annotations

import functools

import numpy as np

from jaxsolve.builders.assemble import (DEFAULT_MAX_BYTES, Level, Spec, assemble,
                                        byte_budget, check_budget, estimate_bytes,
                                        float_dtype, format_bytes,
                                        ragged_arange)
from jaxsolve import validate
from jaxsolve.errors import GameError
from jaxsolve.protocol import TERMINAL
from jaxsolve.tree import GameTree

_WATER, _HIT, _SUNK = 0, 1, 2


def _sequence(name: str, value) -> list:
    """A list or tuple argument of the builder, refused (one line) if it is not one."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        validate.fail("battleship", f"{name} must be a list or tuple, got {value!r}",
                      validate.ArgumentTypeError)
    return list(value)


class _Board:
    """The configuration, and each player's placement tree (identical for both)."""

    def __init__(self, width, height, ship_sizes, ship_values, num_shots,
                 allow_repeated_shots, loss_multiplier):
        # Checked, not cast: int(2.5) would build a 2-wide board and bool("no") the
        # game with repeated shots, each silently another game than the one asked for.
        check = functools.partial(validate.static, "battleship")
        positive = validate.integer_rule(1)
        self.W = check("board_width", width, positive)
        self.H = check("board_height", height, positive)
        self.cells = self.W * self.H
        self.lengths = tuple(check("ship_sizes entry", s, positive)
                             for s in _sequence("ship_sizes", ship_sizes))
        values = ([1.0] * len(self.lengths) if ship_values is None
                  else _sequence("ship_values", ship_values))
        self.values = tuple(check("ship_values entry", v, validate.number_rule(0))
                            for v in values)
        self.num_shots = check("num_shots", num_shots, positive)
        self.repeat = check("allow_repeated_shots", allow_repeated_shots, validate.FLAG_RULE)
        self.loss = check("loss_multiplier", loss_multiplier, validate.number_rule())
        self._validate()

    def _validate(self):
        where = "battleship"
        if not (1 <= self.W <= 10 and 1 <= self.H <= 10):
            raise GameError(f"{where}: board {self.W}x{self.H}; OpenSpiel allows 1..10 a side")
        if self.cells > 63:
            raise GameError(f"{where}: {self.cells} cells; the builder handles at most 63 "
                            "(cell sets are uint64 bitmasks) and such trees are far too "
                            "big to build anyway")
        if not self.lengths or len(self.values) != len(self.lengths):
            raise GameError(f"{where}: ship_sizes {self.lengths} and ship_values "
                            f"{self.values} must be non-empty and of equal length")
        if any(length < 1 or (length > self.W and length > self.H) for length in self.lengths):
            raise GameError(f"{where}: ship_sizes {self.lengths} do not fit a "
                            f"{self.W}x{self.H} board")
        if any(v < 0 for v in self.values):
            raise GameError(f"{where}: ship_values {self.values} must be >= 0")
        if self.num_shots < 1 or (not self.repeat and self.num_shots > self.cells):
            raise GameError(f"{where}: num_shots={self.num_shots} must be in 1.."
                            f"{'' if self.repeat else self.cells}")
        if not self._feasible(()):
            raise GameError(f"{where}: the ships {self.lengths} cannot all be placed on "
                            f"a {self.W}x{self.H} board")

    # ------------------------------------------------------------ placements
    def candidates(self, length: int):
        """(action, cells) of every in-bounds placement of a ship, by action id."""
        out = []
        for r in range(self.H):
            for c in range(self.W - length + 1):
                out.append((self.cells + r * self.W + c,
                            frozenset(r * self.W + c + i for i in range(length))))
        if length > 1:  # OpenSpiel has no vertical placement of 1-cell ships
            for r in range(self.H - length + 1):
                for c in range(self.W):
                    out.append((2 * self.cells + r * self.W + c,
                                frozenset((r + i) * self.W + c for i in range(length))))
        return out

    def _feasible(self, placed: tuple[frozenset, ...]) -> bool:
        """OpenSpiel's ExistsFeasiblePlacement: can the remaining ships be placed?"""
        if len(placed) == len(self.lengths):
            return True
        used = frozenset().union(*placed)
        return any(not cells & used and self._feasible(placed + (cells,))
                   for _, cells in self.candidates(self.lengths[len(placed)]))

    def placement_tree(self):
        """Per ship j: for each placed prefix of ships 0..j-1 (in breadth-first order),
        its legal actions and the child prefixes; plus the complete placements.

        Returns (starts, counts, actions, ships): starts[j], counts[j] ([prefixes
        of depth j] int) index the flat actions[j] ([prefixes of depth j+1] int), the
        child prefixes being numbered in that same order; ships: [complete, S] uint64
        masks of each ship's cells.
        """
        prefixes = [()]
        starts, counts, actions = [], [], []
        for length in self.lengths:
            nxt, acts, cnt = [], [], []
            used_by = [frozenset().union(*p) for p in prefixes]
            for prefix, used in zip(prefixes, used_by):
                k = 0
                for action, cells in self.candidates(length):
                    if not cells & used and self._feasible(prefix + (cells,)):
                        acts.append(action)
                        nxt.append(prefix + (cells,))
                        k += 1
                cnt.append(k)
            counts.append(np.asarray(cnt, np.int64))
            starts.append(np.cumsum(counts[-1]) - counts[-1])
            actions.append(np.asarray(acts, np.int64))
            prefixes = nxt
        ships = np.array([[sum(1 << c for c in cells) for cells in p] for p in prefixes],
                         np.uint64)
        return starts, counts, actions, ships


def _dense(key: np.ndarray) -> np.ndarray:
    """Renumbers keys 0..k-1 (equal keys stay equal), keeping them small."""
    return np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _levels(board: _Board, tree, dtype):
    starts, counts, actions, ships = tree
    S, cells = len(board.lengths), board.cells
    # Placement phase: node state = each player's placed prefix (its own key).
    prefix = [np.zeros(1, np.int64), np.zeros(1, np.int64)]
    for j in range(S):
        for q in (0, 1):
            own = prefix[q]
            n_children = counts[j][own]
            idx = ragged_arange(starts[j][own], n_children)
            yield Level(player=np.full(len(own), q, np.int8), num_children=n_children,
                        child_action=actions[j][idx], key=own)
            parent = np.repeat(np.arange(len(own)), n_children)
            prefix[q] = idx  # child prefixes are numbered like the flat actions
            prefix[1 - q] = prefix[1 - q][parent]
    # Shooting phase: placements, cells each player has shot, observation keys.
    place = prefix
    cell_ship = np.full((len(ships), cells), -1, np.int64)  # ship index at each cell
    for s in range(S):
        cover = (ships[:, s:s + 1] >> np.arange(cells, dtype=np.uint64)) & np.uint64(1)
        cell_ship[cover.astype(bool)] = s
    values = np.asarray(board.values)
    shots = [np.zeros(len(place[0]), np.uint64), np.zeros(len(place[0]), np.uint64)]
    key = [place[0].copy(), place[1].copy()]
    for t in range(2 * board.num_shots + 1):
        n, q = len(place[0]), t % 2
        # sunk[p]: [n, S] whether each of p's ships has every cell shot by the other.
        sunk = [(ships[place[p]] & ~shots[1 - p][:, None]) == 0 for p in (0, 1)]
        over = sunk[0].all(axis=1) | sunk[1].all(axis=1) | (t == 2 * board.num_shots)
        if board.repeat:
            avail = np.ones((n, cells), bool)
        else:
            avail = ((~shots[q][:, None] >> np.arange(cells, dtype=np.uint64))
                     & np.uint64(1)).astype(bool)
        avail[over] = False
        node, cell = np.nonzero(avail)  # row-major: node by node, cells ascending
        utilities = None
        if over.any():
            lost = [sunk[p][over] @ values for p in (0, 1)]  # value of p's sunk ships
            utilities = np.stack([lost[1] - board.loss * lost[0],
                                  lost[0] - board.loss * lost[1]], axis=1).astype(dtype)
        yield Level(player=np.where(over, TERMINAL, q).astype(np.int8),
                    num_children=avail.sum(axis=1), child_action=cell,
                    key=None if over.all() else key[q], utilities=utilities)
        if node.size == 0:
            break
        # The shot: the shooter learns water / hit / sunk, the other sees the cell.
        other = place[1 - q][node]
        new_shots = shots[q][node] | (np.uint64(1) << cell.astype(np.uint64))
        ship = cell_ship[other, cell]
        hit = ship >= 0
        sank = np.zeros(len(node), bool)
        sank[hit] = (ships[other[hit], ship[hit]] & ~new_shots[hit]) == 0
        outcome = np.where(sank, _SUNK, np.where(hit, _HIT, _WATER))
        key[q] = _dense(key[q][node] * (3 * cells) + cell * 3 + outcome)
        key[1 - q] = _dense(key[1 - q][node] * cells + cell)
        shots[q] = new_shots
        shots[1 - q] = shots[1 - q][node]
        place = [place[0][node], place[1][node]]


def _names(board: _Board):
    W, cells, S = board.W, board.cells, len(board.lengths)

    def placement(a: int) -> tuple[str, int]:
        return ("v", a - 2 * cells) if a >= 2 * cells else ("h", a - cells)

    def covered(a: int, length: int) -> list[int]:
        d, cell = placement(a)
        return [cell + (i * W if d == "v" else i) for i in range(length)]

    def infoset_name(player: int, path: list[int]) -> str:
        out = [f"T={len(path)} "]
        opponent_ships = [covered(a, board.lengths[i // 2])
                          for i, a in enumerate(path[:2 * S]) if i % 2 != player]
        damage, hit_cells = [0] * S, set()
        for i, a in enumerate(path):
            mover = i % 2
            if i < 2 * S:
                if mover == player:
                    d, cell = placement(a)
                    out.append(f"/{d}_{cell // W}_{cell % W}")
            elif mover != player:
                out.append(f"/oppshot_{a // W}_{a % W}")
            else:
                result = "W"
                for s, ship in enumerate(opponent_ships):
                    if a in ship:
                        if a not in hit_cells:
                            damage[s] += 1
                            hit_cells.add(a)
                        result = "S" if damage[s] == board.lengths[s] else "H"
                out.append(f"/shot_{a // W}_{a % W}:{result}")
        return "".join(out)

    def action_name(player: int, a: int) -> str:
        if a < cells:
            return f"Pl{player}: shoot at ({a // W}, {a % W})"
        d, cell = placement(a)
        how = "vertically" if d == "v" else "horizontally"
        return (f"Pl{player}: place ship {how} with top-left corner in "
                f"({cell // W}, {cell % W})")

    return infoset_name, action_name


def _spec(board: _Board, level_sizes, num_terminals, num_actions, num_infosets) -> Spec:
    infoset_name, action_name = _names(board)
    name = (f"battleship(allow_repeated_shots={board.repeat},board_height={board.H},"
            f"board_width={board.W},loss_multiplier={board.loss},num_shots="
            f"{board.num_shots},ship_sizes=[{';'.join(map(str, board.lengths))}],"
            f"ship_values=[{';'.join(map(str, board.values))}])")
    zero_sum = abs(board.loss - 1.0) < 1e-9
    return Spec(
        name=name, num_players=2, num_actions=num_actions, num_chance_outcomes=1,
        level_sizes=tuple(int(s) for s in level_sizes), num_chance=0,
        num_terminals=int(num_terminals),
        max_sequence_length=len(board.lengths) + board.num_shots, max_chance_length=0,
        num_infosets=int(num_infosets), utility_sum=0.0 if zero_sum else None,
        infoset_name=infoset_name, action_name=action_name)


def _bound_spec(board: _Board) -> Spec:
    """A Spec whose sizes bound the real ones: no overlap pruning, no early end."""
    sizes = [1]
    for length in board.lengths:  # player 0, then player 1, places this ship
        k = len(board.candidates(length))
        sizes += [sizes[-1] * k, sizes[-1] * k * k]
    fleets = sizes[-1]  # both fleets placed
    sizes += [fleets * board.cells**t for t in range(1, 2 * board.num_shots + 1)]
    decisions = sum(sizes[:-1])
    return _spec(board, sizes, sizes[-1], 3 * board.cells, decisions)


def battleship_spec(board_width: int = 2, board_height: int = 2, ship_sizes=(1,),
                    ship_values=None, num_shots: int = 2, allow_repeated_shots: bool = True,
                    loss_multiplier: float = 1.0, *, max_bytes: int = DEFAULT_MAX_BYTES,
                    dtype=np.float32) -> Spec:
    """Exact sizes and names of the battleship tree.

    The sizes come from a dry run of the level generator, which is only attempted when
    an upper bound on the tree (every placement, no early end) fits in `max_bytes`.

    Args:
      board_width: the board's width, in cells.
      board_height: the board's height, in cells.
      ship_sizes: each ship's length, placed in this order.
      ship_values: each ship's value (default 1.0 each).
      num_shots: shots per player.
      allow_repeated_shots: whether a player may shoot a cell twice.
      loss_multiplier: a player's return is the value of the ships it sank minus
        this times the value of its own sunk ships (1.0: zero-sum).
      max_bytes: the budget the upper bound must fit.
      dtype: the float dtype of utilities.

    Returns:
      The `Spec`.

    Raises:
      GameError: parameters the builder does not support, or an upper bound above
        `max_bytes` (the message names it).
      ArgumentError: `max_bytes` is no budget or `dtype` no float dtype.
    """
    max_bytes = byte_budget(max_bytes, "battleship")
    dtype = float_dtype(dtype, "battleship")
    board = _Board(board_width, board_height, ship_sizes, ship_values, num_shots,
                   allow_repeated_shots, loss_multiplier)
    bound = _bound_spec(board)
    if estimate_bytes(bound, dtype) > max_bytes:
        need = estimate_bytes(bound, dtype)
        raise GameError(
            f"{bound.name} has up to {bound.num_nodes:,} histories (a bound: every "
            f"placement, no early end); building its tree may need up to "
            f"{format_bytes(need)}, more than max_bytes={format_bytes(max_bytes)}. "
            "Raise max_bytes if that fits, or choose a smaller board or fewer shots.")
    tree = board.placement_tree()
    sizes, terminals, infosets = [], 0, 0
    for level in _levels(board, tree, dtype):
        sizes.append(len(level.player))
        terminals += int(np.count_nonzero(level.player == TERMINAL))
        if level.key is not None:
            decision = level.player >= 0
            infosets += len(np.unique(level.key[decision]))
    num_actions = int(max(a.max() for a in tree[2])) + 1
    return _spec(board, sizes, terminals, num_actions, infosets)


def battleship(board_width: int = 2, board_height: int = 2, ship_sizes=(1,),
               ship_values=None, num_shots: int = 2, allow_repeated_shots: bool = True,
               loss_multiplier: float = 1.0, *, dtype=np.float32,
               max_bytes: int = DEFAULT_MAX_BYTES, progress: bool = False,
               histories: bool = True) -> GameTree:
    """The GameTree of OpenSpiel's battleship on a small board.

    Equal, array for array (and in infoset names), to `compile_game(
    pyspiel.load_game("battleship", {...}))` with the same parameters (ship sizes
    and values as lists instead of OpenSpiel's "[1;2]" strings; values default to
    1.0 each), except for the float dtype of utilities.

    Args:
      board_width: the board's width, in cells.
      board_height: the board's height, in cells.
      ship_sizes: each ship's length, placed in this order.
      ship_values: each ship's value (default 1.0 each).
      num_shots: shots per player.
      allow_repeated_shots: whether a player may shoot a cell twice.
      loss_multiplier: a player's return is the value of the ships it sank minus
        this times the value of its own sunk ships (1.0: zero-sum).
      dtype: the float dtype of utilities.
      max_bytes: refuse (GameError) before allocating when even an upper bound on the
        tree would exceed this, or when the exact tree does.
      progress: show a progress bar on stderr (histories assembled, depth).
      histories: False returns the tree without its history arrays and per-leaf
        paths (`GameTree.without_histories`: what full-width solving and evaluation
        read, about a sixth of the bytes), without building the paths.

    Returns:
      The GameTree.

    Raises:
      GameError: parameters the builder does not support, or a tree above
        `max_bytes`.
      ArgumentError: `max_bytes`, `dtype`, `progress` or `histories` is invalid.
    """
    spec = battleship_spec(board_width, board_height, ship_sizes, ship_values, num_shots,
                           allow_repeated_shots, loss_multiplier, max_bytes=max_bytes,
                           dtype=dtype)
    check_budget(spec, max_bytes, dtype, "battleship")
    board = _Board(board_width, board_height, ship_sizes, ship_values, num_shots,
                   allow_repeated_shots, loss_multiplier)
    return assemble(spec, _levels(board, board.placement_tree(), dtype), dtype,
                    progress=validate.static("battleship", "progress", progress,
                                             validate.FLAG_RULE),
                    histories=validate.static("battleship", "histories", histories,
                                              validate.FLAG_RULE),
                    label=f"battleship {board_width}x{board_height}")
