"""`import jaxsolve` leaves the C allocator as it is; `jaxsolve.keep_freed_memory()`
(which the command line calls) keeps large freed blocks in the heap, and
JAXSOLVE_SYSTEM_MALLOC=1 makes that call a no-op.

The effect is read from glibc itself: `mallinfo2().hblkhd` is the number of bytes
the allocator holds in `mmap`-ed blocks. A 100 MiB NumPy array is one such block
under glibc's defaults, and is given back to the system when freed; once the
settings apply it comes from the heap and no block is mapped.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from jaxsolve import allocator

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

MMAPPED_AFTER_BIG_ARRAY = """
import ctypes, sys
import numpy as np
import jaxsolve

if sys.argv[1] == "api":
    jaxsolve.keep_freed_memory()
elif sys.argv[1] == "cli":  # the jaxsolve program, as its console script starts it
    from jaxsolve.cli import program
    program(["--version"])
elif sys.argv[1] == "cli main":  # the command line's main, called from a program
    from jaxsolve.cli import main
    main(["--version"])

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks "
                "keepcost".split()]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
before = mallinfo2().hblkhd
big = np.ones(100 * 2**20 // 8)
held = mallinfo2().hblkhd - before
del big
print(held, mallinfo2().hblkhd - before)
"""


def _mmapped(how: str, opt_out: str | None = None) -> tuple[int, int]:
    """Bytes in mmap-ed blocks while a 100 MiB array lives, and after it is freed."""
    env = {k: v for k, v in os.environ.items() if k != allocator.OPT_OUT}
    if opt_out is not None:
        env[allocator.OPT_OUT] = opt_out
    out = subprocess.run([sys.executable, "-c", MMAPPED_AFTER_BIG_ARRAY, how], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    held, after = out.stdout.split()[-2:]
    return int(held), int(after)


@pytest.mark.skipif(not GLIBC, reason="the settings exist only in glibc's malloc")
@pytest.mark.parametrize("how", ["import", "cli main"])
def test_import_leaves_the_allocator_alone(how):
    held, after = _mmapped(how)
    assert held >= 100 * 2**20  # served by mmap, as glibc's defaults do
    assert after < 2**20        # and returned to the system at the free


@pytest.mark.skipif(not GLIBC, reason="the settings exist only in glibc's malloc")
@pytest.mark.parametrize("how", ["api", "cli"])
def test_opting_in_serves_large_blocks_from_the_heap(how):
    held, _ = _mmapped(how)
    assert held < 2**20


@pytest.mark.skipif(not GLIBC, reason="the settings exist only in glibc's malloc")
def test_the_variable_undoes_the_opt_in():
    held, _ = _mmapped("api", opt_out="1")
    assert held >= 100 * 2**20


@pytest.mark.parametrize("value, expected", [
    ("1", True), ("true", True), ("YES", True), (" 1 ", True),
    ("", False), ("0", False), ("no", False), ("false", False)])
def test_opted_out_reads_the_variable(value, expected):
    assert allocator.opted_out({allocator.OPT_OUT: value}) is expected
    assert allocator.opted_out({}) is False


def test_opting_out_applies_nothing(monkeypatch):
    monkeypatch.setenv(allocator.OPT_OUT, "1")
    assert allocator.keep_freed_memory() is False
