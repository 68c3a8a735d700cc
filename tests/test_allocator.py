"""`import jaxsolve` keeps large freed blocks in the heap (jaxsolve.allocator), and
JAXSOLVE_SYSTEM_MALLOC=1 leaves the C allocator alone.

The effect is read from glibc itself: `mallinfo2().hblkhd` is the number of bytes
the allocator holds in `mmap`-ed blocks. A 100 MiB NumPy array allocated after the
import is one such block under glibc's defaults and none once the settings apply.
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
import ctypes
import numpy as np
import jaxsolve

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks "
                "keepcost".split()]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
before = mallinfo2().hblkhd
big = np.ones(100 * 2**20 // 8)
print(mallinfo2().hblkhd - before)
"""


def _mmapped_growth(opt_out: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != allocator.OPT_OUT}
    if opt_out is not None:
        env[allocator.OPT_OUT] = opt_out
    out = subprocess.run([sys.executable, "-c", MMAPPED_AFTER_BIG_ARRAY], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(not GLIBC, reason="the settings exist only in glibc's malloc")
def test_import_serves_large_blocks_from_the_heap():
    assert _mmapped_growth(None) < 2**20


@pytest.mark.skipif(not GLIBC, reason="the settings exist only in glibc's malloc")
def test_opting_out_leaves_glibc_defaults():
    assert _mmapped_growth("1") >= 100 * 2**20


@pytest.mark.parametrize("value, expected", [
    ("1", True), ("true", True), ("YES", True), (" 1 ", True),
    ("", False), ("0", False), ("no", False), ("false", False)])
def test_opted_out_reads_the_variable(value, expected):
    assert allocator.opted_out({allocator.OPT_OUT: value}) is expected
    assert allocator.opted_out({}) is False


def test_opting_out_applies_nothing(monkeypatch):
    monkeypatch.setenv(allocator.OPT_OUT, "1")
    assert allocator.keep_freed_memory() is False
