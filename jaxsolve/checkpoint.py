"""Solver checkpoints: a solver state and a JSON record of the run in one `.npz` file.

    save_checkpoint("runs/kuhn/checkpoint.npz", state, {"game": "kuhn_poker", ...})
    state, meta = load_checkpoint("runs/kuhn/checkpoint.npz")

A state is any NamedTuple of arrays: `jaxsolve.CFRState`, `jaxsolve.MCCFRState`
or one of your own. Its arrays are stored as they are (dtype, shape and bits, so a
PRNG key and a frontier capacity come back exactly) next to a record of the state's
type and field names, and `load_checkpoint` rebuilds that type. A run resumed from a
checkpoint therefore continues exactly where it stopped. Writes are atomic
(`jaxsolve.npz.write`): an interrupted write never leaves a half-written checkpoint.

Format 1 (older jaxsolve) held exactly CFRState's fields and no type record; such
files still load, as CFRState.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from jaxsolve import npz
from jaxsolve.base import CFRState
from jaxsolve.errors import ArgumentTypeError, CheckpointError
from jaxsolve.tree.file import CHECKPOINT_STATE_KEY as _STATE_KEY  # JSON {"type", "fields"}
from jaxsolve.tree.file import is_checkpoint

_FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)  # 1: CFRState only, no state record
_META_KEY = "__meta__"


def _type_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _fields_of(state) -> tuple[str, ...]:
    fields = getattr(type(state), "_fields", None)
    if not isinstance(state, tuple) or fields is None:
        raise ArgumentTypeError("save_checkpoint: state must be a NamedTuple (e.g. CFRState "
                                f"or MCCFRState), got {type(state).__name__}")
    reserved = [f for f in fields if f.startswith("__")]
    if reserved:
        raise ArgumentTypeError(f"save_checkpoint: the state's field names may not start "
                                f"with '__': {reserved}")
    return tuple(fields)


def save_checkpoint(path: str | Path, state: NamedTuple, meta: dict[str, Any]) -> Path:
    """Atomically writes a solver state, its type and field names, and `meta` to `path`.

    Args:
      path: the `.npz` file; missing folders are created.
      state: a NamedTuple of arrays (`CFRState`, `MCCFRState`, ...), fetched to the
        host.
      meta: any JSON-serialisable dict, e.g. the run's settings.

    Returns:
      The path written.

    Raises:
      ArgumentTypeError: `state` is not a NamedTuple, or a field name starts with
        '__'.
    """
    path = Path(path)
    fields = _fields_of(state)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: np.asarray(value) for name, value in
              zip(fields, jax.device_get(tuple(state)))}
    record = json.dumps({"format_version": _FORMAT_VERSION, **meta})
    kind = json.dumps({"type": _type_name(type(state)), "fields": list(fields)})
    return npz.write(path, {_META_KEY: np.array(record), _STATE_KEY: np.array(kind), **arrays},
                     compress=False)


def _resolve(name: str) -> type | None:
    """The class `module:qualname` names, if its module is jaxsolve's own or already
    imported (loading a checkpoint never imports other code); else None."""
    module_name, _, qualname = name.partition(":")
    module = sys.modules.get(module_name)
    if module is None and (module_name == "jaxsolve" or module_name.startswith("jaxsolve.")):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return None
    if module is None or not qualname:
        return None
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


def load_checkpoint(path: str | Path, state_type: type | None = None
                    ) -> tuple[NamedTuple, dict[str, Any]]:
    """Reads a checkpoint written by `save_checkpoint`.

    Args:
      path: the `.npz` file.
      state_type: the NamedTuple class to rebuild (its fields must be the saved
        ones, in order). None: the type recorded in the file, found among
        jaxsolve's modules or those already imported; CFRState for format-1 files.

    Returns:
      state: a NamedTuple of NumPy arrays, bit-identical to the saved ones (of their
        saved dtype: a float32 state resumes in float32 even under jax_enable_x64).
      meta: the saved dict (plus "format_version").

    Raises:
      CheckpointError: the file is missing or is not a readable checkpoint, or its
        state does not fit `state_type` (or its recorded type cannot be found), or
        holds values no solver writes (NaN, infinities, a negative iteration).
    """
    path = Path(path)
    with npz.read(path, CheckpointError, kind="checkpoint") as data:
        if _META_KEY not in data.files:
            raise CheckpointError(f"{path}: not a jaxsolve checkpoint (missing {_META_KEY})")
        if not is_checkpoint(data.files) and "node_player" in data.files:  # a GameTree's
            raise CheckpointError(f"{path}: this is a saved game tree (GameTree.save), not "
                                  "a solver checkpoint")
        member = lambda name: npz.member(data, name, path, CheckpointError)  # noqa: E731
        try:
            meta = json.loads(str(member(_META_KEY)))
            kind = (json.loads(str(member(_STATE_KEY))) if _STATE_KEY in data.files else
                    {"type": _type_name(CFRState), "fields": list(CFRState._fields)})
            type_name, fields = str(kind["type"]), [str(f) for f in kind["fields"]]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise CheckpointError(f"{path}: unreadable metadata ({e})") from None
        if not isinstance(meta, dict) or meta.get("format_version") not in _READABLE_VERSIONS:
            version = meta.get("format_version") if isinstance(meta, dict) else None
            raise CheckpointError(f"{path}: checkpoint format {version}, this jaxsolve "
                                  f"reads {', '.join(map(str, _READABLE_VERSIONS))}")
        missing = [k for k in fields if k not in data.files]
        if missing:
            raise CheckpointError(f"{path}: not a jaxsolve checkpoint "
                                  f"(missing {', '.join(missing)})")
        if state_type is None:
            state_type = _resolve(type_name)
            if state_type is None:
                raise CheckpointError(f"{path}: holds a {type_name} state, a type not found "
                                      "here; import its module or pass state_type=")
        expected = list(getattr(state_type, "_fields", ()) or ())
        if expected != fields:
            raise CheckpointError(
                f"{path}: holds a {type_name.rpartition(':')[2]} state with fields "
                f"{fields}, which do not fit {getattr(state_type, '__name__', state_type)} "
                f"(fields {expected})")
        state = state_type(*(member(name) for name in fields))
    _check_numbers(state, path)
    return state, meta


def _check_numbers(state: NamedTuple, path: Path) -> None:
    """A solver never writes a NaN or infinite value, a negative iteration count or a
    negative average or total weight: a
    state holding one was altered or saved from a run gone wrong, and resuming it
    would spread NaN policies or weights (t**gamma of t < 0) silently."""
    for name, value in zip(state._fields, state):
        array = np.asarray(value)
        if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
            bad = int(array.size - np.isfinite(array).sum())
            raise CheckpointError(f"{path}: {name} holds {bad} NaN or infinite value"
                                  f"{'s' * (bad > 1)}; a solver writes none (a damaged "
                                  "file, or a run that diverged)")
        if name == "iteration" and np.issubdtype(array.dtype, np.integer) and (array < 0).any():
            raise CheckpointError(f"{path}: iteration is {array.min()}; an iteration count "
                                  "cannot be negative")
        # Sums of reach-weighted probabilities and of weights: a negative one made the
        # run go on to its end and then fail in the policy table with a traceback.
        if name in ("average", "total_weight") and (array < 0).any():
            raise CheckpointError(f"{path}: {name} holds a negative value ({array.min():g}); "
                                  "a solver's averages and weights are sums of non-negative "
                                  "terms (a damaged file)")
        # Each iteration's averaging weight is t**gamma * weight_scale: at 0 the average
        # would stop changing while the run seemed to go on.
        if name == "weight_scale" and (array <= 0).any():
            raise CheckpointError(f"{path}: weight_scale is {array.min():g}; a solver keeps it "
                                  "a positive power of two (a damaged file)")


__all__ = ["CheckpointError", "load_checkpoint", "save_checkpoint"]
