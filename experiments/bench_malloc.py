"""jaxsolve's CFR+ with its C allocator settings against glibc's defaults.

    python experiments/bench_malloc.py [--games liars,goofspiel6,battleship]
                                       [--processes 3] [--publish]

`import jaxsolve` has glibc's malloc serve large blocks from its heap and keep them
after a free (`jaxsolve.allocator`); `JAXSOLVE_SYSTEM_MALLOC=1` before the import
keeps glibc's defaults, under which every compiled call faults its scratch space in
anew. The settings hold for a whole process, so each is measured in processes of its
own, the two kinds taking turns (`--processes` of each), and the figures are medians
over the processes of each process's median. Per game and setting:

* ms per iteration: `jaxsolve.run` blocks of about 0.3 s with the state donated, as
  `bench_peers.py` times them;
* ms per evaluation: jitted `exploitability` of the average, back to back after one
  untimed call;
* minor page faults per evaluation (`getrusage`), which show the cause: each fault
  is a 4 KiB page the kernel maps and zeroes;
* the evaluation program's scratch bytes (XLA's own count).

Results go to results/local/bench_malloc.json (`--publish`: results/bench_malloc.json;
`--out` wins).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import machine

SETTINGS = {"kept": {}, "system": {"JAXSOLVE_SYSTEM_MALLOC": "1"}}
DEFAULT_GAMES = "liars,goofspiel6,battleship"


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def measure(key: str, blocks: int, evaluations: int) -> dict:
    """One game's figures in this process (the allocator as this process has it)."""
    import jax  # noqa: PLC0415  (after the parent set this process's environment)

    from bench_cfr_games import GAMES  # noqa: PLC0415
    from bench_peers import Jaxsolve, openspiel_game  # noqa: PLC0415

    solver = Jaxsolve(key, openspiel_game(key))
    solver.compile()
    start = time.perf_counter()
    solver.iterate(3)
    size = max(1, int(0.3 / ((time.perf_counter() - start) / 3)))
    per_iteration = []
    for _ in range(blocks):
        start = time.perf_counter()
        solver.iterate(size)
        per_iteration.append((time.perf_counter() - start) / size)
    average = solver.average()
    solver.exploitability(average)
    times, faults = [], []
    for _ in range(evaluations):
        before, start = _faults(), time.perf_counter()
        solver.exploitability(average)
        times.append(time.perf_counter() - start)
        faults.append(_faults() - before)
    program = solver._exploitability.lower(solver.tree, average).compile()
    return {"ms_per_iter": 1e3 * float(np.median(per_iteration)),
            "eval_ms": 1e3 * float(np.median(times)),
            "faults_per_eval": float(np.median(faults)),
            "eval_temp_bytes": int(program.memory_analysis().temp_size_in_bytes),
            "block_iterations": size, "label": GAMES[key].label,
            "histories": int(solver.tree.sizes.num_nodes)}


def worker(args) -> int:
    from jaxsolve import allocator  # noqa: PLC0415

    out = {"malloc_kept": allocator.applied(),
           "games": {key: measure(key, args.blocks, args.evaluations)
                     for key in args.games.split(",")}}
    print(json.dumps(out))
    return 0


def run_process(setting: str, args) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAXSOLVE_SYSTEM_MALLOC"}
    env.update(SETTINGS[setting])
    command = [sys.executable, __file__, "--worker", "--games", args.games,
               "--blocks", str(args.blocks), "--evaluations", str(args.evaluations)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"a {setting} process failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["malloc_kept"] != (setting == "kept"):
        raise SystemExit(f"a {setting} process reported malloc_kept={result['malloc_kept']}")
    return {key: {**figures, "malloc_kept": result["malloc_kept"]}
            for key, figures in result["games"].items()}


def summarize(runs: dict, keys: list[str]) -> list[dict]:
    games = []
    for key in keys:
        first = runs["kept"][0][key]
        entry = {"key": key, "game": first["label"], "histories": first["histories"],
                 "eval_temp_bytes": first["eval_temp_bytes"]}
        for setting in SETTINGS:
            per_process = [r[key] for r in runs[setting]]
            entry[setting] = {field: float(np.median([p[field] for p in per_process]))
                              for field in ("ms_per_iter", "eval_ms", "faults_per_eval")}
            entry[setting]["per_process"] = per_process
        for field in ("ms_per_iter", "eval_ms"):
            entry[f"{field}_system_over_kept"] = entry["system"][field] / entry["kept"][field]
        games.append(entry)
    return games


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", default=DEFAULT_GAMES,
                        help=f"comma-separated keys of bench_cfr_games (default {DEFAULT_GAMES})")
    parser.add_argument("--processes", type=machine.positive(int), default=3,
                        help="processes of each setting, taking turns (default 3)")
    parser.add_argument("--blocks", type=machine.positive(int), default=5,
                        help="timed blocks of iterations per game and process (default 5)")
    parser.add_argument("--evaluations", type=machine.positive(int), default=11,
                        help="timed evaluations per game and process (default 11)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="report path (default results/local/bench_malloc.json)")
    machine.add_publish_option(parser)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    keys = [k.strip() for k in args.games.split(",") if k.strip()]
    from bench_cfr_games import GAMES  # noqa: PLC0415
    unknown = [k for k in keys if k not in GAMES]
    if unknown or not keys:
        parser.error(f"--games: unknown {', '.join(map(repr, unknown)) or 'empty list'}; "
                     f"known: {', '.join(GAMES)}")
    args.games = ",".join(keys)
    path = machine.report_path("bench_malloc.json", args.out, args.publish)
    runs = {setting: [] for setting in SETTINGS}
    for round_ in range(args.processes):
        for setting in SETTINGS:
            print(f"process {round_ + 1}/{args.processes}, {setting} ...", flush=True)
            runs[setting].append(run_process(setting, args))
    report = {"command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine.machine_info(),
              "games": summarize(runs, keys)}
    print(f"\n{'game':34s} {'scratch MB':>10s} {'faults/eval':>17s} "
          f"{'eval ms':>17s} {'ms/iter':>17s}   (glibc defaults -> kept)")
    for g in report["games"]:
        s, k = g["system"], g["kept"]
        print(f"{g['game']:34s} {g['eval_temp_bytes'] / 1e6:10.1f} "
              f"{s['faults_per_eval']:8.0f} -> {k['faults_per_eval']:5.0f} "
              f"{s['eval_ms']:8.2f} -> {k['eval_ms']:5.2f} "
              f"{s['ms_per_iter']:8.2f} -> {k['ms_per_iter']:5.2f}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"\nwritten to {machine.where_written(path)}")
    return 0


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    sys.exit(main())
