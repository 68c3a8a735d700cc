"""What a benchmark ran on: CPU model, cores, load, package versions, JAX backend;
and what the benchmarks share: option parsing, figures printed beside the number they
are compared with, the tolerance of the pyspiel check, and where a report is written
(results/local/ unless --publish).

Shared by the experiment scripts (importable because Python puts a script's own
folder on sys.path). Each script, run as a program, first opts its process in to
`jaxsolve.keep_freed_memory`, as the `jaxsolve` command does, so that it measures
what the command line runs (`JAXSOLVE_SYSTEM_MALLOC=1` keeps the C library's
defaults); a test that calls a script's `main` leaves its own process alone."""

from __future__ import annotations

import math
import os
import platform
from importlib import metadata
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_state() -> dict | None:
    """The checkout's commit and whether it has uncommitted changes (None outside git),
    so that a result can be traced to the code that produced it."""
    import subprocess  # noqa: PLC0415

    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:  # Popen, not run: tests stand in for subprocess.run
        with subprocess.Popen(["git", *args], cwd=root, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) as proc:
            out = proc.communicate(timeout=10)[0]
        if proc.returncode:
            raise subprocess.SubprocessError(f"git {args[0]} exited {proc.returncode}")
        return out

    try:
        commit = git("rev-parse", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def positive(kind=float):
    """An argparse type: a number of `kind` above 0, else a one-line error (a negative
    time budget or cap would otherwise run and report meaningless figures)."""
    import argparse  # noqa: PLC0415

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            what = "an integer" if kind is int else "a finite number"
            raise argparse.ArgumentTypeError(f"must be {what} above 0, got {text}")
        return value
    return parse


def cores() -> int:
    """The cores this process may run on (its affinity; all of them off Linux)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count()


def machine_info() -> dict:
    """CPU model, cores, load average (other processes skew every timing), versions,
    and whether jaxsolve keeps the C allocator's freed memory (jaxsolve.allocator)."""
    import jax  # noqa: PLC0415

    from jaxsolve import allocator  # noqa: PLC0415

    return {
        "cpu": cpu_model(), "cores": cores(), "load_average": list(os.getloadavg()),
        "platform": platform.platform(), "python": platform.python_version(),
        "jax": jax.__version__, "jaxlib": version("jaxlib"), "open_spiel": version("open_spiel"),
        "numpy": version("numpy"), "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()], "x64": bool(jax.config.jax_enable_x64),
        "git": git_state(),
        "malloc": ("freed memory kept (jaxsolve.allocator)" if allocator.applied()
                   else "the C library's defaults"),
    }


def figure_beside(value, threshold, decimals: int = 3) -> str:
    """`value` in fixed point with `decimals` decimals, or as many more as it takes for
    the printed number to compare with `threshold` as `value` does (below, equal or
    above), so that a ratio printed beside 1 (or a bound) never reads as the other
    side of it: 9.9996 against 10 prints "9.9996", not "10.000"; 0.996 against 1 with
    2 decimals "0.996", not "1.00". None prints "-"."""
    if value is None:
        return "-"
    side = (value > threshold) - (value < threshold)
    for d in range(decimals, 18):
        text = f"{value:.{d}f}"
        shown = float(text)
        if (shown > threshold) - (shown < threshold) == side:
            return text
    return repr(value)


# Our exploitability against pyspiel.exploitability of the same policy is flagged
# MISMATCH above rtol * |pyspiel| + atol, atol = CHECK_ULPS * eps(dtype) * max |payoff|.
# Why not a relative tolerance alone: an exploitability of 1e-4 is a difference of
# best-response values of the size of the payoffs, so its round-off is absolute, of
# order eps times the payoffs, not eps times the exploitability (bench_cfr's float32
# Leduc run: 2.49863e-4 against 2.49847e-4, 1.6e-8 absolute but 6e-5 relative). 4 eps
# times the largest payoff (Leduc 13: 6.2e-6 in float32, 1.2e-14 in float64) leaves
# room for summation order yet is far below what a wrong policy mapping or evaluator
# gives (errors of the order of the exploitability itself). The relative part (1e-5
# in float32, 1e-9 in float64) covers exploitabilities of order 1.
CHECK_RTOL = {"float32": 1e-5, "float64": 1e-9}
CHECK_ULPS = 4


def check_tolerance(dtype: str, payoff_scale: float) -> tuple[float, float]:
    """(rtol, atol) of the pyspiel check of our exploitability in `dtype` ("float32" or
    "float64"; anything else gets float32's, the looser) for payoffs up to
    `payoff_scale` in magnitude."""
    dtype = dtype if dtype in CHECK_RTOL else "float32"
    eps = {"float32": 2.0**-23, "float64": 2.0**-52}[dtype]
    return CHECK_RTOL[dtype], CHECK_ULPS * eps * payoff_scale


def compare_check(ours: float, reference: float, rtol: float, atol: float) -> dict:
    """Our exploitability against pyspiel's of the same policy: the gaps, the
    tolerance rtol * |reference| + atol, and whether the gap is above it."""
    diff = abs(ours - reference)
    tolerance = atol + rtol * abs(reference)
    return {"ours": ours, "pyspiel": reference, "abs_diff": diff,
            "rel_diff": diff / abs(reference) if reference else None,
            "tolerance": tolerance, "mismatch": diff > tolerance}


# ------------------------------------------------------------------ where reports go
# A plain run of a benchmark writes its report under results/local/ (ignored by git),
# so that trying a benchmark never replaces the tracked results/ files the README
# cites; `--publish` writes those, and an explicit `--out PATH` wins over both.
RESULTS = Path(__file__).resolve().parent.parent / "results"
LOCAL_RESULTS = RESULTS / "local"


def add_publish_option(parser) -> None:
    """The `--publish` option, worded alike in every benchmark."""
    parser.add_argument("--publish", action="store_true",
                        help="write the tracked report under results/ that the README cites "
                             "(default: the same name under results/local/, ignored by git, "
                             "so a trial run replaces nothing; --out wins over both; not "
                             "with --quick)")


def refuse_published_smoke_run(parser, args) -> None:
    """A --quick run's figures are a smoke test, not results to cite: refuse to
    publish them (parser.error exits with status 2, before anything runs)."""
    if args.publish and args.quick:
        parser.error("--publish does not combine with --quick: a smoke run's figures are "
                     "not results to publish")


def report_path(name: str, out=None, publish: bool = False, smoke_path=None) -> Path:
    """Where a benchmark writes its report `name` (e.g. "bench_cfr.json"): `out` where
    given; else `smoke_path` for a --quick run (each script keeps its own); else
    results/`name` with --publish; else results/local/`name`."""
    if out:
        return Path(out)
    if smoke_path is not None:
        return Path(smoke_path)
    return (RESULTS if publish else LOCAL_RESULTS) / name


def where_written(path: Path) -> str:
    """`path`, with a reminder where it is the unpublished copy of a tracked report."""
    path = Path(path)
    if path.parent.resolve() == LOCAL_RESULTS.resolve():
        return f"{path} (not published: --publish writes results/{path.name})"
    return str(path)
