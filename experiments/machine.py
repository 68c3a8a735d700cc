"""What a benchmark ran on: CPU model, cores, load, package versions, JAX backend.

Shared by the experiment scripts (importable because Python puts a script's own
folder on sys.path)."""

from __future__ import annotations

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


def machine_info() -> dict:
    """CPU model, cores, load average (other processes skew every timing), versions."""
    import jax  # noqa: PLC0415

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count()
    return {
        "cpu": cpu_model(), "cores": cores, "load_average": list(os.getloadavg()),
        "platform": platform.platform(), "python": platform.python_version(),
        "jax": jax.__version__, "jaxlib": version("jaxlib"), "open_spiel": version("open_spiel"),
        "numpy": version("numpy"), "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()], "x64": bool(jax.config.jax_enable_x64),
    }


def figure_beside(value, threshold, decimals: int = 3) -> str:
    """`value` in fixed point with `decimals` decimals, or as many more as it takes for
    the printed number to compare with `threshold` as `value` does (below, equal or
    above), so that a figure printed beside a target's verdict never reads as the
    opposite: 9.9996 against 10 prints "9.9996", not "10.000"; 0.996 against 1 with
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
