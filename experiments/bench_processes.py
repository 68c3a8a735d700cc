"""Time per CFR+ iteration of one tree split over 1, 2 (and 4) processes: a CPU stand-in.

    python experiments/bench_processes.py                  # liar's dice 1x6, 1 2 4 processes
    python experiments/bench_processes.py --quick          # a smoke run: Goofspiel 4, 1 and 2

Each count N starts N processes on this host, joined over gloo
(`jaxsolve.processes.initialize`, each process one CPU device); they split the tree's
terminals (`distributed.shard_tree`) and run `distributed.run_sharded`. One process
runs the same code on a one-device mesh. After a warm-up call (the compile), process
0 times `--repeats` calls of `--iters` iterations each, every call ending with the
result on every process. The report gives the median milliseconds per iteration and
the speed-up over one process.

A CPU stand-in, and labelled so in the report: the processes share this host's
cores and memory, and their collectives go over the loopback interface, so the
figures show what splitting costs and gains on one machine (each process's XLA also
starts threads for every core: N processes on fewer than N cores compete for them),
not a cluster's network, GPUs or NCCL. Counts above the core count are skipped
unless given explicitly. Writes results/local/bench_processes.json (`--publish`:
results/bench_processes.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import (add_publish_option, cores, machine_info, positive, refuse_published_smoke_run,
                     report_path, where_written)

GAMES = {  # name: (builder, args), each a builder of jaxsolve.builders
    "goofspiel4": ("goofspiel", (4,)),
    "goofspiel5": ("goofspiel", (5,)),
    "liars_dice_1x6": ("liars_dice", ((1, 1), 6)),
}
LABEL = ("CPU stand-in: N processes on one host, one CPU device each, joined over gloo "
         "on the loopback interface; not a cluster's network, GPUs or NCCL")
ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "results" / "local" / "bench_processes_quick.json"
LAUNCH_TIMEOUT = 900  # seconds for one count's processes


def worker(out: str, game: str, iters: int, repeats: int) -> None:
    """One process of a count: joins (if JAXSOLVE_NUM_PROCESSES is set), solves, and
    process 0 writes its timings to `out`."""
    from jaxsolve import processes  # noqa: PLC0415 - jax starts after the join below

    settings = processes.from_environment()
    if settings is not None:
        processes.initialize(**settings._asdict())
    import jax  # noqa: PLC0415

    import jaxsolve  # noqa: PLC0415
    from jaxsolve import builders, distributed  # noqa: PLC0415

    name, args = GAMES[game]
    tree = getattr(builders, name)(*args, histories=False)
    solver = jaxsolve.cfr_plus()
    began = time.perf_counter()
    sharded = distributed.shard_tree(tree)  # all devices: one per process
    state = jax.block_until_ready(distributed.run_sharded(solver, sharded, solver.init(tree), 1))
    compile_s = time.perf_counter() - began
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        state = jax.block_until_ready(distributed.run_sharded(solver, sharded, state, iters))
        seconds.append(time.perf_counter() - began)
    if processes.is_lead():
        Path(out).write_text(json.dumps({
            "processes": jax.process_count(), "devices": jax.device_count(),
            "terminals": tree.sizes.num_terminals, "infosets": tree.sizes.num_infosets,
            "histories": tree.sizes.num_nodes, "compile_and_first_s": compile_s,
            "seconds": seconds, "ms_per_iteration": 1e3 * statistics.median(seconds) / iters}))


def run_count(n: int, game: str, iters: int, repeats: int) -> dict:
    """Starts `n` worker processes (n = 1: one alone) and returns process 0's record."""
    from jaxsolve.launch import free_port, supervise  # noqa: PLC0415
    from jaxsolve.processes import COORDINATOR, NUM_PROCESSES, PROCESS_ID, TIMEOUT  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "timings.json"
        words = [sys.executable, __file__, "--worker", str(out), "--game", game,
                 "--iters", str(iters), "--repeats", str(repeats)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("JAXSOLVE_")}
        env["JAX_PLATFORMS"] = "cpu"
        if n > 1:
            env.update({COORDINATOR: f"127.0.0.1:{free_port()}", NUM_PROCESSES: str(n),
                        TIMEOUT: "120"})
        # The workers print nothing of their own; stdout off keeps gloo's connection note
        # out of the report (their errors go to stderr).
        procs = [subprocess.Popen(words, env={**env, PROCESS_ID: str(i)} if n > 1 else env,
                                  stdout=subprocess.DEVNULL) for i in range(n)]
        began = time.monotonic()
        code = supervise(procs)
        if code or not out.exists():
            raise SystemExit(f"bench_processes: {n} process(es) failed (exit code {code})")
        record = json.loads(out.read_text())
        record["wall_s"] = time.monotonic() - began
        return record


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=list(GAMES), default=None,
                        help="the builder tree (default liars_dice_1x6; --quick: goofspiel4)")
    parser.add_argument("--processes", type=positive(int), nargs="+", default=None,
                        metavar="N", help="process counts (default 1 2 4, those above the "
                        "core count left out; --quick: 1 2)")
    parser.add_argument("--iters", type=positive(int), default=None,
                        help="iterations per timed call (default 50; --quick: 10)")
    parser.add_argument("--repeats", type=positive(int), default=None,
                        help="timed calls per count (default 5; --quick: 2)")
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--out", default=None, help="the report's path")
    add_publish_option(parser)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    refuse_published_smoke_run(parser, args)
    quick = args.quick
    args.game = args.game or ("goofspiel4" if quick else "liars_dice_1x6")
    args.iters = args.iters or (10 if quick else 50)
    args.repeats = args.repeats or (2 if quick else 5)
    if args.processes is None:
        args.processes = [1, 2] if quick else [n for n in (1, 2, 4) if n <= max(2, cores())]
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.worker:
        worker(args.worker, args.game, args.iters, args.repeats)
        return {}
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, load {info['load_average']}")
    print(f"{LABEL}.")
    counts = {}
    for n in args.processes:
        counts[n] = record = run_count(n, args.game, args.iters, args.repeats)
        print(f"{n} process{'es' * (n > 1)}: {record['ms_per_iteration']:.2f} ms per iteration "
              f"({args.game}, {record['terminals']:,} terminals over {record['devices']} "
              f"device{'s' * (record['devices'] > 1)}; compile {record['compile_and_first_s']:.1f} s)",
              flush=True)
    one = counts.get(1, {}).get("ms_per_iteration")
    for record in counts.values():
        record["speedup_over_one"] = one / record["ms_per_iteration"] if one else None
    report = {"label": LABEL, "machine": info, "game": args.game, "solver": "cfr+",
              "iters": args.iters, "repeats": args.repeats, "quick": args.quick,
              "counts": {str(n): r for n, r in counts.items()}}
    path = report_path("bench_processes.json", args.out, args.publish,
                       SMOKE if args.quick else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {where_written(path)}")
    return report


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
