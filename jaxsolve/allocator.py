"""The C allocator told to keep freed memory, so XLA:CPU's buffers are not faulted in
anew on every call.

XLA:CPU allocates each compiled call's scratch space (one block, tens of MB for a tree
of millions of leaves) and its outputs with the C library's `malloc`, and frees them
when the call returns. glibc serves blocks that large with a fresh `mmap` and gives
them back with `munmap`, so every call touches brand-new pages: the kernel faults
each 4 KiB page in and zeroes it, about 1 µs a page, before the program reads a byte.
On a Battleship tree of 1.9M leaves an exploitability evaluation needs 65 MB of
scratch, 16,000 pages, and faulting them in costs more than the evaluation's own
arithmetic (the performance page has the figures).

`keep_freed_memory` turns that off for the process with three `mallopt` settings:
no block is served by `mmap` (`M_MMAP_MAX` 0), free memory at the top of the heap is
kept up to 2 GiB (`M_TRIM_THRESHOLD`), and every thread allocates from the one main
heap (`M_ARENA_MAX` 1: a thread's own arena holds no block over 64 MiB and would
`mmap` it anyway). Large blocks then come from the heap, and the next call reuses
what the last one freed. The cost is that the process's resident memory no longer
shrinks after a large free; it stays near its peak, as it does under the caching
allocators of other array libraries.

The settings hold for the whole process, so importing jaxsolve applies none of them:
the host program may be a data loader, a server or another array library, whose
allocations would change too. Programs opt in: the `jaxsolve` command line and the
benchmark scripts under `experiments/` call `keep_freed_memory` first thing, and a
library user calls `jaxsolve.keep_freed_memory()` at the start of a script, before
the first JAX computation (a thread that has already allocated keeps its own arena).
The environment variable `JAXSOLVE_SYSTEM_MALLOC=1` makes the call a no-op, so a
program's opt-in can be undone from outside. Elsewhere than Linux with glibc it does
nothing.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Mapping

OPT_OUT = "JAXSOLVE_SYSTEM_MALLOC"
"""Environment variable: set to 1 (true, yes) to leave the C allocator's settings alone."""

# glibc's <malloc.h> parameter numbers.
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
# mallopt takes an int: its largest value, 2 GiB, is the most free memory the heap's
# top keeps before giving the rest back.
_KEEP_AT_TOP = 2**31 - 1

_applied = False


def opted_out(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `JAXSOLVE_SYSTEM_MALLOC` asks to leave the C allocator alone.

    Args:
      environ: the environment to read; `os.environ` if None.

    Returns:
      True when the variable is 1, true or yes (any case).
    """
    value = (os.environ if environ is None else environ).get(OPT_OUT, "")
    return value.strip().lower() in ("1", "true", "yes")


def keep_freed_memory() -> bool:
    """Tells glibc's malloc to serve large blocks from the heap and keep what is freed.

    What it gains: a compiled call whose scratch space is several MB no longer faults
    it in page by page each time (an exploitability evaluation of a tree with
    millions of leaves takes less than half as long; the performance page has the
    figures). What it costs: the process's resident memory stays near its peak after
    large frees, and every thread of the process allocates from one heap. It changes
    the whole process, so call it from a program, first thing: importing jaxsolve
    never does.

    Safe to call more than once. Memory already given out is not affected.

    Returns:
      True if the settings were applied; False where the C library is not glibc, where
      it refused them, or where `JAXSOLVE_SYSTEM_MALLOC` opts out.
    """
    if opted_out() or platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    settings = ((_M_ARENA_MAX, 1), (_M_TRIM_THRESHOLD, _KEEP_AT_TOP), (_M_MMAP_MAX, 0))
    global _applied
    _applied = all([bool(mallopt(param, value)) for param, value in settings]) or _applied
    return _applied


def applied() -> bool:
    """Whether `keep_freed_memory` has applied its settings in this process.

    Returns:
      True once a call has succeeded (benchmarks record it beside their figures).
    """
    return _applied
