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
