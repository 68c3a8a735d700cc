"""jaxsolve's `.npz` files - saved trees, solver checkpoints, AlphaZero training
states - written atomically and read with one set of checks.

`write` puts the archive under a temporary name in the destination's folder, syncs
it to disk and moves it into place with `os.replace`, so an interrupted write (a
full disk, Ctrl-C, a crash) leaves the previous file as it was, never a half-written
one. `read` opens an archive for reading and turns every way a file can fail to be
one - a folder, no file, another kind of file, a truncated or damaged archive - into
the caller's error (an error of `jaxsolve.errors`) naming the file; `member` does
the same for one array of an open archive. Nothing here loads pickles.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Mapping

import numpy as np

# An .npz file is a zip archive, which starts with these bytes. np.load takes any
# other file for a pickle, and its error then talks about pickled data.
_ZIP_MAGIC = b"PK\x03\x04"


def write(path: str | Path, arrays: Mapping[str, np.ndarray], *, compress: bool) -> Path:
    """Writes `arrays` as an .npz archive at exactly `path` (no suffix added), atomically.

    The archive goes through a temporary file in the same folder, synced to disk and
    moved into place; the file gets the mode a new file gets here (0666 less the umask).

    Args:
      path: where the archive goes.
      arrays: name -> array, the archive's members.
      compress: whether to write a compressed archive.

    Returns:
      `path`, as a Path.

    Raises:
      IsADirectoryError: a folder is at `path` (the error names `path`).
      FileNotFoundError: the folder `path` names does not exist (named so too).
      OSError: writing failed (a full disk, no permission); the temporary file is
        removed and the file at `path`, if any, left as it was.
    """
    given, path = os.fspath(path), Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "a folder is there; give a file name", given)
    folder = path.absolute().parent
    if not folder.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"the folder {folder} does not exist", given)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            (np.savez_compressed if compress else np.savez)(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode())  # mkstemp's 0600: give it a plain file's mode
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def _file_mode() -> int:
    """The mode `open` gives a new file here: 0666 less the process's umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def read(path: str | Path, error: type[Exception], *, kind: str):
    """Opens the .npz archive at `path`, checked to be one.

    Args:
      path: the archive's path.
      error: the error class raised for a file that cannot be read as an archive.
      kind: what the file should be, for messages ("saved tree", "checkpoint").

    Returns:
      The open archive, a `np.lib.npyio.NpzFile` (use it in a `with`).

    Raises:
      error: naming the file and the problem: "{path} is a folder, not a {kind}
        file", "{path}: no such file", "{path}: not a {kind} (not an .npz
        archive)", "{path}: not a readable {kind} (...)" for a truncated or damaged
        archive.
    """
    if os.path.isdir(path):  # messages show the path as given
        raise error(f"{path} is a folder, not a {kind} file")
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_ZIP_MAGIC))
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as e:
        raise error(f"{path}: cannot be read ({e.strerror})") from None
    if magic != _ZIP_MAGIC:
        raise error(f"{path}: not a {kind} (not an .npz archive)")
    try:
        return np.load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - a damaged archive: numpy's or zipfile's error
        raise error(f"{path}: not a readable {kind} ({type(e).__name__}: {e})") from None


def member(data, name: str, path: str | Path, error: type[Exception]) -> np.ndarray:
    """One array of an archive opened by `read`.

    A damaged member fails its CRC only when read, and an object array (a pickle) is
    refused.

    Args:
      data: the open archive.
      name: the array's name in it.
      path: the archive's path, for messages.
      error: the error class raised for an array that cannot be read.

    Returns:
      The array.

    Raises:
      error: "{path}: array {name!r} cannot be read (...)".
    """
    try:
        return data[name]
    except Exception as e:  # noqa: BLE001 - object arrays (pickles), damaged members
        raise error(f"{path}: array {name!r} cannot be read ({e})") from None


__all__ = ["member", "read", "write"]
