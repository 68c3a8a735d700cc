"""Optional interop with OpenSpiel (`pip install -e ".[openspiel]"`).

* `from_pyspiel(game)` compiles a `pyspiel.Game` (or a game name with parameters);
  simultaneous-move games go through OpenSpiel's turn-based conversion first.
* `to_tabular_policy` / `from_tabular_policy` convert between our `[I, A]` arrays and
  `open_spiel.python.policy.TabularPolicy`, matching rows by information-state string,
  so OpenSpiel's evaluators and bots can use a jaxsolve policy and vice versa.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxsolve.compile import compile_game
from jaxsolve.errors import GameError
from jaxsolve.tree import GameTree


def _pyspiel():
    try:
        import pyspiel  # noqa: PLC0415
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("OpenSpiel is not installed: pip install -e '.[openspiel]'") from e
    return pyspiel


def load_pyspiel(game: Any, **params):
    """A pyspiel game from a name (with parameters) or a game; simultaneous-move
    games are converted to turn-based ones."""
    pyspiel = _pyspiel()
    if isinstance(game, str):
        try:
            game = pyspiel.load_game(game, params)
        except pyspiel.SpielError as e:
            raise GameError(f"OpenSpiel cannot load {game!r} with {params}: {e}") from None
    elif params:
        raise TypeError("parameters are only accepted with a game name")
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    return game


def from_pyspiel(game: Any, **kwargs) -> GameTree:
    """Compiles a pyspiel game (or name); extra keyword arguments go to `compile_game`
    except game parameters, which are passed with a name: from_pyspiel("liars_dice",
    params={"dice_sides": 4})."""
    params = kwargs.pop("params", {})
    return compile_game(load_pyspiel(game, **params), **kwargs)


def to_tabular_policy(tree: GameTree, game: Any, policy) -> Any:
    """An OpenSpiel TabularPolicy holding `policy` ([I, A]) for `game`, which must be
    the pyspiel game the tree was compiled from."""
    from open_spiel.python import policy as os_policy  # noqa: PLC0415

    tabular = os_policy.TabularPolicy(load_pyspiel(game))
    policy = np.asarray(policy, np.float64)
    index = {name: i for i, name in enumerate(tree.names.infosets)}
    width = min(policy.shape[1], tabular.action_probability_array.shape[1])
    for name, row in tabular.state_lookup.items():
        if name not in index:
            raise GameError(f"TabularPolicy infoset {name!r} is not in the tree: was the "
                            "tree compiled from this game?")
        tabular.action_probability_array[row] = 0.0
        tabular.action_probability_array[row, :width] = policy[index[name], :width]
    return tabular


def from_tabular_policy(tree: GameTree, tabular: Any):
    """[I, A] array from an OpenSpiel TabularPolicy over the same game."""
    import jax.numpy as jnp  # noqa: PLC0415

    out = np.zeros((tree.sizes.num_infosets, tree.sizes.num_actions))
    width = min(out.shape[1], tabular.action_probability_array.shape[1])
    for i, name in enumerate(tree.names.infosets):
        row = tabular.state_lookup.get(name)
        if row is None:
            raise GameError(f"TabularPolicy has no row for infoset {name!r}")
        out[i, :width] = tabular.action_probability_array[row, :width]
    return jnp.asarray(out)
