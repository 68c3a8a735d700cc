"""Optional interop with OpenSpiel (`pip install -e ".[openspiel]"`).

* `from_pyspiel(game)` compiles a `pyspiel.Game` (or a game name with parameters);
  simultaneous-move games go through OpenSpiel's turn-based conversion first.
* `as_openspiel_game(game)` lets OpenSpiel's Python algorithms run on a jaxsolve
  protocol game, so they can check our solvers on games OpenSpiel does not ship.
* `to_tabular_policy` / `from_tabular_policy` convert between our `[I, A]` arrays and
  `open_spiel.python.policy.TabularPolicy`, matching rows by information-state string,
  so OpenSpiel's evaluators and bots can use a jaxsolve policy and vice versa.
"""

from __future__ import annotations

import difflib
from types import SimpleNamespace
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.compile import _stderr_dropped_on_error, compile_game, declared_num_actions
from jaxsolve.errors import ArgumentError, ArgumentTypeError, GameError, one_line
from jaxsolve.protocol import CHANCE, GameLike, is_game
from jaxsolve.rules import declared_utility_sum, make_child
from jaxsolve.tree import GameTree


def _pyspiel():
    try:
        import pyspiel  # noqa: PLC0415 - optional: only interop needs OpenSpiel
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("OpenSpiel is not installed: pip install -e '.[openspiel]'") from e
    return pyspiel


def load_pyspiel(game: Any, *, turn_based: bool = True, **params: Any) -> Any:
    """A pyspiel game from a name, from OpenSpiel's string form, or a game as it is.

    Simultaneous-move games are converted to turn-based ones (unless `turn_based` is
    False: the game as OpenSpiel loads it, for its own parameters and type).

    Args:
      game: a game name ("liars_dice"), OpenSpiel's string form
        ("kuhn_poker(players=3)"), or a `pyspiel.Game`.
      turn_based: convert a simultaneous-move game to turn-based.
      **params: game parameters, with a name only; lists and tuples become OpenSpiel's
        "[a;b]" strings.

    Returns:
      The `pyspiel.Game`.

    Raises:
      ArgumentError: parameters given twice (in the string form and apart), or a game
        that is not a pyspiel one (a protocol game is pointed to `as_openspiel_game`).
      GameError: OpenSpiel cannot load the game (an unknown name gets the close ones).
      TypeError: parameters given without a name.
      ImportError: OpenSpiel is not installed.
    """
    pyspiel = _pyspiel()
    if isinstance(game, str):
        # OpenSpiel takes lists as strings, "[2;3]" (battleship's ship_sizes): a list
        # or tuple is written so, as the CLI's --param ship_sizes=[2,3] parses to one.
        params = {k: f"[{';'.join(map(str, v))}]" if isinstance(v, (list, tuple)) else v
                  for k, v in params.items()}
        # OpenSpiel's own string form, "kuhn_poker(players=3)", carries its parameters.
        if "(" in game and params:
            raise ArgumentError(f"game {game!r} already carries parameters in OpenSpiel's "
                                f"string form; give {sorted(params)} there too, or pass the "
                                "plain name with all the parameters apart")
        try:
            with _stderr_dropped_on_error():
                game = pyspiel.load_game(game, params) if params else pyspiel.load_game(game)
        except pyspiel.SpielError as e:
            # OpenSpiel's message lists all ~150 registered games; name the close ones.
            message = str(e).split(" Available games are:")[0].strip().rstrip(".")
            if "Unknown game" in message:
                close = difflib.get_close_matches(game, pyspiel.registered_names(), n=3)
                message += (f"; did you mean {', '.join(map(repr, close))}?" if close else
                            "; pyspiel.registered_names() lists the games")
            with_params = f" with {params}" if params else ""
            raise GameError(f"OpenSpiel cannot load {game!r}{with_params}: {message}") from None
        except (RuntimeError, IndexError, KeyError, ValueError) as e:
            # Other C++ exceptions reach Python as these (nfg_game without its file:
            # IndexError "map::at"): still OpenSpiel's refusal, in one line.
            with_params = f" with {params}" if params else ""
            raise GameError(f"OpenSpiel cannot load {game!r}{with_params}: "
                            f"{type(e).__name__}: {e}") from None
    elif params:
        raise ArgumentTypeError("load_pyspiel: parameters are only accepted with a game name")
    if not hasattr(game, "get_type"):  # a protocol game (Python), not a pyspiel one
        raise ArgumentError(
            f"{type(game).__name__} is not a pyspiel game: pass a game name, a pyspiel game, "
            f"or wrap a Python game with jaxsolve.openspiel.as_openspiel_game(game)")
    if turn_based and game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    return game


def from_pyspiel(game: Any, **kwargs: Any) -> GameTree:
    """Compiles a pyspiel game (or name).

    Args:
      game: a game name or `pyspiel.Game`, as `load_pyspiel` takes.
      **kwargs: go to `compile_game`, except `params`, the game parameters passed with
        a name: `from_pyspiel("liars_dice", params={"dice_sides": 4})`.

    Returns:
      The GameTree.

    Raises:
      GameError: as `load_pyspiel` and `compile_game` raise.
    """
    params = kwargs.pop("params", {})
    return compile_game(load_pyspiel(game, **params), **kwargs)


def to_tabular_policy(tree: GameTree, game: Any, policy: jax.Array) -> Any:
    """An OpenSpiel `TabularPolicy` holding `policy`, rows matched by information-state
    string.

    `game` must be the pyspiel game the tree was compiled from: a policy of another
    shape, or a game whose players or information states differ from the tree's, is
    refused rather than cut or padded to fit.

    Args:
      tree: the compiled game.
      game: the pyspiel game (or name) `tree` was compiled from.
      policy: `[I, A]` action probabilities for `tree`.

    Returns:
      An `open_spiel.python.policy.TabularPolicy`.

    Raises:
      ArgumentError: a bad tree or policy, or a game that is not the tree's.
    """
    from open_spiel.python import policy as os_policy  # noqa: PLC0415 - optional OpenSpiel

    where = "to_tabular_policy"
    tree_arguments.game_tree(tree, where)
    policy = tree_arguments.policy(tree, policy, where, host=True).astype(np.float64)
    game = load_pyspiel(game)
    # Checked before the rows are matched: a 2-player Kuhn game's information states
    # are all among the 3-player tree's, so the match alone would accept it.
    if game.num_players() != tree.sizes.num_players:
        validate.fail(where, f"the tree is of a {tree.sizes.num_players}-player game but "
                             f"{game} has {game.num_players()} players: pass the pyspiel "
                             f"game the tree was compiled from ({tree.names.game})")
    tabular = os_policy.TabularPolicy(game)
    index = {name: i for i, name in enumerate(tree.names.infosets)}
    missing = [name for name in index if name not in tabular.state_lookup]
    if missing:
        validate.fail(where, f"the tree's infoset {missing[0]!r} is not one of {game}'s "
                             f"({len(missing)} of {len(index)} missing): was the tree "
                             "compiled from this game?")
    width = min(policy.shape[1], tabular.action_probability_array.shape[1])
    for name, row in tabular.state_lookup.items():
        if name not in index:
            validate.fail(where, f"{game}'s infoset {name!r} is not in the tree: was the "
                                 "tree compiled from this game?")
        tabular.action_probability_array[row] = 0.0
        tabular.action_probability_array[row, :width] = policy[index[name], :width]
    return tabular


def from_tabular_policy(tree: GameTree, tabular: Any) -> jax.Array:
    """A policy array from an OpenSpiel policy over the same game; rows are matched by the
    infoset strings.

    Args:
      tree: the compiled game.
      tabular: a Python `TabularPolicy`, what OpenSpiel's C++ solvers return
        (`pyspiel.TabularPolicy`, `pyspiel.Policy` from e.g.
        `pyspiel.CFRSolver(game).average_policy()`), or a dict
        `{information state string: [(action, probability), ...]}`
        (`TabularPolicy.to_dict()`, `pyspiel.TabularPolicy.policy_table()`).

    Returns:
      `[I, A]` float array.

    Raises:
      GameError: the policy lacks an infoset of the tree, or names an action id the
        game does not have.
      ArgumentTypeError: `tabular` is none of the kinds above.
    """
    where = "from_tabular_policy"
    tree_arguments.game_tree(tree, where)
    out = np.zeros((tree.sizes.num_infosets, tree.sizes.num_actions))
    if hasattr(tabular, "action_probability_array") and hasattr(tabular, "state_lookup"):
        width = min(out.shape[1], tabular.action_probability_array.shape[1])
        for i, name in enumerate(tree.names.infosets):
            row = tabular.state_lookup.get(name)
            if row is None:
                raise GameError(f"{where}: the TabularPolicy has no row for infoset {name!r}")
            out[i, :width] = tabular.action_probability_array[row, :width]
        return jnp.asarray(out)
    if hasattr(tabular, "policy_table"):  # pyspiel.TabularPolicy
        tabular = tabular.policy_table()
    if isinstance(tabular, Mapping):
        def row_of(name):
            if name not in tabular:
                raise GameError(f"{where}: the policy has no row for infoset {name!r}")
            return tabular[name]
    elif hasattr(tabular, "get_state_policy"):  # pyspiel.Policy: looked up by the string
        def row_of(name):
            try:
                return tabular.get_state_policy(name)
            except Exception as e:  # noqa: BLE001 - OpenSpiel's refusal, named
                raise GameError(f"{where}: the policy has no row for infoset {name!r} "
                                f"({one_line(e)})") from None
    else:
        validate.fail(where, "expected an OpenSpiel policy (open_spiel.python.policy."
                             "TabularPolicy, pyspiel.TabularPolicy or pyspiel.Policy) or a "
                             "dict {infoset string: [(action, probability), ...]}, got "
                             f"{type(tabular).__name__}", ArgumentTypeError)
    for i, name in enumerate(tree.names.infosets):
        pairs = row_of(name)
        for action, p in (pairs.items() if isinstance(pairs, Mapping) else pairs):
            if not validate.is_int(action) or not 0 <= action < out.shape[1]:
                raise GameError(f"{where}: infoset {name!r} has action {action!r}, which the "
                                f"game does not (ids 0..{out.shape[1] - 1})")
            out[i, action] = p
    return jnp.asarray(out)


# ------------------------------------------------------------ our games in OpenSpiel
def as_openspiel_game(game: GameLike) -> _GameView:
    """A view of a jaxsolve protocol game that OpenSpiel's *Python* algorithms accept
    (`cfr.CFRPlusSolver`, `exploitability.nash_conv`, `best_response`, ...).

    It adds the few pyspiel methods they call (get_type, legal_actions_mask, history,
    ...) and no game logic. C++ algorithms need a registered pyspiel game instead, and so
    does `exploitability.exploitability`, which runs the C++ best response: for a
    two-player zero-sum game use `exploitability.nash_conv(view, policy) / 2`.

    Args:
      game: the protocol game itself (what `compile_game` is given), not its compiled
        GameTree, which has no states to play.

    Returns:
      The game view, a pyspiel-like game.

    Raises:
      ArgumentTypeError: a GameTree, or anything without `num_players()` and
        `new_initial_state()` (refused up front instead of failing later with an
        AttributeError).
    """
    where = "as_openspiel_game"
    if isinstance(game, GameTree):
        validate.fail(where, "takes a protocol game (what compile_game was given, e.g. "
                             "jaxsolve.games.load(name)), not a compiled GameTree", ArgumentTypeError)
    if not is_game(game):
        validate.fail(where, f"expected a protocol game with num_players() and "
                             f"new_initial_state() (see jaxsolve.protocol), got "
                             f"{type(game).__name__}", ArgumentTypeError)
    return _GameView(game)


class _StateView:
    """A protocol state with the few extra methods OpenSpiel's Python algorithms call."""

    def __init__(self, game, state, history=()):
        self._game, self._state, self._history = game, state, history

    def current_player(self):
        return self._state.current_player()

    def is_terminal(self):
        return self._state.is_terminal()

    def is_chance_node(self):  # from current_player(): the protocol needs no is_chance_node
        return self._state.current_player() == CHANCE

    def is_simultaneous_node(self):
        return False

    def legal_actions(self, player=None):
        return list(self._state.legal_actions())

    def legal_actions_mask(self, player=None):
        mask = [0] * self._game.num_distinct_actions()  # declared or counted
        if not self.is_terminal() and player == self.current_player():
            for a in self.legal_actions():
                mask[a] = 1
        return mask

    def chance_outcomes(self):
        return self._state.chance_outcomes()

    def returns(self):
        return self._state.returns()

    def player_return(self, player):
        return self._state.returns()[player]

    def num_players(self):
        return self._game.num_players()

    def action_to_string(self, player, action):
        to_string = getattr(self._state, "action_to_string", None)
        return to_string(player, action) if to_string else str(action)

    def information_state_string(self, player=None):
        return self._state.information_state_string(
            self.current_player() if player is None else player)

    def history_str(self):
        return ", ".join(map(str, self._history))

    def history(self):
        return list(self._history)

    def child(self, action):  # the protocol's child(a), or clone() + apply_action(a)
        return _StateView(self._game, make_child(self._state, action), self._history + (action,))

    def clone(self):
        if not hasattr(self._state, "clone"):
            raise GameError(f"{type(self._state).__name__} has no clone(), which this "
                            "OpenSpiel algorithm calls (the protocol needs it only with "
                            "apply_action; add a clone())")
        return _StateView(self._game, self._state.clone(), self._history)


class _GameView:
    def __init__(self, game):
        pyspiel = _pyspiel()
        self._game = game
        self._num_actions = declared_num_actions(game)  # None: counted on first use
        total = declared_utility_sum(game)
        utility = pyspiel.GameType.Utility
        self._utility_sum = total
        self._type = SimpleNamespace(
            dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
            utility=(utility.GENERAL_SUM if total is None else
                     utility.ZERO_SUM if total == 0 else utility.CONSTANT_SUM),
            provides_information_state_string=True, provides_information_state_tensor=False,
            provides_observation_string=False, provides_observation_tensor=False)

    def get_type(self):
        return self._type

    def num_players(self):
        return self._game.num_players()

    def utility_sum(self):
        return self._utility_sum

    def num_distinct_actions(self):
        """The game's declaration, or (the protocol makes it optional) the width of
        its compiled tree's action axis: one walk, the first time it is asked."""
        if self._num_actions is None:
            self._num_actions = compile_game(self._game, warn_imperfect_recall=False,
                                             name="as_openspiel_game").sizes.num_actions
        return self._num_actions

    def new_initial_state(self):
        return _StateView(self, self._game.new_initial_state())

    def new_initial_states(self):
        return [self.new_initial_state()]
