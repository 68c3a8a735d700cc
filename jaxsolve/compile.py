"""compile_game: one breadth-first walk of a protocol game into a GameTree.

The walk is iterative (no recursion limit), validates every node as it goes and
raises `GameError` naming the offending history, so that nothing malformed ever
reaches JAX: a value that breaks the protocol, an exception raised by the game's
code (chained as the cause), or a history of `max_depth` actions that has not
ended. After the walk, the terminal-sequence arrays that the solvers use are
derived with vectorised NumPy.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import sys
import tempfile
import warnings
from typing import Any, Callable

import jax
import numpy as np

from jaxsolve.builders.assemble import format_bytes
from jaxsolve.errors import ArgumentTypeError, GameError, ImperfectRecallWarning
from jaxsolve.progress import bar as progress_bar
from jaxsolve.protocol import CHANCE, SIMULTANEOUS, TERMINAL, GameLike, is_game
from jaxsolve.tree import (GameTree, TreeNames, TreeSizes, observed_utility_sum,
                           with_infoset_blocks)
from jaxsolve.tree_structure import own_ancestors, terminal_paths
from jaxsolve.validate import fail, is_int, is_real

DEFAULT_MAX_NODES = 20_000_000
# The progress bar is moved every this many histories (a bar update per history would
# cost more than the walk's own bookkeeping).
_PROGRESS_EVERY = 4096
# A history of this many actions must be terminal, else the game is called endless
# (check_game's playouts use the same bound). The built-in games end within 12
# actions, the builders' within a few hundred, so 10,000 rejects no real game, while
# a game that never ends is refused after 10,000 actions: about 0.1 s.
DEFAULT_MAX_DEPTH = 10_000
_PROB_TOLERANCE = 1e-6
# Action ids index columns: one id of 10**9 (chip amounts used as ids, say) would ask
# for an [infosets, 10**9] policy and die in NumPy's MemoryError. 2**24 columns is
# beyond any game's action count (the pyspiel games use a few thousand at most) and
# keeps flat sequence ids (infoset * columns + id) far inside int32 for small trees.
MAX_ACTION_ID = 2**24
# A longer history is shown by its first and last actions and its length: the start
# says where it branched off, the end where it loops.
_SHOWN_ACTIONS = 40
_SHOWN_TAIL = 10
# Once the walk holds this many histories (about 0.1 s), it follows the first actions
# from the root for max_depth actions: a game that never ends and has several actions
# per node would otherwise grow level by level until max_nodes (minutes). Earlier,
# the walk itself names any protocol violation of the first levels first.
_PROBE_AFTER_NODES = 10_000

InfosetKey = Callable[[Any, int], str]


def _game_name(game) -> str:
    name = getattr(game, "name", None)
    if isinstance(name, str):
        return name
    if getattr(game, "get_type", None) is not None:
        return _spiel_name(game)
    return type(game).__name__


def _registered(params: dict, names: set) -> bool:
    """Whether a pyspiel game's parameters (with its "name") name registered games
    only, the games nested in them ({"game": {"name": ...}}) included."""
    return params.get("name") in names and all(
        _registered(v, names) for v in params.values() if isinstance(v, dict) and "name" in v)


def _spiel_name(game) -> str:
    """A pyspiel game with every parameter, defaults included, in OpenSpiel's own
    format ("liars_dice(bidding_rule=reset-face,dice_sides=6,numdice=1,players=2)"):
    the name `jaxsolve.builders` give the same game, so that their trees and compiled
    ones have equal `names` and share jit caches. `str(game)` lists only the
    parameters given."""
    try:
        import pyspiel  # noqa: PLC0415 - only reached with a game that has get_type

        # What OpenSpiel's C++ prints before raising ("OpenSpiel exception: Unknown
        # parameter 'rollout_length'" for liars_dice_ir) is dropped with the refusal:
        # the game compiles all the same, under its own name.
        with _stderr_dropped_on_error():
            short_name, params = game.get_type().short_name, game.get_parameters()
            # An unregistered game (pyspiel.create_matrix_game, say, also inside the
            # turn-based wrapper) cannot be reloaded, and load_game would print
            # OpenSpiel's list of every game it knows.
            if not _registered({"name": short_name, **params}, set(pyspiel.registered_names())):
                return str(game)
            return str(pyspiel.load_game(short_name, params))
    except Exception:  # noqa: BLE001 - a game OpenSpiel cannot reload keeps its own name
        return str(game)


@contextlib.contextmanager
def _stderr_dropped_on_error():
    """OpenSpiel's C++ prints its ~150 registered games to the process's stderr (past
    Python's sys.stderr) before raising on an unknown name; our error names the close
    ones instead. What C++ writes is held back, and passed on unless the block raises."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real fd 2 (embedded, pytest capture)
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        held.seek(0)
        text = held.read()
        if text:
            sys.stderr.write(text.decode(errors="replace"))


def _declared(game, method: str):
    fn = getattr(game, method, None)
    if fn is None:
        return None
    try:
        return fn()
    except (NotImplementedError, RuntimeError, TypeError):
        return None


def _utility_sum(game):
    get_type = getattr(game, "get_type", None)
    if get_type is not None:  # pyspiel: only constant-sum games declare a sum
        kind = str(get_type().utility)
        return float(game.utility_sum()) if ("ZERO" in kind or "CONSTANT" in kind) else None
    value = _declared(game, "utility_sum")
    if value is not None and not is_real(value):
        raise GameError(f"utility_sum() returned {value!r}, expected a number or None")
    return None if value is None else float(value)


def _as_list(value) -> list | None:
    """`value` as a list when it is a sequence of items (list, tuple, range, array),
    else None (None, a number, a string or a dict is no list of actions)."""
    if isinstance(value, (str, bytes, dict)):
        return None
    try:
        return list(value)
    except TypeError:  # not iterable, or a 0-d array
        return None


def format_history(history: list[int]) -> str:
    """A history for a message; a long one by its start, its end and its length."""
    if len(history) <= _SHOWN_ACTIONS:
        return str(history)
    head = ", ".join(map(str, history[:_SHOWN_ACTIONS - _SHOWN_TAIL]))
    tail = ", ".join(map(str, history[-_SHOWN_TAIL:]))
    return f"[{head}, ..., {tail}] ({len(history)} actions)"


def format_key(key, limit: int = 160) -> str:
    """An information-state string (or any value) for a message: its repr, at most
    `limit` characters (a game may key its infosets by the whole history)."""
    return shorten(repr(key), limit)


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, ending in "..." where cut."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def class_given(game: type) -> str:
    """The message for a game's class passed where an instance is needed."""
    return f"got the class {game.__name__}; pass an instance: {game.__name__}()"


def state_text(state, limit: int = 160) -> str:
    """A state for a message, on one line and at most `limit` characters; "" when the
    state has no text of its own (Python's default `<... object at 0x...>` says
    nothing the history does not), "?" when its __str__ raises."""
    kind = type(state)
    if state is None or (kind.__str__ is object.__str__ and kind.__repr__ is object.__repr__):
        return ""
    try:
        text = " ".join(str(state).replace("\n", " | ").split())
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the real problem
        return "?"
    return shorten(text, limit)


def _game_error(history: list[int], state, problem: str) -> GameError:
    text = state_text(state)
    return GameError(f"history {format_history(history)}"
                     + (f" (state: {text})" if text else "") + f": {problem}")


def _first_action(state):
    """The first legal action or chance outcome; None at a terminal, or where
    current_player() is no integer (the walk reports that)."""
    player = state.current_player()
    if state.is_terminal() or player == TERMINAL or not is_int(player):
        return None
    return state.chance_outcomes()[0][0] if player == CHANCE else state.legal_actions()[0]


def _endless_first_line(root, max_depth: int) -> tuple[list[int], Any] | None:
    """Follows the first action from the root for up to max_depth actions: (history,
    state) when that history is still not over, else None (also at a protocol
    violation on the way, which the walk names with its history)."""
    state, history = root, []
    try:
        while is_int(action := _first_action(state)):
            if len(history) >= max_depth:
                return history, state
            state = _child(state, action)
            history.append(action)
    except Exception:  # noqa: BLE001 - see the docstring
        return None
    return None


def _cannot_make_children(state) -> str | None:
    """Why `state` cannot make the state after an action, or None if it can."""
    if hasattr(state, "child") or (hasattr(state, "clone") and hasattr(state, "apply_action")):
        return None
    return (f"the state ({type(state).__name__}) needs child(action), or clone() and "
            "apply_action(action), to make the state after an action "
            "(jaxsolve.protocol.State supplies both)")


def _child(state, action):
    if hasattr(state, "child"):
        return state.child(action)
    new = state.clone()
    new.apply_action(action)
    return new


class _Walk:
    """Accumulates node records during the breadth-first walk."""

    def __init__(self, game, infoset_key: InfosetKey | None, max_nodes: int, max_depth: int):
        self.game = game
        self.num_players = _num_players(game)
        self.declared_actions = _declared_actions(game)
        self.key = infoset_key
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        # per node
        self.player: list[int] = []
        self.index: list[int] = []
        self.parent: list[int] = []
        self.parent_action: list[int] = []
        self.edges: list[tuple[int, int, int]] = []  # (node, action, child)
        # per infoset
        self.infoset_ids: dict[str, int] = {}
        self.infoset_keys: list[str] = []  # infoset id -> its string, for messages
        self.infoset_player: list[int] = []
        self.infoset_legal: list[tuple[int, ...]] = []
        self.infoset_parent: list[tuple[int, int]] = []  # (infoset, action) or (-1, -1)
        self.infoset_node: list[int] = []
        self.action_names: list[list[str]] = []
        self.recall_broken = [False] * self.num_players
        self.recall_example: list[str | None] = [None] * self.num_players
        # per chance node / terminal
        self.chance_rows: list[list[tuple[int, float]]] = []
        self.returns: list[list[float]] = []
        self.max_action = -1  # over decisions
        self.max_outcome = -1  # over chance outcomes

    # ---------------------------------------------------------------- error context
    def history(self, node: int) -> list[int]:
        actions = []
        while node >= 0 and self.parent[node] >= 0:
            actions.append(self.parent_action[node])
            node = self.parent[node]
        return actions[::-1]

    def fail(self, node: int, state, problem: str, cause: BaseException | None = None):
        error = _game_error(self.history(node), state, problem)
        if cause is None:
            raise error
        raise error from cause

    def call(self, node: int, state, method: str, *args):
        """`state.method(*args)`; a missing method, or an exception raised by the game's
        code, fails with the history (the game's exception is chained as the cause)."""
        fn = getattr(state, method, None)
        if fn is None:
            self.fail(node, state, f"the state ({type(state).__name__}) has no {method}() "
                                   "method, which the protocol needs (see jaxsolve.protocol)")
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - re-raised as a GameError naming the history
            self.fail(node, state, f"{method}({', '.join(map(repr, args))}) raised "
                                   f"{type(e).__name__}: {e}", cause=e)

    def child(self, node: int, state, action: int):
        """The state after `action`: child(action), or clone() then apply_action(action)."""
        # A child that is the parent itself (child() appending to its own history and
        # returning self, clone() returning self) would turn the walk into nonsense
        # without an error: every later child grows the same object.
        if hasattr(state, "child"):
            new = self.call(node, state, "child", action)
            if new is state:
                self.fail(node, state, f"child({action!r}) returned the state itself; it must "
                                       "return a new state and leave this one unchanged "
                                       "(`jaxsolve check` also finds children sharing state)")
            return new
        problem = _cannot_make_children(state)
        if problem:
            self.fail(node, state, problem)
        new = self.call(node, state, "clone")
        if new is state:
            self.fail(node, state, "clone() returned the state itself; it must return an "
                                   "independent copy (`jaxsolve check` also finds copies "
                                   "sharing state)")
        self.call(node, new, "apply_action", action)
        return new

    def infoset_key(self, node, state, player: int):
        """The user's infoset_key(state, player); an exception it raises (a field the
        state lacks, say) fails with the history, like one from the game's own code."""
        try:
            return self.key(state, player)
        except Exception as e:  # noqa: BLE001 - re-raised as a GameError naming the history
            self.fail(node, state, f"infoset_key(state, {player}) raised "
                                   f"{type(e).__name__}: {e}", cause=e)

    # ---------------------------------------------------------------- per node kind
    def _actions(self, node, state, raw: list, what: str, bound=None,
                 must_be_sorted=True) -> list[int]:
        """Checks raw action ids before any conversion (integers, >= 0, below `bound`,
        distinct and, if `must_be_sorted`, sorted); returns them as ints, sorted."""
        if len(raw) == 0:
            self.fail(node, state, f"{what} is empty at a non-terminal node")
        for a in raw:
            if not is_int(a):
                self.fail(node, state, f"{what} contains {a!r}, which is not an integer")
            if a < 0:
                self.fail(node, state, f"{what} contains the negative action {a}")
            if bound is not None and a >= bound:
                self.fail(node, state, f"{what} contains action {a}, but the game declares "
                                       f"num_distinct_actions() = {bound}")
            if a >= MAX_ACTION_ID:
                self.fail(node, state, f"{what} contains action {a}: action ids are columns "
                          "of the tree's arrays (policies are [infosets, largest id + 1], "
                          f"children [histories, largest id + 1]), so they must lie below "
                          f"{MAX_ACTION_ID:,}; number the actions 0, 1, 2, ... and name them "
                          "with action_to_string")
        actions = [int(a) for a in raw]
        if not must_be_sorted:
            actions.sort()
        for a, b in zip(actions, actions[1:]):
            if a == b:
                self.fail(node, state, f"{what} lists action {a} twice: {actions}")
            if b < a:
                self.fail(node, state, f"{what} is not sorted: {actions}")
        return actions

    def decision(self, node, state, player, own) -> list[int]:
        """The legal actions at a decision node of `player`; records its infoset. `own`
        is every player's own last (infoset, action), for the perfect-recall check."""
        if not 0 <= player < self.num_players:
            self.fail(node, state, f"current_player() returned {player}, expected 0.."
                                   f"{self.num_players - 1}, CHANCE (-1) or TERMINAL (-4)")
        own_parent = own[player]
        value = self.call(node, state, "legal_actions")
        raw = _as_list(value)
        if raw is None:
            self.fail(node, state, f"legal_actions() gave {value!r}; expected a list of "
                                   "integer actions")
        legal = self._actions(node, state, raw, "legal_actions()", self.declared_actions)
        self.max_action = max(self.max_action, legal[-1])
        if self.key is not None:
            key, named = self.infoset_key(node, state, player), f"infoset_key(state, {player})"
        else:
            key = self.call(node, state, "information_state_string", player)
            named = f"information_state_string({player})"
        if not isinstance(key, str):
            self.fail(node, state, f"{named} returned {type(key).__name__}, expected str")
        info = self.infoset_ids.get(key)
        if info is None:
            info = len(self.infoset_player)
            self.infoset_ids[key] = info
            self.infoset_keys.append(key)
            self.infoset_player.append(player)
            self.infoset_legal.append(tuple(legal))
            self.infoset_parent.append(own_parent)
            self.infoset_node.append(node)
            named = hasattr(state, "action_to_string")
            self.action_names.append(
                [str(self.call(node, state, "action_to_string", player, a)) if named
                 else str(a) for a in legal])
        else:
            if self.infoset_player[info] != player:
                self.fail(node, state, f"information state {format_key(key)} belongs to "
                                       f"player {self.infoset_player[info]} at history "
                                       f"{format_history(self.history(self.infoset_node[info]))}"
                                       " but to "
                                       f"player {player} here")
            if self.infoset_legal[info] != tuple(legal):
                self.fail(node, state, f"information state {format_key(key)} has legal "
                                       f"actions {list(self.infoset_legal[info])} at history "
                                       f"{format_history(self.history(self.infoset_node[info]))}"
                                       " but "
                                       f"{legal} here")
            if self.infoset_parent[info] != own_parent and not self.recall_broken[player]:
                self.recall_broken[player] = True
                self.recall_example[player] = (
                    f"player {player} reaches {format_key(key)} after "
                    f"{self._own_move(own_parent)} at history "
                    f"{format_history(self.history(node))} but after "
                    f"{self._own_move(self.infoset_parent[info])} at history "
                    f"{format_history(self.history(self.infoset_node[info]))}")
        self.index.append(info)
        return legal

    def _own_move(self, parent) -> str:
        """A player's last own (infoset, action) pair, by the infoset's string."""
        infoset, action = parent
        if infoset < 0:
            return "no move of its own"
        return f"action {action} at {format_key(self.infoset_keys[infoset])}"

    def chance(self, node, state) -> list[int]:
        value = self.call(node, state, "chance_outcomes")
        outcomes = _as_list(value)
        if outcomes is None or not all(_is_pair(o) for o in outcomes):
            self.fail(node, state, "chance_outcomes() must be a list of (action, "
                                   f"probability) pairs, got {value!r}")
        actions = self._actions(node, state, [a for a, _ in outcomes], "chance_outcomes()",
                                must_be_sorted=False)
        self.max_outcome = max(self.max_outcome, actions[-1])
        probs = [p for _, p in outcomes]
        odd = next((p for p in probs if not is_real(p)), None)
        if odd is not None:
            self.fail(node, state, f"chance probability {odd!r} is not a number")
        bad = [p for p in map(float, probs) if not math.isfinite(p) or p < 0]
        if bad:
            self.fail(node, state, f"chance probability {bad[0]} is negative or not finite")
        total = sum(map(float, probs))
        if abs(total - 1.0) > _PROB_TOLERANCE:
            self.fail(node, state, f"chance probabilities sum to {total:.9g}, not 1")
        self.index.append(len(self.chance_rows))
        self.chance_rows.append([(int(a), float(p)) for a, p in outcomes])
        return actions

    def terminal(self, node, state) -> None:
        value = self.call(node, state, "returns")
        values = _as_list(value)
        if values is None:
            self.fail(node, state, f"returns() gave {value!r} at a terminal; expected "
                                   f"{self.num_players} numbers (one per player)")
        if len(values) != self.num_players:
            self.fail(node, state, f"returns() has {len(values)} entries for "
                                   f"{self.num_players} players: {values}")
        odd = next((v for v in values if not is_real(v)), None)
        if odd is not None:
            self.fail(node, state, f"returns() contains {odd!r}, which is not a number")
        values = [float(v) for v in values]
        if not all(math.isfinite(v) for v in values):
            self.fail(node, state, f"returns() is not finite: {values}")
        self.index.append(len(self.returns))
        self.returns.append(values)

    def current_player(self, node, state) -> int:
        player = self.call(node, state, "current_player")
        if not is_int(player):
            self.fail(node, state, f"current_player() returned {player!r}, expected an "
                                   f"integer: a player 0..{self.num_players - 1}, CHANCE "
                                   "(-1) or TERMINAL (-4)")
        return int(player)

    # ---------------------------------------------------------------- the walk
    def run(self, progress=None):
        """Walks the game level by level; `progress` (a tqdm-like bar or None) counts
        the histories walked and shows the depth reached."""
        root = self.new_root()
        probed = False
        no_seq = (-1, -1)
        level = [(root, -1, -1, (no_seq,) * self.num_players)]
        offsets = [0]
        while level:
            depth = len(offsets) - 1
            start = len(self.player)
            nxt_start = start + len(level)
            if progress is not None:
                progress.update(start - progress.n)
                progress.set_postfix_str(f"depth {depth}, {len(level):,} at this depth",
                                         refresh=False)
            if nxt_start > self.max_nodes:
                self.too_big(depth, nxt_start)
            if not probed and nxt_start > _PROBE_AFTER_NODES:
                probed = True
                self.refuse_endless_first_line(root)
            nxt = []
            for state, parent, action, own in level:
                node = len(self.player)
                self.parent.append(parent)
                self.parent_action.append(action)
                player = self.current_player(node, state)
                self.player.append(player)
                terminal = bool(self.call(node, state, "is_terminal"))
                if terminal != (player == TERMINAL):
                    self.fail(node, state, f"is_terminal() is {terminal} but "
                                           f"current_player() is {player}")
                if terminal:
                    self.terminal(node, state)
                    continue
                if depth >= self.max_depth:
                    self.fail(node, state, _endless(depth, self.max_depth))
                if player == SIMULTANEOUS:
                    self.fail(node, state, "simultaneous-move node: load the game with "
                                           "jaxsolve.openspiel.from_pyspiel, which applies "
                                           "OpenSpiel's turn-based conversion")
                if player == CHANCE:
                    actions = self.chance(node, state)
                    child_own = [own] * len(actions)
                else:
                    actions = self.decision(node, state, player, own)
                    info = self.index[-1]
                    child_own = [own[:player] + ((info, a),) + own[player + 1:]
                                 for a in actions]
                # Checked before this node's children are made, not once the next level
                # is complete: a wide game (go, or 200 actions per node) would otherwise
                # fill memory with a whole level past max_nodes before being refused.
                count = nxt_start + len(nxt) + len(actions)
                if count > self.max_nodes:
                    self.too_big(depth + 1, count)
                for a, o in zip(actions, child_own):
                    self.edges.append((node, a, nxt_start + len(nxt)))
                    nxt.append((self.child(node, state, a), node, a, o))
                if progress is not None and node % _PROGRESS_EVERY == 0:
                    progress.update(node - progress.n)
            offsets.append(len(self.player))
            level = nxt
        if progress is not None:
            progress.update(len(self.player) - progress.n)
        return offsets

    def refuse_endless_first_line(self, root):
        endless = _endless_first_line(root, self.max_depth)
        if endless is not None:
            history, state = endless
            raise _game_error(history, state, _endless(len(history), self.max_depth))

    def new_root(self):
        try:
            return self.game.new_initial_state()
        except Exception as e:  # noqa: BLE001 - re-raised as a GameError
            raise GameError(f"the game's new_initial_state() raised {type(e).__name__}: "
                            f"{e}") from e

    def too_big(self, depth: int, count: int):
        # The walk holds a Python state per history of the frontier, their lists and
        # the node records: peak memory grows by about 0.8 KiB per history compiling
        # pyspiel's liar's dice (294,877 histories), against the ~0.1 KiB each takes
        # in the finished arrays. So the walk, not the tree, is what runs out.
        width = max(self.max_action + 1, 2)
        per_node = 4 * (width + 6) + 8 * self.num_players
        raise GameError(
            f"the game has more than max_nodes={self.max_nodes:,} histories (reached "
            f"{count:,} at depth {depth}); walking them in Python takes about "
            f"{format_bytes(count * _WALK_BYTES_PER_HISTORY)} (~1 KiB per history) and "
            f"the tree at least {format_bytes(count * per_node)}. Raise max_nodes "
            f"(--max-nodes on the command line) if that fits, or choose smaller game "
            f"parameters. (If the game should be far "
            f"smaller, it may never end along some history: jaxsolve.check_game(game) "
            f"finds one.)")


_WALK_BYTES_PER_HISTORY = 1024  # peak memory of the walk per history (see too_big)


def _endless(length: int, max_depth: int) -> str:
    return (f"history of length {length} with no terminal state (max_depth={max_depth:,}): "
            "the game may never end (does is_terminal() ever become true?); if its "
            "histories really are this long, pass a larger max_depth")


def _is_pair(outcome) -> bool:
    return isinstance(outcome, (tuple, list, np.ndarray)) and len(outcome) == 2


def _num_players(game) -> int:
    try:
        players = game.num_players()
    except Exception as e:  # noqa: BLE001 - re-raised as a GameError
        raise GameError(f"the game's num_players() raised {type(e).__name__}: {e}") from e
    if not is_int(players) or players < 1:
        raise GameError(f"num_players() returned {players!r}, expected an integer >= 1")
    return int(players)


def _declared_actions(game) -> int | None:
    declared = _declared(game, "num_distinct_actions")
    if declared is not None and (not is_int(declared) or declared < 1):
        raise GameError(f"num_distinct_actions() returned {declared!r}, expected an "
                        "integer >= 1 (or None: inferred from the walk)")
    return declared


def compile_game(game: GameLike, *, max_nodes: int = DEFAULT_MAX_NODES,
                 max_depth: int = DEFAULT_MAX_DEPTH,
                 infoset_key: InfosetKey | None = None, name: str | None = None,
                 warn_imperfect_recall: bool = True, progress: bool = False) -> GameTree:
    """Walks `game` once and returns its GameTree.

    Args:
      game: a protocol game (see `jaxsolve.protocol`) or a `pyspiel.Game`.
      max_nodes: refuse trees with more histories than this (GameError with the
        estimated memory) instead of running out of memory mid-walk. The walk takes
        about 1 KiB per history, so the default 20 million allows ~20 GiB: lower it
        on a smaller machine.
      max_depth: refuse a history of this many actions that has not ended (a game
        that may never end) instead of walking it until max_nodes.
      infoset_key: optional `fn(state, player) -> str` replacing
        `information_state_string`, to coalesce information states (abstraction).
        Anything else is refused with an ArgumentTypeError; an exception it raises,
        or a value that is no str, is a GameError naming the history.
      name: name recorded in the tree (defaults to the game's name).
      warn_imperfect_recall: emit an ImperfectRecallWarning when a player forgets.
      progress: show a progress bar on stderr (histories walked, depth) once the walk
        has taken a second; the CLI turns it on.

    Returns:
      The GameTree; see `jaxsolve.tree` for the arrays.

    Raises:
      GameError: the game (or infoset_key) breaks the protocol; the message names the
        history.
      ArgumentTypeError: infoset_key is neither None nor a function of (state, player).
    """
    if isinstance(game, type):
        raise GameError(class_given(game))
    if not is_game(game):
        raise GameError(f"{type(game).__name__} is not a game: it needs num_players() "
                        "and new_initial_state() (see jaxsolve.protocol)")
    _check_infoset_key(infoset_key)
    for setting, value in (("max_nodes", max_nodes), ("max_depth", max_depth)):
        if not is_int(value):
            fail("compile_game", f"{setting} must be an integer, got {value!r}",
                 ArgumentTypeError)
    game = _turn_based_if_simultaneous(game)
    walk = _Walk(game, infoset_key, max_nodes, max_depth)
    if progress:
        # `delay`: small games compile before the bar would ever show.
        with progress_bar(desc=f"compiling {name or _game_name(game)}", unit=" histories",
                          unit_scale=True, delay=1.0, leave=False) as bar:
            offsets = walk.run(bar)
    else:
        offsets = walk.run()
    if not walk.infoset_player:
        raise GameError("the game has no decision node: there is nothing to solve")
    tree = _assemble(walk, offsets, name or _game_name(game), _utility_sum(game))
    if warn_imperfect_recall:
        for example in walk.recall_example:
            if example:
                warnings.warn(f"imperfect recall: {example}. CFR still runs, but for this "
                              "player best response, exploitability and NashConv are not "
                              "exact (they can err either way, even below the policy's own "
                              "value), and the average policy weights each infoset by the "
                              "reach of one recorded history, so it differs from "
                              "OpenSpiel's.", ImperfectRecallWarning, stacklevel=2)
    return tree


def _check_infoset_key(infoset_key) -> None:
    """None or a function of (state, player): checked before the walk, since a string
    or a one-argument lambda would otherwise fail at the first decision node with a
    TypeError that names neither the argument nor what it should be."""
    if infoset_key is None:
        return
    expected = "infoset_key must be None or a function (state, player) -> str"
    if not callable(infoset_key):
        got = repr(infoset_key) if isinstance(infoset_key, str) else type(infoset_key).__name__
        fail("compile_game", f"{expected}, got {got}", ArgumentTypeError)
    try:
        signature = inspect.signature(infoset_key)
    except (TypeError, ValueError):  # some builtins have none: the call itself will tell
        return
    try:
        signature.bind(None, 0)
    except TypeError as e:
        name = getattr(infoset_key, "__name__", type(infoset_key).__name__)
        fail("compile_game", f"{expected}, got {name}{signature}, which cannot be called "
                             f"as infoset_key(state, player): {e}", ArgumentTypeError)


def _turn_based_if_simultaneous(game):
    """pyspiel simultaneous-move games go through OpenSpiel's turn-based conversion."""
    get_type = getattr(game, "get_type", None)
    if get_type is not None and "SIMULTANEOUS" in str(get_type().dynamics):
        import pyspiel  # noqa: PLC0415 - only reached with a pyspiel game

        return pyspiel.convert_to_turn_based(game)
    return game


def _check_declared_sum(walk: _Walk, utilities: np.ndarray, terminal_node: np.ndarray,
                        utility_sum: float) -> None:
    """GameError at the first terminal (in breadth-first order) whose returns do not sum
    to the declared `utility_sum()`: the tree would otherwise be taken for constant-sum
    (its NashConv and best-response gains then go unreported) and a saved copy would
    not load."""
    off = np.abs(utilities.sum(axis=1) - utility_sum) > 1e-6
    if off.any():
        z = int(np.argmax(off))
        raise GameError(f"history {format_history(walk.history(int(terminal_node[z])))}: "
                        f"the returns {utilities[z].tolist()} sum to "
                        f"{utilities[z].sum():.9g}, but the game declares utility_sum() = "
                        f"{utility_sum:.9g}")


def _assemble(walk: _Walk, offsets: list[int], name: str, utility_sum) -> GameTree:
    P = walk.num_players
    A = max(walk.max_action + 1, 1)
    AC = max(walk.max_outcome + 1, 1)
    W = max(A, AC)
    N, I = len(walk.player), len(walk.infoset_player)
    C, Z = len(walk.chance_rows), len(walk.returns)
    empty = I * A

    player = np.asarray(walk.player, np.int32)
    index = np.asarray(walk.index, np.int32)
    parent = np.asarray(walk.parent, np.int32)
    parent_action = np.asarray(walk.parent_action, np.int32)
    children = np.full((N, W), -1, np.int32)
    if walk.edges:
        e = np.asarray(walk.edges, np.int64)
        children[e[:, 0], e[:, 1]] = e[:, 2]

    legal = np.zeros((I, A), bool)
    for i, acts in enumerate(walk.infoset_legal):
        legal[i, list(acts)] = True
    names = [[""] * A for _ in range(I)]
    for i, (acts, labels) in enumerate(zip(walk.infoset_legal, walk.action_names)):
        for a, label in zip(acts, labels):
            names[i][a] = label
    par = np.asarray(walk.infoset_parent, np.int64).reshape(I, 2)
    infoset_parent = np.where(par[:, 0] >= 0, par[:, 0] * A + par[:, 1], empty).astype(np.int32)

    # Own depth and ancestors, following the sequence-form parent chain.
    depth, ancestors = own_ancestors(infoset_parent, A)
    D = ancestors.shape[1]

    chance_probs = np.zeros((C, AC), np.float64)
    for c, row in enumerate(walk.chance_rows):
        for a, p in row:
            chance_probs[c, a] = p
    utilities = np.asarray(walk.returns, np.float64).reshape(Z, P)
    _check_payoff_range(utilities)
    terminal_node = np.nonzero(player == TERMINAL)[0].astype(np.int32)
    terminal_node = terminal_node[np.argsort(index[terminal_node], kind="stable")]

    seqs, last, chance_path = terminal_paths(player, index, parent, parent_action,
                                              terminal_node, offsets, P, A, AC, I, C)
    if utility_sum is None:
        utility_sum = observed_utility_sum(utilities)
    else:  # declared: a contradicting terminal is the game's bug, named as check_game does
        _check_declared_sum(walk, utilities, terminal_node, utility_sum)
    sizes = TreeSizes(
        num_players=P, num_nodes=N, num_infosets=I, num_actions=A,
        num_chance_outcomes=AC, num_chance=C,
        num_terminals=Z, level_offsets=tuple(int(o) for o in offsets),
        max_sequence_length=seqs.shape[2], max_chance_length=chance_path.shape[1],
        max_infoset_depth=D, perfect_recall=tuple(not b for b in walk.recall_broken),
        utility_sum=utility_sum)
    return with_infoset_blocks(GameTree(
        node_player=player, node_index=index, children=children, parent=parent,
        parent_action=parent_action, infoset_player=np.asarray(walk.infoset_player, np.int32),
        legal=legal, infoset_parent=infoset_parent, infoset_ancestors=ancestors,
        infoset_depth=depth, chance_probs=chance_probs, utilities=utilities,
        terminal_node=terminal_node, terminal_sequences=seqs, terminal_last=last,
        terminal_chance=chance_path, sizes=sizes,
        names=TreeNames.make(name, list(walk.infoset_ids), names)))


def _check_payoff_range(utilities: np.ndarray) -> None:
    """Without x64 the tree's arrays become float32 on the device, where a payoff
    beyond float32's range turns into inf and every value computed from it with it."""
    largest = float(np.abs(utilities).max(initial=0.0))
    limit = float(np.finfo(np.float32).max)
    if largest > limit and not jax.config.read("jax_enable_x64"):
        raise GameError(f"returns reach {largest:.3g}, beyond float32's range ({limit:.3g}), "
                        "which the solvers use unless float64 is on: rescale the payoffs, or "
                        "call jax.config.update('jax_enable_x64', True) first")
