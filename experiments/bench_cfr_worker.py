"""What bench_cfr runs in a child process: the machine probe (`--_probe`) or one
game's benchmark (`--_worker KEY`), each in a fresh process so that a game's device
memory and peaks are its own and the parent never claims the accelerator."""

from __future__ import annotations

import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_cfr_games import OPENSPIEL, Game, game_entry, load_game, schedule
from bench_cfr_memory import device_memory, host_available_bytes
from bench_cfr_solvers import (bench_jaxcfr, bench_jaxsolve, bench_openspiel_cpp,
                               load_average, timed)
from bench_cfr_tables import ratio_or_none, solver_label

# The command line every child runs: the entry point, which hands `--_probe` and
# `--_worker` to worker_main.
SCRIPT = Path(__file__).resolve().with_name("bench_cfr.py")


# ------------------------------------------------------------------ checks
# The solvers' exploitabilities at a shared checkpoint "differ" when their spread,
# (max - min) / max, exceeds this: 0.1% shows in the 4 digits the table prints.
TRAJECTORY_RTOL = 1e-3


def trajectory_spread(out: dict) -> dict:
    """{checkpoint: (max - min) / max} of the exploitabilities of the solvers that
    reached it, where at least two did."""
    spread = {}
    for c in map(str, out["checkpoints"]):
        values = [r["exploitability"][c] for r in
                  (out.get("openspiel_cpp"), out.get("jaxcfr"), out.get("jaxsolve"))
                  if r and r["exploitability"].get(c) is not None]
        if len(values) >= 2 and max(values) > 0:
            spread[c] = (max(values) - min(values)) / max(values)
    return spread


# ------------------------------------------------------------------ one game
def _build_tree(game: Game, jaxsolve, pyspiel):
    """(tree, seconds to build it, source) from the first available source, without
    the history arrays (`GameTree.without_histories`): the benchmark only solves and
    evaluates, and a builder then never builds the per-leaf paths."""
    for source in game.sources:
        if source == "pyspiel" and pyspiel is not None:
            from jaxsolve.openspiel import from_pyspiel  # noqa: PLC0415

            name, params = game.pyspiel
            tree, seconds = timed(lambda: from_pyspiel(load_game(pyspiel, name, params))
                                  .without_histories())
            return tree, seconds, "pyspiel"
        if source == "builder":
            name, args, kwargs = game.builder
            build = getattr(jaxsolve.builders, name)
            tree, seconds = timed(lambda: build(*args, **kwargs, max_bytes=2**62,
                                                histories=False))
            return tree, seconds, "builder"
        if source == "native":
            from jaxsolve import games  # noqa: PLC0415

            tree, seconds = timed(lambda: jaxsolve.compile_game(games.load(game.native))
                                  .without_histories())
            return tree, seconds, "native"
    raise RuntimeError(f"{game.label}: no tree source available among {game.sources}")


def bench_game(key, args, jax, jaxsolve, pyspiel):
    """One game's result: its tree built, jaxsolve timed on it, then OpenSpiel's
    solvers where they run (see the skip reasons below), the ratios and notes."""
    game = game_entry(key)
    checkpoints, os_block, js_block, repeats, eval_repeats = schedule(key, args.quick)
    if key == "liars" and args.liars_iters:
        checkpoints = tuple(sorted({min(c, args.liars_iters) for c in checkpoints}))
    out = {"label": game.label, "checkpoints": list(checkpoints), "notes": [],
           "quick": bool(args.quick), "solver": args.solver}

    if key.startswith(OPENSPIEL) and pyspiel is not None:
        try:
            utility = load_game(pyspiel, *game.pyspiel).get_type().utility
        except pyspiel.SpielError as e:
            return {**out, "error": f"OpenSpiel cannot load {game.label!r}: "
                                    f"{str(e).split(' Available games are:')[0]}"}
        if utility not in (pyspiel.GameType.Utility.ZERO_SUM,
                           pyspiel.GameType.Utility.CONSTANT_SUM):
            return {**out, "error": f"{game.label} is {str(utility.name).lower()}-utility; "
                                    "exploitability, and so this benchmark, needs a zero- or "
                                    "constant-sum game"}
    print(f"[{key}] building the tree ...", flush=True)
    tree, setup_s, source = _build_tree(game, jaxsolve, pyspiel)
    histories = tree.sizes.num_nodes
    out.update(tree_source=source, histories=histories, build_s=setup_s)

    skip = None
    if pyspiel is None:
        skip = "open_spiel is not installed"
    elif game.jaxsolve_only:
        skip = game.jaxsolve_only
    elif args.jaxsolve_only:
        skip = "--jaxsolve-only"
    elif histories > args.competitor_max_histories:
        skip = (f"{histories:,} histories > --competitor-max-histories "
                f"{args.competitor_max_histories:,.0f}: OpenSpiel would take too long")
    elif args.solver != "cfr+":
        skip = (f"OpenSpiel's solvers here run CFR+; --solver {args.solver} is timed alone")
    # The independent check of our exploitability has its own limit (default: the
    # competitors' one), so a game too big for OpenSpiel's solvers can still be checked.
    check_max = (args.competitor_max_histories if args.check_max_histories is None
                 else args.check_max_histories)
    unchecked = None
    if pyspiel is None:
        unchecked = "open_spiel is not installed"
    elif source == "native":
        unchecked = "the tree comes from jaxsolve.games, not from OpenSpiel"
    elif histories > check_max:
        unchecked = (f"{histories:,} histories > --check-max-histories {check_max:,.0f}")
    os_game = None
    if pyspiel is not None and source != "native" and (skip is None or unchecked is None):
        from jaxsolve.openspiel import load_pyspiel  # noqa: PLC0415

        name, params = game.pyspiel
        os_game = load_pyspiel(load_game(pyspiel, name, params))  # turn-based if simultaneous
    out["game"] = str(os_game) if os_game is not None else tree.names.game
    out["jaxsolve_unchecked"] = unchecked  # why (printed by print_table), None if checked

    print(f"[{key}] jaxsolve {solver_label(args.solver)} on {histories:,} histories "
          f"({source}) ...", flush=True)
    out["jaxsolve"] = bench_jaxsolve(jax, jaxsolve, pyspiel,
                                     os_game if unchecked is None else None, tree, setup_s,
                                     checkpoints, js_block, repeats, eval_repeats,
                                     args.solver)
    del tree
    gc.collect()

    out["openspiel_cpp"] = out["jaxcfr"] = None
    if skip is not None:
        out["notes"].append(f"OpenSpiel solvers skipped: {skip}")
    else:
        print(f"[{key}] OpenSpiel C++ CFRPlusSolver ...", flush=True)
        out["openspiel_cpp"] = bench_openspiel_cpp(pyspiel, os_game, checkpoints, os_block,
                                                   eval_repeats, args.cap)
        if args.skip_jaxcfr or (key == "liars" and args.skip_jaxcfr_liars):
            out["notes"].append("OpenSpiel JaxCFR skipped (flag)")
        else:
            print(f"[{key}] OpenSpiel JaxCFR ...", flush=True)
            out["jaxcfr"] = bench_jaxcfr(jax, pyspiel, os_game, checkpoints, os_block,
                                         args.cap)

    ours, cpp = out["jaxsolve"], out["openspiel_cpp"] or {}
    # The baseline is the faster of the two ways of handing pyspiel the C++ policy.
    cpp_evals = [cpp[k] for k in ("eval_ms_tabular_policy", "eval_ms_average_policy")
                 if cpp.get(k) is not None]
    out["ratios"] = {
        "cpp_ms_per_iter_over_jaxsolve": ratio_or_none(cpp.get("ms_per_iter"), ours["ms_per_iter"]),
        "jaxcfr_ms_per_iter_over_jaxsolve": ratio_or_none(
            (out["jaxcfr"] or {}).get("ms_per_iter"), ours["ms_per_iter"]),
        "pyspiel_exploitability_over_jaxsolve": ratio_or_none(min(cpp_evals) if cpp_evals else None,
                                                       ours["eval_ms"]),
        "pyspiel_exploitability_average_policy_over_jaxsolve": ratio_or_none(
            cpp.get("eval_ms_average_policy"), ours["eval_ms"]),
        "pyspiel_exploitability_tabular_policy_over_jaxsolve": ratio_or_none(
            cpp.get("eval_ms_tabular_policy"), ours["eval_ms"]),
        # Both sides without setup: pyspiel's best-response trees built once.
        "pyspiel_reused_best_responses_over_jaxsolve": ratio_or_none(
            cpp.get("eval_ms_reused_best_responses"), ours["eval_ms"]),
    }
    for solver in ("openspiel_cpp", "jaxcfr"):
        if (out[solver] or {}).get("capped"):
            out["notes"].append(f"{solver} stopped by --cap {args.cap:g} s after "
                                f"{out[solver]['iterations_done']} iterations")
    if key == "liars" and checkpoints[-1] < 1000 and not args.quick:
        out["notes"].append(f"liar's dice run to {checkpoints[-1]} iterations (--liars-iters)")
    out["exploitability_spread"] = trajectory_spread(out)
    differ = {c: v for c, v in out["exploitability_spread"].items() if v > TRAJECTORY_RTOL}
    if differ:
        dtypes = {r["dtype"] for r in (out["openspiel_cpp"], out["jaxcfr"], ours) if r}
        worst = max(differ, key=differ.get)
        out["notes"].append(
            f"the solvers' exploitabilities differ by up to {100 * differ[worst]:.1f}% "
            f"(at @{worst}; > {100 * TRAJECTORY_RTOL:g}% at "
            f"{', '.join('@' + c for c in differ)}): the trajectories differ (regret ties "
            f"+ round-off{', ' + ' against '.join(sorted(dtypes)) if len(dtypes) > 1 else ''})"
            "; compare the timings, not these values")
    return out


# ------------------------------------------------------------------ processes
def probe_machine(jax, pyspiel=None):
    """What the run is on (the `--_probe` child's answer): platform, CPU, JAX backend
    and device, versions, memory limits, load average and the git commit."""
    from machine import cpu_model, git_state, version  # noqa: PLC0415  (experiments/machine.py)

    device = jax.devices()[0]
    cpu = cpu_model()
    memory = device_memory(jax)
    return {"platform": platform.platform(), "python": platform.python_version(),
            "cpu": cpu, "cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else None,
            "jax_backend": jax.default_backend(), "device_kind": device.device_kind,
            "device_count": jax.device_count(), "jax": jax.__version__,
            "jaxlib": version("jaxlib"), "open_spiel": version("open_spiel"),
            "open_spiel_importable": pyspiel is not None,
            "numpy": version("numpy"), "x64": jax.numpy.zeros(()).dtype == "float64",
            "device_bytes_limit": None if memory is None else memory["bytes_limit"],
            "host_available_bytes": host_available_bytes(),
            "load_average_at_start": load_average(), "git": git_state()}


def _import_pyspiel():
    try:
        import pyspiel  # noqa: PLC0415
    except ImportError:
        return None
    return pyspiel


def worker_main(args) -> int:
    """In a child process: `--_probe` (machine facts) or `--_worker KEY` (one game)."""
    import jax  # noqa: PLC0415

    if args.x64:
        jax.config.update("jax_enable_x64", True)  # before any array is made
    pyspiel = _import_pyspiel()
    if args._probe:
        result = probe_machine(jax, pyspiel)
    else:
        import jaxsolve  # noqa: PLC0415

        started = time.perf_counter()
        result = bench_game(args._worker, args, jax, jaxsolve, pyspiel)
        result["worker_s"] = time.perf_counter() - started
        result["device_kind"] = jax.devices()[0].device_kind
        result["jax"] = jax.__version__
        result["jax_backend"] = jax.default_backend()
    Path(args._worker_out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def run_child(argv, extra) -> tuple[dict | None, int]:
    """Runs bench_cfr.py in a fresh process (so its device memory and peaks are its
    own, and the parent never claims the accelerator). Returns (JSON, exit code)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.json"
        cmd = [sys.executable, str(SCRIPT), *argv, *extra,
               "--_worker-out", str(path)]
        rc = subprocess.run(cmd, check=False).returncode
        return (json.loads(path.read_text()) if rc == 0 and path.exists() else None), rc
