"""jaxsolve: imperfect-information games solved as array code in JAX."""

from jaxsolve.errors import GameError, ImperfectRecallWarning
from jaxsolve.protocol import CHANCE, SIMULTANEOUS, TERMINAL

__all__ = ["CHANCE", "SIMULTANEOUS", "TERMINAL", "GameError", "ImperfectRecallWarning"]
