"""The command line's output folders: checked writable before any work starts."""

from __future__ import annotations

import tempfile
from pathlib import Path

from jaxsolve.cli._base import CLIError
from jaxsolve.errors import one_line


def check_writable(folder, what: str) -> None:
    """CLIError "cannot write to {what} {folder}: ..." unless a file can be created in
    `folder` (an existing one): proved by writing one, which also catches read-only
    mounts that permission bits do not show."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise CLIError(f"cannot write to {what} {folder}: {one_line(e)}") from None


def writable_folder(out: Path, ckpt: Path | None = None, option: str = "--out") -> None:
    """Creates `out` and proves that files can be written there, before any work (a
    run that cannot save would otherwise fail after its first chunk, a sweep after
    its last point); `ckpt`, a file to be written there, must not be a folder."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CLIError(f"cannot write to {option} {out}: {one_line(e)}") from None
    check_writable(out, option)
    if ckpt is not None and ckpt.is_dir():
        raise CLIError(f"{ckpt} is a folder; a file of the run goes there (choose another {option})")
