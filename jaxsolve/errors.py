"""The errors jaxsolve raises on bad input, and its warnings.

Every error a user can get from the library for bad input - a bad argument, a game
that breaks the protocol, an unreadable or mismatched file, a game too large to
solve exactly, a call that needs an optional package not installed - is a
`JaxsolveError`, and so a ValueError; an argument of the wrong kind is also a
TypeError (`ArgumentTypeError`), a missing package also an ImportError
(`MissingDependency`). One `except JaxsolveError` catches them all; `except
ValueError`, `except TypeError` and `except ImportError` keep catching what they
always did:

    JaxsolveError (ValueError)
    ├── GameError
    │   ├── ArgumentError
    │   │   └── ArgumentTypeError (also TypeError)
    │   └── CheckpointNotTreeError
    ├── CheckpointError
    ├── DistributedError
    ├── TooLarge
    └── MissingDependency (also ImportError)
"""

from __future__ import annotations

import os


class JaxsolveError(ValueError):
    """Every error jaxsolve raises on bad input: the message names the function or
    file and what is wrong. A ValueError, so `except ValueError` catches it."""


class GameError(JaxsolveError):
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

    From `meta`, the checkpoint's record of its run, the command line names the command
    that resumes it.

    Args:
      message: the error's message.
      path: the checkpoint's path.
      meta: the checkpoint's record of its run.

    Attributes:
      path: the checkpoint's path.
      meta: the checkpoint's record of its run.
    """

    def __init__(self, message: str, path: str | os.PathLike, meta: dict):
        super().__init__(message)
        self.path, self.meta = path, meta


class CheckpointError(JaxsolveError):
    """A checkpoint (a solver's, `jaxsolve.checkpoint`, or an AlphaZero training
    state's, `jaxsolve.alphazero.train`) is missing, unreadable, not a checkpoint of
    its kind, or written for another configuration."""


class DistributedError(JaxsolveError):
    """Processes that cannot run as one (`jaxsolve.processes`, `jaxsolve.distributed`):
    a coordinator that cannot be reached, a process that never joins, processes that
    disagree on how many they are or on the tree they solve, a process lost mid-run.
    The message names the process and the problem."""


class TooLarge(JaxsolveError):
    """A game whose arrays would exceed `max_bytes` (`jaxsolve.alphazero.exact`).

    The message adds to `problem` the advice to raise `max_bytes` or shrink the game.

    Args:
      where: the public function's name, quoted in the advice.
      problem: what is too large, as a sentence.
      need: the estimated size in bytes.

    Attributes:
      problem: what is too large, without the advice the message adds.
      need: the estimated size in bytes.
    """

    def __init__(self, where: str, problem: str, need: int):
        super().__init__(f"{problem} Raise max_bytes if that fits ({where}(..., "
                         f"max_bytes={need:_})), or choose a smaller grid or fewer turns.")
        self.problem, self.need = problem, need


class MissingDependency(JaxsolveError, ImportError):
    """A function needs an optional package that is not installed (SciPy for
    `jaxsolve.solve_exact`); the message names the `pip install` that adds it. Also
    an ImportError, so `except ImportError` catches it."""


class ImperfectRecallWarning(UserWarning):
    """A player forgets what it knew or did; exact best response is then not exact."""


class LargeGameWarning(UserWarning):
    """A game large for the method called (`jaxsolve.solve_exact`'s linear programs):
    it may take minutes to hours and much memory; the message names a faster method."""


def one_line(e: BaseException) -> str:
    """An exception's message as one line.

    For the command line's one-line reports and for errors that quote another's.

    Args:
      e: the exception.

    Returns:
      Its message with runs of whitespace made single spaces (a KeyError's without
      its quotes), or the exception's class name where the message is empty.
    """
    text = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
    return " ".join(str(text).split()) or type(e).__name__
