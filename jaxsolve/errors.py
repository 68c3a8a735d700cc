"""Errors raised at jaxsolve's edges, before any array reaches JAX."""


class GameError(ValueError):
    """A game breaks the protocol: the message names the offending history and the problem."""


class ImperfectRecallWarning(UserWarning):
    """A player forgets what it knew or did; exact best response is then not exact."""
