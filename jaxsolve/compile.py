"""compile_game: one breadth-first walk of a protocol game into a GameTree.

The walk is iterative (no recursion limit), validates every node as it goes and
raises `GameError` naming the offending history, so that nothing malformed ever
reaches JAX: a value that breaks the protocol, an exception raised by the game's
code (chained as the cause), or a history of `max_depth` actions that has not
ended. The rules themselves live in `jaxsolve.rules`, which `check_game` shares;
after the walk `jaxsolve.assemble` derives the sequence-form arrays with vectorised
NumPy, as it does for the builders.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import tempfile
import warnings
from typing import Any, Callable

import jax
import numpy as np

from jaxsolve.assemble import TreeParts, tree_from_parts
from jaxsolve.builders.assemble import format_bytes
from jaxsolve.errors import ArgumentTypeError, GameError, ImperfectRecallWarning
from jaxsolve.progress import bar as progress_bar
from jaxsolve.protocol import CHANCE, TERMINAL, GameLike, is_game
from jaxsolve.rules import (action_list_problem, as_list, call_text, cannot_make_children,
                            chance_outcomes_problem, class_given, current_player_problem,
                            declared, declared_actions_problem, declared_utility_sum,
                            endless_problem, format_history, game_error, imperfect_recall,
                            infoset_consistency_problem, infoset_key_problem, make_child,
                            missing_method, not_a_list, num_players_problem, own_move, raised,
                            returns_problem, terminal_problem, utility_sum_problem)
from jaxsolve.tree import GameTree
from jaxsolve.validate import fail, integer_rule, is_int, static

DEFAULT_MAX_NODES = 20_000_000
# The progress bar is moved every this many histories (a bar update per history would
# cost more than the walk's own bookkeeping).
_PROGRESS_EVERY = 4096
# A history of this many actions must be terminal, else the game is called endless
# (check_game's playouts use the same bound). The built-in games end within 12
# actions, the builders' within a few hundred, so 10,000 rejects no real game, while
# a game that never ends is refused after 10,000 actions: about 0.1 s.
DEFAULT_MAX_DEPTH = 10_000
# Once the walk holds this many histories (about 0.1 s), it follows the first actions
# from the root for max_depth actions: a game that never ends and has several actions
# per node would otherwise grow level by level until max_nodes (minutes). Earlier,
# the walk itself names any protocol violation of the first levels first.
PROBE_AFTER_NODES = 10_000

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


def _first_action(state):
    """The first legal action or chance outcome; None at a terminal, or where
    current_player() is no integer (the walk reports that)."""
    player = state.current_player()
    if state.is_terminal() or player == TERMINAL or not is_int(player):
        return None
    return state.chance_outcomes()[0][0] if player == CHANCE else state.legal_actions()[0]


def endless_first_line(root, max_depth: int) -> tuple[list[int], Any] | None:
    """Follows the first action from the root for up to max_depth actions.

    `compile_game` and `check_game` both call it once their walk holds
    `PROBE_AFTER_NODES` histories.

    Args:
      root: the game's initial state.
      max_depth: the most actions to follow.

    Returns:
      (history, state) when that history is still not over after `max_depth`
      actions, else None (also at a protocol violation on the way, which the walk
      names with its history).
    """
    state, history = root, []
    try:
        while is_int(action := _first_action(state)):
            if len(history) >= max_depth:
                return history, state
            state = make_child(state, action)
            history.append(action)
    except Exception:  # noqa: BLE001 - see the docstring
        return None
    return None


class _Walk:
    """Accumulates node records during the breadth-first walk."""

    def __init__(self, game, infoset_key: InfosetKey | None, max_nodes: int, max_depth: int):
        self.game = game
        self.num_players = _num_players(game)
        self.declared_actions = declared_num_actions(game)
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
        # per chance node / terminal; the last chance outcome above a node and each
        # player's last own (infoset, action) are (row, action) pairs, (-1, -1) for none
        self.chance_rows: list[list[tuple[int, float]]] = []
        self.chance_prev: list[tuple[int, int]] = []
        self.returns: list[list[float]] = []
        self.terminal_own: list[tuple[tuple[int, int], ...]] = []
        self.terminal_chance: list[tuple[int, int]] = []
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
        error = game_error(self.history(node), state, problem)
        if cause is None:
            raise error
        raise error from cause

    def call(self, node: int, state, method: str, *args):
        """`state.method(*args)`; a missing method, or an exception raised by the game's
        code, fails with the history (the game's exception is chained as the cause)."""
        fn = getattr(state, method, None)
        if fn is None:
            self.fail(node, state, missing_method(state, method))
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - re-raised as a GameError naming the history
            self.fail(node, state, raised(call_text(method, args), e), cause=e)

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
        if problem := cannot_make_children(state):
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
            self.fail(node, state, raised(f"infoset_key(state, {player})", e), cause=e)

    # ---------------------------------------------------------------- per node kind
    def decision(self, node, state, player, own) -> list[int]:
        """The legal actions at a decision node of `player`; records its infoset. `own`
        is every player's own last (infoset, action), for the perfect-recall check."""
        own_parent = own[player]
        value = self.call(node, state, "legal_actions")
        raw = as_list(value)
        if raw is None:
            self.fail(node, state, not_a_list(value))
        if problem := action_list_problem(raw, "legal_actions()", self.declared_actions):
            self.fail(node, state, problem)
        legal = [int(a) for a in raw]
        self.max_action = max(self.max_action, legal[-1])
        if self.key is not None:
            key, named = self.infoset_key(node, state, player), f"infoset_key(state, {player})"
        else:
            key = self.call(node, state, "information_state_string", player)
            named = f"information_state_string({player})"
        if problem := infoset_key_problem(key, named):
            self.fail(node, state, problem)
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
            first_node = self.infoset_node[info]
            if problem := infoset_consistency_problem(
                    key, self.infoset_player[info], self.infoset_legal[info],
                    lambda: self.history(first_node), player, legal):
                self.fail(node, state, problem)
            if self.infoset_parent[info] != own_parent and not self.recall_broken[player]:
                self.recall_broken[player] = True
                self.recall_example[player] = f"player {player} " + imperfect_recall(
                    key, self._own_move(own_parent), self.history(node),
                    self._own_move(self.infoset_parent[info]), self.history(first_node))
        self.index.append(info)
        return legal

    def _own_move(self, parent) -> str:
        """A player's last own (infoset, action) pair, by the infoset's string."""
        infoset, action = parent
        return own_move(None if infoset < 0 else self.infoset_keys[infoset], action)

    def chance(self, node, state, last_outcome) -> list[int]:
        """The outcomes at a chance node; records its row. `last_outcome` is the chance
        (row, outcome) above it."""
        value = self.call(node, state, "chance_outcomes")
        outcomes = as_list(value)  # once: a generator is read once
        if problem := chance_outcomes_problem(value if outcomes is None else outcomes):
            self.fail(node, state, problem)
        actions = sorted(int(a) for a, _ in outcomes)
        self.max_outcome = max(self.max_outcome, actions[-1])
        self.index.append(len(self.chance_rows))
        self.chance_rows.append([(int(a), float(p)) for a, p in outcomes])
        self.chance_prev.append(last_outcome)
        return actions

    def terminal(self, node, state, own, last_outcome) -> None:
        value = self.call(node, state, "returns")
        values = as_list(value)  # once: a generator is read once
        if problem := returns_problem(value if values is None else values, self.num_players):
            self.fail(node, state, problem)
        self.index.append(len(self.returns))
        self.returns.append([float(v) for v in values])
        self.terminal_own.append(own)
        self.terminal_chance.append(last_outcome)

    def current_player(self, node, state) -> int:
        player = self.call(node, state, "current_player")
        if problem := current_player_problem(player, self.num_players):
            self.fail(node, state, problem)
        return int(player)

    # ---------------------------------------------------------------- the walk
    def run(self, progress=None):
        """Walks the game level by level; `progress` (a tqdm-like bar or None) counts
        the histories walked and shows the depth reached."""
        root = self.new_root()
        probed = False
        none = (-1, -1)
        level = [(root, -1, -1, (none,) * self.num_players, none)]
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
            if not probed and nxt_start > PROBE_AFTER_NODES:
                probed = True
                self.refuse_endless_first_line(root)
            nxt = []
            for state, parent, action, own, last_outcome in level:
                node = len(self.player)
                self.parent.append(parent)
                self.parent_action.append(action)
                player = self.current_player(node, state)
                self.player.append(player)
                terminal = self.call(node, state, "is_terminal")
                if problem := terminal_problem(terminal, player):
                    self.fail(node, state, problem)
                if player == TERMINAL:
                    self.terminal(node, state, own, last_outcome)
                    continue
                if depth >= self.max_depth:
                    self.fail(node, state, endless_problem(depth, "max_depth", self.max_depth))
                if player == CHANCE:
                    actions = self.chance(node, state, last_outcome)
                    row = self.index[-1]
                    child_own = [own] * len(actions)
                    child_outcome = [(row, a) for a in actions]
                else:
                    actions = self.decision(node, state, player, own)
                    info = self.index[-1]
                    child_own = [own[:player] + ((info, a),) + own[player + 1:]
                                 for a in actions]
                    child_outcome = [last_outcome] * len(actions)
                # Checked before this node's children are made, not once the next level
                # is complete: a wide game (go, or 200 actions per node) would otherwise
                # fill memory with a whole level past max_nodes before being refused.
                count = nxt_start + len(nxt) + len(actions)
                if count > self.max_nodes:
                    self.too_big(depth + 1, count)
                for a, o, c in zip(actions, child_own, child_outcome):
                    self.edges.append((node, a, nxt_start + len(nxt)))
                    nxt.append((self.child(node, state, a), node, a, o, c))
                if progress is not None and node % _PROGRESS_EVERY == 0:
                    progress.update(node - progress.n)
            offsets.append(len(self.player))
            level = nxt
        if progress is not None:
            progress.update(len(self.player) - progress.n)
        return offsets

    def refuse_endless_first_line(self, root):
        endless = endless_first_line(root, self.max_depth)
        if endless is not None:
            history, state = endless
            raise game_error(history, state,
                             endless_problem(len(history), "max_depth", self.max_depth))

    def new_root(self):
        try:
            return self.game.new_initial_state()
        except Exception as e:  # noqa: BLE001 - re-raised as a GameError
            raise GameError(f"the game's {raised('new_initial_state()', e)}") from e

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


def _num_players(game) -> int:
    try:
        players = game.num_players()
    except Exception as e:  # noqa: BLE001 - re-raised as a GameError
        raise GameError(f"the game's {raised('num_players()', e)}") from e
    problem = num_players_problem(players)
    if problem:
        raise GameError(problem)
    return int(players)


def declared_num_actions(game) -> int | None:
    """The game's declared num_distinct_actions().

    Args:
      game: a protocol game.

    Returns:
      The declared number, or None where the game declares none.

    Raises:
      GameError: the declaration is no integer >= 1.
    """
    value = declared(game, "num_distinct_actions")
    problem = declared_actions_problem(value)
    if problem:
        raise GameError(problem)
    return value


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

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> s = tree.sizes
      >>> s.num_nodes, s.num_infosets, s.num_actions, s.num_terminals, s.num_chance
      (58, 12, 2, 30, 4)
    """
    if isinstance(game, type):
        raise GameError(class_given(game))
    if not is_game(game):
        raise GameError(f"{type(game).__name__} is not a game: it needs num_players() "
                        "and new_initial_state() (see jaxsolve.protocol)")
    _check_infoset_key(infoset_key)
    max_nodes, max_depth = (static("compile_game", setting, value, integer_rule())
                            for setting, value in (("max_nodes", max_nodes),
                                                   ("max_depth", max_depth)))
    game = turn_based_if_simultaneous(game)
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
    tree = tree_from_parts(_tree_parts(walk, offsets, name or _game_name(game),
                                       declared_utility_sum(game)))
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


def turn_based_if_simultaneous(game):
    """A pyspiel simultaneous-move game through OpenSpiel's turn-based conversion.

    Args:
      game: any game.

    Returns:
      `pyspiel.convert_to_turn_based(game)` for a pyspiel game with simultaneous
      dynamics, else `game` itself.
    """
    get_type = getattr(game, "get_type", None)
    if get_type is not None and "SIMULTANEOUS" in str(get_type().dynamics):
        import pyspiel  # noqa: PLC0415 - only reached with a pyspiel game

        return pyspiel.convert_to_turn_based(game)
    return game


def _tree_parts(walk: _Walk, offsets: list[int], name: str, utility_sum) -> TreeParts:
    """The walk's records as arrays; a declared utility_sum() the returns break fails
    at the first such terminal (breadth-first), as check_game reports it."""
    P = walk.num_players
    A = max(walk.max_action + 1, 1)
    AC = max(walk.max_outcome + 1, 1)
    N, I = len(walk.player), len(walk.infoset_player)
    player = np.asarray(walk.player, np.int32)
    children = np.full((N, max(A, AC)), -1, np.int32)
    if walk.edges:
        e = np.asarray(walk.edges, np.int64)
        children[e[:, 0], e[:, 1]] = e[:, 2]
    legal = np.zeros((I, A), bool)
    names = [[""] * A for _ in range(I)]
    for i, (acts, labels) in enumerate(zip(walk.infoset_legal, walk.action_names)):
        legal[i, list(acts)] = True
        for a, label in zip(acts, labels):
            names[i][a] = label
    chance_probs = np.zeros((len(walk.chance_rows), AC), np.float64)
    for c, row in enumerate(walk.chance_rows):
        for a, p in row:
            chance_probs[c, a] = p
    utilities = np.asarray(walk.returns, np.float64).reshape(len(walk.returns), P)
    _check_payoff_range(utilities)
    terminal_node = np.flatnonzero(player == TERMINAL).astype(np.int32)
    if utility_sum is not None:
        broken = utility_sum_problem(utilities, utility_sum)
        if broken:
            z, problem = broken
            raise GameError(f"history {format_history(walk.history(int(terminal_node[z])))}: "
                            f"{problem}")
    own = np.asarray(walk.terminal_own, np.int64).reshape(len(walk.returns), P, 2)
    return TreeParts(
        name=name, num_actions=A, num_chance_outcomes=AC, level_offsets=tuple(offsets),
        node_player=player, node_index=np.asarray(walk.index, np.int32),
        parent=np.asarray(walk.parent, np.int32),
        parent_action=np.asarray(walk.parent_action, np.int32), children=children,
        infoset_player=np.asarray(walk.infoset_player, np.int32),
        infoset_parent=_flat(np.asarray(walk.infoset_parent, np.int64).reshape(I, 2), A),
        legal=legal, chance_probs=chance_probs,
        chance_prev=_flat(np.asarray(walk.chance_prev, np.int64).reshape(-1, 2), AC),
        utilities=utilities, terminal_node=terminal_node,
        terminal_last=_flat(own, A).T.astype(np.int32).copy(),
        terminal_chance_last=_flat(np.asarray(walk.terminal_chance, np.int64).reshape(-1, 2), AC),
        perfect_recall=tuple(not b for b in walk.recall_broken), utility_sum=utility_sum,
        infoset_names=list(walk.infoset_ids), action_names=names)


def _flat(pairs: np.ndarray, width: int) -> np.ndarray:
    """[..., 2] (row, action) pairs as flat ids row * width + action; -1 for (-1, -1)."""
    return np.where(pairs[..., 0] >= 0, pairs[..., 0] * width + pairs[..., 1], -1)


def _check_payoff_range(utilities: np.ndarray) -> None:
    """Without x64 the tree's arrays become float32 on the device, where a payoff
    beyond float32's range turns into inf and every value computed from it with it."""
    largest = float(np.abs(utilities).max(initial=0.0))
    limit = float(np.finfo(np.float32).max)
    if largest > limit and not jax.config.read("jax_enable_x64"):
        raise GameError(f"returns reach {largest:.3g}, beyond float32's range ({limit:.3g}), "
                        "which the solvers use unless float64 is on: rescale the payoffs, or "
                        "call jax.config.update('jax_enable_x64', True) first")
