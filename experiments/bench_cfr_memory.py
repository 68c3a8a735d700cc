"""bench_cfr's memory figures: device statistics where the backend keeps them, the
host's peak and available memory, and the estimate, made before anything runs, of
what each built game needs, so that a game too big for the machine is refused up
front rather than failing (or swapping) halfway through a run."""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

from bench_cfr_games import Game, game_entry


def device_memory(jax) -> dict | None:
    """bytes_in_use / peak_bytes_in_use / bytes_limit of device 0; None where the
    backend keeps no statistics (CPU)."""
    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:  # noqa: BLE001 - backends without the call
        return None
    if not stats:
        return None
    return {k: stats.get(k) for k in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")}


def peak_rss() -> int:
    """The host's peak resident memory of this process, in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def host_available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def fmt_bytes(n) -> str:
    """Bytes in the largest binary unit below them: "3.6 MiB"; None prints "-"."""
    if n is None:
        return "-"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.{2 if unit == 'GiB' else 1}f} {unit}"
    return f"{int(n)} B"


def _spec(game: Game, max_bytes: int):
    from jaxsolve import builders  # noqa: PLC0415

    name, args, kwargs = game.builder
    if name == "battleship":  # sizes from a dry run, attempted only under max_bytes
        return builders.battleship_spec(*args, **kwargs, max_bytes=max_bytes)
    return getattr(builders, f"{name}_spec")(*args, **kwargs)


def estimate(game: Game, float_bytes: int, max_bytes: int) -> dict | None:
    """Sizes and memory estimates of a built game (None for the small compiled ones).

    build: the builder's own `estimate_bytes` (tree arrays, names, widest level's
    work arrays). device: a rough upper bound for the solver run: the tree without
    its history arrays, the solver state and policies ([I, A] arrays), and one
    iteration's per-leaf work arrays (leaf weights, gathered reach, sums).
    """
    if game.sources[0] != "builder":
        return None
    import numpy as np  # noqa: PLC0415

    from jaxsolve.builders import estimate_bytes  # noqa: PLC0415

    spec = _spec(game, max_bytes)
    dtype = np.float64 if float_bytes == 8 else np.float32
    build = estimate_bytes(spec, dtype)
    P, Z, I, A = (spec.num_players, spec.num_terminals, spec.num_infosets,
                  spec.num_actions)
    L, Lc = max(spec.max_sequence_length, 1), max(spec.max_chance_length, 1)
    # On the device: the tree without its history arrays (each leaf's last own
    # sequences, chance path and payoffs; the infosets' arrays), the solver state and
    # policies ([I, A] each), and the sequence-form kernels' per-leaf work arrays.
    tree = Z * (4 * (P + Lc) + P * float_bytes) + I * (4 * (3 + L) + A)
    device = tree + 8 * I * A * float_bytes + 6 * Z * float_bytes
    return {"histories": spec.num_nodes, "terminals": Z, "infosets_bound": I,
            "build_bytes": build, "device_bytes": device}


def memory_check(keys, args, probe) -> dict:
    """Estimates for every built game; exits with a message if one does not fit."""
    host = host_available_bytes()
    accel = probe["jax_backend"] != "cpu" and probe.get("device_bytes_limit")
    device_limit = probe["device_bytes_limit"] if accel else host
    if args.max_memory_gib is not None:
        device_limit = int(args.max_memory_gib * 2**30)
    float_bytes = 8 if args.x64 else 4
    estimates, refused = {}, []
    where = f"{probe['device_kind']} ({probe['jax_backend']})"
    for key in keys:
        try:
            est = estimate(game_entry(key), float_bytes, 2**62 if args.no_memory_check
                           else (host or 2**62))
        except Exception as e:  # noqa: BLE001 - battleship's bound check raises GameError
            refused.append(f"{key}: {e}")
            continue
        if est is None:
            continue
        estimates[key] = est
        # On CPU the device is the host: the build and the run share its memory.
        need = est["device_bytes"] + (0 if accel else est["build_bytes"])
        if device_limit is not None and need > device_limit:
            refused.append(
                f"{key}: {est['histories']:,} histories; the solver run needs about "
                f"{fmt_bytes(need)}, more than the {fmt_bytes(device_limit)} of {where}"
                + (" (--max-memory-gib)" if args.max_memory_gib is not None else ""))
        elif accel and host is not None and est["build_bytes"] > host:
            refused.append(f"{key}: building its tree needs about "
                           f"{fmt_bytes(est['build_bytes'])} of host memory, more than "
                           f"the {fmt_bytes(host)} available")
    if refused and not args.no_memory_check:
        print("bench_cfr: refusing to start; estimated memory exceeds what is available:",
              file=sys.stderr)
        for line in refused:
            print(f"  {line}", file=sys.stderr)
        print("Drop these games from --games (or pass --no-memory-check to try anyway).",
              file=sys.stderr)
        raise SystemExit(2)
    return estimates
