"""CFR+ side by side: OpenSpiel's C++ CFRPlusSolver, OpenSpiel's JaxCFR and jaxsolve.

    python experiments/bench_cfr.py                      # full run, ~6 min on 2 idle cores
    python experiments/bench_cfr.py --quick              # smoke run
    python experiments/bench_cfr.py --games kuhn,leduc --x64

All three solvers run in one process on the same games (Kuhn poker, Leduc poker,
liar's dice with 1 die of 6 sides) and the same update scheme (alternating updates,
regrets floored at zero, linear averaging). For each solver it measures

* setup s: building the solver's tables (OpenSpiel: the constructor; jaxsolve:
  `from_pyspiel`, i.e. `compile_game`);
* compile s: the first call of the jitted iteration (JaxCFR: its first `step()`;
  jaxsolve: the first call of `jax.jit(jaxsolve.run, static_argnums=(0,))`, one
  iteration with the count traced). Both include that one iteration;
* ms/iter: the median over timed blocks of iterations after compilation
  (`time.perf_counter`, `jax.block_until_ready` for the JAX solvers). OpenSpiel's
  solvers are timed block by block on their way to the last checkpoint; jaxsolve runs
  a block of iterations in one compiled call, several times, from the initial state;
* exploitability after 100 and 1000 iterations (OpenSpiel's definition, NashConv / 2):
  `pyspiel.exploitability` on OpenSpiel's average policies, `jaxsolve.exploitability`
  on ours (and, as a check nobody here wrote, `pyspiel.exploitability` on ours too);
* evaluation time: `pyspiel.exploitability` (C++) on the C++ solver's average policy
  against jitted `jaxsolve.exploitability`, medians after compilation.

OpenSpiel's C++ solver computes in float64; JaxCFR and jaxsolve use JAX's default
float32 unless `--x64` is given. Results go to `results/bench_cfr.json` (written after
every game, so a cut-short run keeps what it measured).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

GAMES = {
    "kuhn": ("kuhn_poker", {}),
    "leduc": ("leduc_poker", {}),
    "liars": ("liars_dice", {"numdice": 1, "dice_sides": 6}),
}

# Iteration counts per game: (checkpoints, OpenSpiel block, jaxsolve block, repeats,
# evaluation repeats). Liar's dice is ~100x Leduc, so its blocks are smaller.
FULL = {
    "kuhn": ((100, 1000), 100, 1000, 7, 7),
    "leduc": ((100, 1000), 100, 1000, 7, 7),
    "liars": ((100, 1000), 100, 100, 5, 3),
}
QUICK = {
    "kuhn": ((10, 100), 10, 100, 3, 3),
    "leduc": ((10, 100), 10, 100, 3, 3),
    "liars": ((10, 30), 10, 10, 2, 1),
}


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        _, seconds = _timed(fn)
        times.append(seconds)
    return statistics.median(times)


def _drive(step_n, evaluate, checkpoints, block, done=0, cap_s=None):
    """Runs a stateful solver to each checkpoint in timed blocks of `block` iterations.

    Returns (seconds per iteration for each block, {checkpoint: evaluate()}, iterations
    done, whether the time cap stopped it). Evaluations are not timed.
    """
    per_iter, expl, spent, capped = [], {}, 0.0, False
    for target in checkpoints:
        while done < target:
            if cap_s is not None and spent > cap_s:
                capped = True
                break
            n = min(block, target - done)
            _, seconds = _timed(step_n, n)
            per_iter.append(seconds / n)
            spent += seconds
            done += n
        if capped:
            break
        expl[target] = evaluate()
    return per_iter, expl, done, capped


def _block_stats(per_iter):
    return {"ms_per_iter": 1e3 * statistics.median(per_iter) if per_iter else None,
            "ms_per_iter_min": 1e3 * min(per_iter) if per_iter else None,
            "timed_blocks": len(per_iter)}


def bench_openspiel_cpp(pyspiel, game, checkpoints, block, eval_repeats, cap_s):
    solver, setup = _timed(pyspiel.CFRPlusSolver, game)

    def step_n(n):
        for _ in range(n):
            solver.evaluate_and_update_policy()

    def evaluate():
        return float(pyspiel.exploitability(game, solver.average_policy()))

    per_iter, expl, done, capped = _drive(step_n, evaluate, checkpoints, block, cap_s=cap_s)
    result = {"setup_s": setup, "compile_s": None, **_block_stats(per_iter),
              "block_iters": block, "iterations_done": done, "capped": capped,
              "exploitability": {str(k): v for k, v in expl.items()}, "dtype": "float64"}
    # Evaluation time of pyspiel.exploitability on the C++ average policy: as the solver
    # hands it out (a CFRAveragePolicy view) and as a TabularPolicy copy (faster).
    average, tabular = solver.average_policy(), solver.tabular_average_policy()
    result["eval_ms_average_policy"] = 1e3 * _median_time(
        lambda: pyspiel.exploitability(game, average), eval_repeats)
    result["eval_ms_tabular_policy"] = 1e3 * _median_time(
        lambda: pyspiel.exploitability(game, tabular), eval_repeats)
    return result


def bench_jaxcfr(jax, pyspiel, game, checkpoints, block, cap_s):
    from open_spiel.python import policy as os_policy  # noqa: PLC0415
    from open_spiel.python.jax.cfr.jax_cfr import JaxCFR  # noqa: PLC0415

    solver, setup = _timed(JaxCFR, game)  # regret_matching_plus, alternating, linear

    def step_n(n):
        solver.multiple_steps(n)  # a Python loop over jitted per-player steps
        jax.block_until_ready((solver.regrets, solver.averages))

    _, compile_s = _timed(step_n, 1)

    def evaluate():
        tabular = os_policy.python_policy_to_pyspiel_policy(solver.average_policy())
        return float(pyspiel.exploitability(game, tabular))

    per_iter, expl, done, capped = _drive(step_n, evaluate, checkpoints, block, done=1,
                                          cap_s=cap_s)
    dtype = str(solver.regrets[0].dtype)
    del solver
    gc.collect()
    return {"setup_s": setup, "compile_s": compile_s, **_block_stats(per_iter),
            "block_iters": block, "iterations_done": done, "capped": capped,
            "exploitability": {str(k): v for k, v in expl.items()}, "dtype": dtype}


def bench_jaxsolve(jax, jaxsolve, pyspiel, game, checkpoints, block, repeats, eval_repeats):
    from jaxsolve.openspiel import from_pyspiel, to_tabular_policy  # noqa: PLC0415

    tree, setup = _timed(from_pyspiel, game)
    solver = jaxsolve.cfr_plus()
    run = jax.jit(jaxsolve.run, static_argnums=(0,))
    initial = solver.init(tree)

    def run_block(state, n):
        return jax.block_until_ready(run(solver, tree, state, n))

    _, compile_s = _timed(run_block, initial, 1)
    per_iter = [_timed(run_block, initial, block)[1] / block for _ in range(repeats)]

    exploitability = jax.jit(jaxsolve.exploitability)
    average = jax.jit(jaxsolve.average_policy)
    uniform = jaxsolve.uniform_policy(tree, initial.regrets.dtype)
    _, eval_compile_s = _timed(lambda: jax.block_until_ready(exploitability(tree, uniform)))
    expl, check, state, done = {}, {}, initial, 0
    for target in checkpoints:
        state = run_block(state, target - done)
        done = target
        policy = average(tree, state)
        expl[str(target)] = float(exploitability(tree, policy))
        tabular = pyspiel.TabularPolicy(to_tabular_policy(tree, game, policy).to_dict())
        check[str(target)] = float(pyspiel.exploitability(game, tabular))

    eval_s = _median_time(lambda: jax.block_until_ready(exploitability(tree, policy)),
                          eval_repeats)
    return {"setup_s": setup, "compile_s": compile_s, **_block_stats(per_iter),
            "block_iters": block, "timed_blocks": repeats, "iterations_done": done,
            "capped": False, "exploitability": expl,
            "exploitability_by_pyspiel": check, "eval_ms": 1e3 * eval_s,
            "eval_compile_s": eval_compile_s, "dtype": str(state.regrets.dtype),
            "tree": {"nodes": tree.sizes.num_nodes, "infosets": tree.sizes.num_infosets,
                     "max_actions": tree.sizes.num_actions,
                     "terminals": tree.sizes.num_terminals}}


def _ratio(a, b):
    return a / b if a is not None and b else None


def bench_game(key, args, jax, jaxsolve, pyspiel):
    name, params = GAMES[key]
    checkpoints, os_block, js_block, repeats, eval_repeats = (QUICK if args.quick else FULL)[key]
    if key == "liars" and args.liars_iters:
        checkpoints = tuple(sorted({min(c, args.liars_iters) for c in checkpoints}))
    game = pyspiel.load_game(name, params)
    out = {"game": str(game), "checkpoints": list(checkpoints), "notes": []}

    print(f"[{key}] OpenSpiel C++ CFRPlusSolver ...", flush=True)
    out["openspiel_cpp"] = bench_openspiel_cpp(pyspiel, game, checkpoints, os_block,
                                               eval_repeats, args.cap)
    skip_jaxcfr = args.skip_jaxcfr or (key == "liars" and args.skip_jaxcfr_liars)
    if skip_jaxcfr:
        out["jaxcfr"] = None
        out["notes"].append("OpenSpiel JaxCFR skipped (flag)")
    else:
        print(f"[{key}] OpenSpiel JaxCFR ...", flush=True)
        out["jaxcfr"] = bench_jaxcfr(jax, pyspiel, game, checkpoints, os_block, args.cap)
    print(f"[{key}] jaxsolve CFR+ ...", flush=True)
    out["jaxsolve"] = bench_jaxsolve(jax, jaxsolve, pyspiel, game, checkpoints, js_block,
                                     repeats, eval_repeats)

    ours = out["jaxsolve"]
    # The baseline is the faster of the two ways of handing pyspiel the C++ policy.
    cpp_eval = min(out["openspiel_cpp"]["eval_ms_tabular_policy"],
                   out["openspiel_cpp"]["eval_ms_average_policy"])
    out["ratios"] = {
        "cpp_ms_per_iter_over_jaxsolve": _ratio(out["openspiel_cpp"]["ms_per_iter"],
                                                ours["ms_per_iter"]),
        "jaxcfr_ms_per_iter_over_jaxsolve": _ratio(
            (out["jaxcfr"] or {}).get("ms_per_iter"), ours["ms_per_iter"]),
        "pyspiel_exploitability_over_jaxsolve": _ratio(cpp_eval, ours["eval_ms"]),
        "pyspiel_exploitability_average_policy_over_jaxsolve": _ratio(
            out["openspiel_cpp"]["eval_ms_average_policy"], ours["eval_ms"]),
        "pyspiel_exploitability_tabular_policy_over_jaxsolve": _ratio(
            out["openspiel_cpp"]["eval_ms_tabular_policy"], ours["eval_ms"]),
    }
    for solver in ("openspiel_cpp", "jaxcfr"):
        if (out[solver] or {}).get("capped"):
            out["notes"].append(f"{solver} stopped by --cap {args.cap:g} s after "
                                f"{out[solver]['iterations_done']} iterations")
    if key == "liars" and checkpoints[-1] < 1000 and not args.quick:
        out["notes"].append(f"liar's dice run to {checkpoints[-1]} iterations (--liars-iters)")
    return out


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def print_table(key, out):
    first, last = (str(c) for c in out["checkpoints"][:1] + out["checkpoints"][-1:])
    rows = [("OpenSpiel C++ CFR+", out["openspiel_cpp"]), ("OpenSpiel JaxCFR", out["jaxcfr"]),
            ("jaxsolve CFR+", out["jaxsolve"])]
    ours = out["jaxsolve"]["ms_per_iter"]
    tree = out["jaxsolve"]["tree"]
    print(f"\n== {out['game']}  ({tree['nodes']} nodes, {tree['infosets']} infosets)")
    head = (f"{'solver':<20} {'dtype':>8} {'ms/iter':>9} {'timed':>10} {'setup s':>8} "
            f"{'compile s':>9} {'expl@' + first:>10} {'expl@' + last:>10} {'÷ jaxsolve':>10}")
    print(head)
    print("-" * len(head))
    for label, r in rows:
        if r is None:
            print(f"{label:<20} {'skipped':>8}")
            continue
        timed = f"{r['timed_blocks']}x{r['block_iters']}"
        expl = r["exploitability"]
        print(f"{label:<20} {r['dtype']:>8} {_fmt(r['ms_per_iter'], '9.4f')} {timed:>10} "
              f"{_fmt(r['setup_s'], '8.3f')} {_fmt(r['compile_s'], '9.3f')} "
              f"{_fmt(expl.get(first), '10.3e')} {_fmt(expl.get(last), '10.3e')} "
              f"{_fmt(_ratio(r['ms_per_iter'], ours), '9.1f')}x")
    cpp, js = out["openspiel_cpp"], out["jaxsolve"]
    check = js["exploitability_by_pyspiel"]
    print(f"jaxsolve expl checked by pyspiel.exploitability: @{first} "
          f"{_fmt(check.get(first), '.3e')}, @{last} {_fmt(check.get(last), '.3e')}")
    print(f"exploitability eval: pyspiel {cpp['eval_ms_tabular_policy']:.3f} ms (TabularPolicy), "
          f"{cpp['eval_ms_average_policy']:.3f} ms (average_policy()); jaxsolve "
          f"{js['eval_ms']:.3f} ms (compile {js['eval_compile_s']:.2f} s); ratio "
          f"{_fmt(out['ratios']['pyspiel_exploitability_over_jaxsolve'], '.1f')}x (vs the faster)")
    for note in out["notes"]:
        print(f"note: {note}")


TARGETS = [  # (game, ratio key or field, threshold, description) from issue 2
    ("leduc", "cpp_ms_per_iter_over_jaxsolve", 10, "Leduc >= 10x faster/iter than C++ CFR+"),
    ("leduc", "jaxcfr_ms_per_iter_over_jaxsolve", 3, "Leduc >= 3x faster/iter than JaxCFR"),
    ("liars", "cpp_ms_per_iter_over_jaxsolve", 3, "liar's dice >= 3x faster/iter than C++"),
    ("leduc", "pyspiel_exploitability_over_jaxsolve", 10,
     "Leduc exploitability >= 10x faster than pyspiel.exploitability"),
]


def targets(results):
    checks = []
    for game, key, threshold, text in TARGETS:
        value = results.get(game, {}).get("ratios", {}).get(key)
        checks.append({"target": text, "value": value,
                       "met": None if value is None else value >= threshold})
    if "liars" in results:
        setup = results["liars"]["jaxsolve"]["setup_s"]
        checks.append({"target": "liar's dice compile_game <= 15 s", "value": setup,
                       "met": setup <= 15})
    return checks


def machine(jax):
    device = jax.devices()[0]
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def version(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    return {"platform": platform.platform(), "python": platform.python_version(),
            "cpu": cpu, "cpu_count": os.cpu_count(),
            "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else None,
            "jax_backend": jax.default_backend(), "device_kind": device.device_kind,
            "device_count": jax.device_count(), "jax": jax.__version__,
            "jaxlib": version("jaxlib"), "open_spiel": version("open_spiel"),
            "numpy": version("numpy"), "x64": bool(jax.config.read("jax_enable_x64")),
            "load_average_at_start": _load()}


def _load():
    """1-minute load average: other processes on the machine skew every timing."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="kuhn,leduc,liars",
                        help="comma-separated subset of kuhn,leduc,liars")
    parser.add_argument("--quick", action="store_true", help="few iterations: a smoke run")
    parser.add_argument("--x64", action="store_true",
                        help="float64 for the JAX solvers (OpenSpiel C++ is always float64)")
    parser.add_argument("--skip-jaxcfr", action="store_true", help="skip JaxCFR on every game")
    parser.add_argument("--skip-jaxcfr-liars", action="store_true",
                        help="skip JaxCFR on liar's dice (its setup takes ~100 s)")
    parser.add_argument("--liars-iters", type=int, default=None,
                        help="run OpenSpiel's solvers on liar's dice to at most this many "
                             "iterations (C++ CFR+ takes ~140 ms, JaxCFR ~270 ms each)")
    parser.add_argument("--cap", type=float, default=None,
                        help="stop an OpenSpiel solver's iterations after this many seconds")
    parser.add_argument("--out", default=str(ROOT / "results" / "bench_cfr.json"))
    args = parser.parse_args(argv)
    keys = [k.strip() for k in args.games.split(",") if k.strip()]
    unknown = [k for k in keys if k not in GAMES]
    if unknown:
        parser.error(f"unknown game(s) {unknown}; choose from {sorted(GAMES)}")

    import jax  # noqa: PLC0415

    if args.x64:
        jax.config.update("jax_enable_x64", True)  # before any array is made
    import pyspiel  # noqa: PLC0415

    import jaxsolve  # noqa: PLC0415

    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine(jax), "mode": "quick" if args.quick else "full",
              "argv": sys.argv[1:], "games": {}}
    started = time.perf_counter()
    for key in keys:
        report["games"][key] = bench_game(key, args, jax, jaxsolve, pyspiel)
        print_table(key, report["games"][key])
        report["targets"] = targets(report["games"])
        report["total_s"] = time.perf_counter() - started
        report["games"][key]["load_average_after"] = _load()
        out_path.write_text(json.dumps(report, indent=2) + "\n")
    m = report["machine"]
    print(f"\nmachine: {m['cpu']} ({m['cpu_count']} CPUs), jax {m['jax']} on "
          f"{m['jax_backend']}/{m['device_kind']}, open_spiel {m['open_spiel']}, "
          f"x64={m['x64']}")
    for check in report["targets"]:
        mark = {True: "met", False: "NOT met", None: "n/a"}[check["met"]]
        print(f"target: {check['target']}: {_fmt(check['value'], '.2f')} ({mark})")
    loads = [m["load_average_at_start"]] + [g["load_average_after"]
                                            for g in report["games"].values()]
    print(f"load average (1 min) at start and after each game: "
          f"{', '.join(_fmt(x, '.2f') for x in loads)} on {m['cpu_count']} CPUs")
    print(f"total {report['total_s']:.0f} s; wrote {out_path}")


if __name__ == "__main__":
    main()
