"""Errors raised at jaxsolve's edges, before any array reaches JAX."""


class GameError(ValueError):
    """A game breaks the protocol: the message names the offending history and the problem."""


class ArgumentError(GameError):
    """An argument a public function cannot use: another game's policy or state, a
    value out of range. The message starts with the function's name (see
    `jaxsolve.validate`). A GameError, and so a ValueError, like the other errors
    raised at the edges."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong kind (a game where a GameTree belongs, a string where
    a number does). Also a TypeError, so either `except` clause catches it."""


class CheckpointNotTreeError(GameError):
    """A solver checkpoint (`jaxsolve.checkpoint`) where a saved tree belongs.
    `meta` is the checkpoint's record of its run, from which the command line names
    the command that resumes it."""

    def __init__(self, message: str, path, meta: dict):
        super().__init__(message)
        self.path, self.meta = path, meta


class ImperfectRecallWarning(UserWarning):
    """A player forgets what it knew or did; exact best response is then not exact."""


def one_line(e: BaseException) -> str:
    """An exception's message as one line (a KeyError's without its quotes), for the
    command line's one-line reports and for errors that quote another's."""
    text = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
    return " ".join(str(text).split()) or type(e).__name__
