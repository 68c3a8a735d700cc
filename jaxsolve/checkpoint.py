"""Solver checkpoints: a CFRState and a JSON record of the run in one `.npz` file.

    save_checkpoint("runs/kuhn/checkpoint.npz", state, {"game": "kuhn_poker", ...})
    state, meta = load_checkpoint("runs/kuhn/checkpoint.npz")

The arrays are stored as they are (dtype and bits), so a run resumed from a
checkpoint continues exactly where it stopped. Writes are atomic: the file is
written next to its destination under a temporary name and moved into place with
`os.replace`, so an interrupted write never leaves a half-written checkpoint.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsolve.solvers import CFRState

_FORMAT_VERSION = 1
_META_KEY = "__meta__"


class CheckpointError(ValueError):
    """A checkpoint is missing, unreadable or not a jaxsolve checkpoint."""


def save_checkpoint(path: str | Path, state: CFRState, meta: dict[str, Any]) -> Path:
    """Atomically writes `state` (its arrays, fetched to the host) and `meta` (any
    JSON-serialisable dict) to `path`. Returns the path written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: np.asarray(value) for name, value in
              zip(CFRState._fields, jax.device_get(tuple(state)))}
    record = json.dumps({"format_version": _FORMAT_VERSION, **meta})
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **{_META_KEY: np.array(record)}, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def load_checkpoint(path: str | Path) -> tuple[CFRState, dict[str, Any]]:
    """Reads a checkpoint written by `save_checkpoint`.

    Returns:
      state: a CFRState of NumPy arrays, bit-identical to the saved ones.
      meta: the saved dict (plus "format_version").

    Raises:
      CheckpointError: the file is missing or is not a readable checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint there")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as e:  # zip/format errors from numpy
        raise CheckpointError(f"{path}: not a readable checkpoint ({e})") from None
    with data:
        missing = [k for k in (_META_KEY, *CFRState._fields) if k not in data.files]
        if missing:
            raise CheckpointError(f"{path}: not a jaxsolve checkpoint "
                                  f"(missing {', '.join(missing)})")
        try:
            meta = json.loads(str(data[_META_KEY]))
        except json.JSONDecodeError as e:
            raise CheckpointError(f"{path}: unreadable metadata ({e})") from None
        state = CFRState(*(data[name] for name in CFRState._fields))
    if meta.get("format_version") != _FORMAT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format {meta.get('format_version')}, "
                              f"this jaxsolve reads {_FORMAT_VERSION}")
    return state, meta


__all__ = ["CheckpointError", "load_checkpoint", "save_checkpoint"]
