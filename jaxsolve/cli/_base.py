"""What every command of the command line shares: `CLIError` (bad input, reported as
one line `jaxsolve: error: ...` with exit code 2), the exit codes, `number_arg`, the
argparse type of every numeric option, with the counts and tolerances several
commands take, how a device is named in the output (`device_text`,
`devices_text`), and `silence_native`, which keeps native libraries' own printing out
of it."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections import Counter
from typing import Iterator

import jax

from jaxsolve.errors import JaxsolveError

# The exit codes: done, bad input, Ctrl-C (as a shell reports SIGINT), and processes
# that could not run as one (`jaxsolve.errors.DistributedError`).
EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_FAILED = 0, 2, 130, 1


class CLIError(JaxsolveError):
    """Bad input on the command line: reported as one line `jaxsolve: error: ...` with
    exit code 2. A JaxsolveError like every error jaxsolve raises on bad input."""


def _whole(text: str) -> int:
    """An integer written as one (100000, 100_000) or in a float's notation that is
    exactly whole (1e5, 2.0e3), as a count is often typed; ValueError otherwise."""
    try:
        return int(text)
    except ValueError:
        value = float(text)  # ValueError for words
        if not value.is_integer():  # 1.5, inf, nan
            raise
        return int(value)


def number_arg(kind, describe: str, ok):
    """An argparse type: `kind(text)` (int or float) for which `ok(value)` holds, else
    a one-line error `{describe}, got {text}`."""
    def parse(text: str):
        try:
            value = _whole(text) if kind is int else kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{describe}, got {text}")
        return value
    return parse


# Counts reach jitted code as int32.
positive_int = number_arg(int, "must be an integer from 1 to 2^31 - 1",
                          lambda v: 1 <= v <= 2 ** 31 - 1)
nonnegative_real = number_arg(float, "must be a finite number >= 0",
                              lambda v: 0.0 <= v < math.inf)


def device_text(device) -> str:
    """A JAX device as the output names it: its name and kind, e.g. "cuda:0 (NVIDIA
    H100 80GB HBM3)", "cpu:0 (cpu)"."""
    return f"{device} ({getattr(device, 'device_kind', None) or device.platform})"


def devices_text(shown: int = 4) -> str:
    """JAX's default backend and its devices, e.g. "backend cpu, 1 device: cpu:0 (cpu)";
    the reason in its place where the backend cannot start."""
    try:
        backend, devices = jax.default_backend(), jax.devices()
    except Exception as e:  # noqa: BLE001 - a backend that fails to start, reported
        return f"no backend ({type(e).__name__}: {' '.join(str(e).split())})"
    names = ", ".join(str(d) for d in devices[:shown]) + (", ..." * (len(devices) > shown))
    kinds = ", ".join(kind if n == 1 else f"{n} x {kind}"
                      for kind, n in Counter(d.device_kind for d in devices).items())
    return (f"backend {backend}, {len(devices)} device{'s' * (len(devices) != 1)}: "
            f"{names} ({kinds})")


@contextlib.contextmanager
def silence_native(fd: int) -> Iterator[None]:
    """Points file descriptor `fd` (1 or 2) at /dev/null inside, to keep what native
    libraries print there out of the command's output: OpenSpiel's C++ errors beside
    the one-line report, gloo's note when JAX's processes first connect (Python's
    sys.stdout and sys.stderr are untouched, and flushed first)."""
    try:
        (sys.stdout if fd == 1 else sys.stderr).flush()
        saved = os.dup(fd)
    except (OSError, ValueError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
