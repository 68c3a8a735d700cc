"""Old names kept working for one version after a rename.

Each use of an old name warns with a `DeprecationWarning` that names the new one and
the version that drops the old; a game whose parameter value was renamed calls, as it
maps the old value onto the new,

    renamed("infostate='seed'", "infostate='entry_position_turn'", "orbital_pursuit_evasion")

The warning points at the first caller outside jaxsolve, wherever inside the library
the old name is met (a game built through `games.load`, a module attribute read
through `from ... import`), so that Python's filters treat it as the caller's: shown
where the caller is `__main__` or a test, an error under `-W error::DeprecationWarning`.
The `jaxsolve` program shows every one (`MESSAGE` matches them).
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable

REMOVED_IN = "0.3.0"
# A `warnings.filterwarnings` message pattern matching every warning of `renamed`.
MESSAGE = r".* is renamed .*; the old name goes in jaxsolve "


def renamed(old: str, new: str, where: str | None = None) -> None:
    """Warns that `old` is renamed `new`.

    Args:
      old: the old name as the caller wrote it (`infostate='seed'`, `--variant seed`).
      new: the name to write instead, in the same form.
      where: what the name belongs to (a game, a command), put first; None: nothing.
    """
    prefix = "" if where is None else f"{where}: "
    warnings.warn(f"{prefix}{old} is renamed {new}; the old name goes in jaxsolve "
                  f"{REMOVED_IN}", DeprecationWarning, stacklevel=_caller_level())


def module_getattr(names: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module's `__getattr__` (PEP 562) serving renamed module attributes.

    Args:
      names: old attribute name -> new one.
      namespace: the module's `globals()`, where the new names live.

    Returns:
      The `__getattr__` to assign in the module: an old name warns (`renamed`) and
      gives the new name's object; any other missing name raises AttributeError.
    """
    module = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name in names:
            renamed(f"{module}.{name}", f"{module}.{names[name]}")
            return namespace[names[name]]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__


def _library_folders() -> tuple[str, ...]:
    """The folders of jaxsolve's code: the package's and the built-in games' (games/
    installs as `jaxsolve.games`, outside the package's folder in a checkout)."""
    folders = [os.path.dirname(os.path.abspath(__file__))]
    games = sys.modules.get("jaxsolve.games")
    if getattr(games, "__file__", None):
        folders.append(os.path.dirname(os.path.abspath(games.__file__)))
    return tuple(folder + os.sep for folder in folders)


def _caller_level() -> int:
    """The `stacklevel` of `renamed`'s warning that names the first frame outside
    jaxsolve (2 is `renamed`'s own caller)."""
    inside = _library_folders()
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(inside):
        frame, level = frame.f_back, level + 1
    return level


__all__ = ["MESSAGE", "REMOVED_IN", "module_getattr", "renamed"]
