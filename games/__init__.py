"""Built-in games, written against `jaxsolve.protocol`, loadable by name.

    >>> from jaxsolve import games          # or: import jaxsolve.games
    >>> games.names()
    [...]
    >>> game = games.load("kuhn_poker", players=3)

Modules are imported only when their game is loaded, so listing is cheap. This folder
sits at the top of the repository and installs as the subpackage `jaxsolve.games`
(pyproject.toml's package-dir); a game module is `jaxsolve.games.kuhn_poker` etc.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from jaxsolve.errors import ArgumentError
from jaxsolve.protocol import GameLike

# name -> (module, class). Each class takes its parameters as keyword arguments and
# raises ValueError naming the parameter when one is out of range.
_REGISTRY: dict[str, tuple[str, str]] = {
    "kuhn_poker": ("jaxsolve.games.kuhn_poker", "KuhnPoker"),
    "leduc_poker": ("jaxsolve.games.leduc_poker", "LeducPoker"),
    "mini_maneuver": ("jaxsolve.games.mini_maneuver", "MiniManeuver"),
    "orbital_pursuit_evasion": ("jaxsolve.games.orbital_pursuit_evasion", "OrbitalPursuitEvasion"),
    "maneuver_detection": ("jaxsolve.games.maneuver_detection", "ManeuverDetection"),
    "conjunction": ("jaxsolve.games.conjunction", "Conjunction"),
    "spoof": ("jaxsolve.games.spoof", "Spoof"),
}


def names() -> list[str]:
    """The registered game names.

    Returns:
      A sorted list of names, each loadable with `load`.
    """
    return sorted(_REGISTRY)


def game_class(name: str) -> type:
    """The class behind a registered game name.

    Args:
      name: a registered name (see `names`).

    Returns:
      The game's class (its module is imported now).

    Raises:
      KeyError: unknown game name; the message lists the known names.
    """
    if name not in _REGISTRY:
        raise KeyError(f"unknown game {name!r}; known games: {', '.join(names())}")
    module, cls = _REGISTRY[name]
    return getattr(importlib.import_module(module), cls)


def parameters(name: str) -> dict[str, Any]:
    """The parameters `load(name, ...)` accepts, with their defaults.

    Args:
      name: a registered name (see `names`).

    Returns:
      `{parameter: default}`.

    Raises:
      KeyError: unknown game name.

    Examples:
      >>> from jaxsolve import games
      >>> games.parameters("kuhn_poker")
      {'players': 2}
    """
    sig = inspect.signature(game_class(name))
    return {p.name: p.default for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY or p.default is not p.empty}


def load(name: str, **params: Any) -> GameLike:
    """Builds the game `name` with keyword parameters.

    Args:
      name: a registered name (see `names`).
      **params: the game's parameters (see `parameters`); the others keep their
        defaults.

    Returns:
      The game, a protocol game to pass to `jaxsolve.compile_game`.

    Raises:
      KeyError: unknown game name.
      ValueError: a parameter the game does not accept, or a value out of range.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> game = games.load("kuhn_poker", players=3)
      >>> game.num_players()
      3
      >>> jaxsolve.compile_game(game).sizes.num_infosets
      48
    """
    cls = game_class(name)
    accepted = parameters(name)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ArgumentError(
            f"game {name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"it accepts: {', '.join(f'{k}={v!r}' for k, v in accepted.items()) or 'none'}")
    return cls(**params)


__all__ = ["game_class", "load", "names", "parameters"]
