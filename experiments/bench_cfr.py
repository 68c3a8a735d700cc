"""CFR+ side by side: OpenSpiel's C++ CFRPlusSolver, OpenSpiel's JaxCFR and jaxsolve.

    python experiments/bench_cfr.py                      # kuhn,leduc,liars: ~6 min on 2 cores
    python experiments/bench_cfr.py --publish            # the same, into results/bench_cfr.json
    python experiments/bench_cfr.py --quick              # smoke run: goofspiel5,leduc, < 1 min
    python experiments/bench_cfr.py --games kuhn,leduc --x64
    python experiments/bench_cfr.py --games goofspiel6,battleship --jaxsolve-only
    python experiments/bench_cfr.py --games leduc --solver pcfr+   # jaxsolve's PCFR+ alone
    python experiments/bench_cfr.py --games "openspiel:liars_dice(dice_sides=4)"  # any game

GPU run, one command from the repository root of a machine with JAX for
CUDA. OpenSpiel is not needed there: without it the OpenSpiel solvers are skipped
and Leduc comes from `jaxsolve.games`, the other games from
`jaxsolve.builders`; jaxsolve is imported from the checkout (its dependencies, jax,
flax, optax, chex, numpy, tqdm, are in the H200 image). The games run in the order
given, each in its own process, and the JSON is rewritten after each one, so a run
cut short keeps what it measured (hence the biggest last):

    PYTHONUNBUFFERED=1 python3 experiments/bench_cfr.py \\
        --games leduc,liars_builder,goofspiel5,goofspiel6,battleship,goofspiel7 \\
        --out $OUT/bench_cfr_gpu.json

If that outruns a 10-minute command limit, rerun what is missing with `--merge`
(keeps the games already in the file), e.g. `--games goofspiel7 --merge --out ...`.
`--games battleship3x3` (2.7e7 histories) is a bigger optional case.

Games (`--games`, comma-separated):

* kuhn, leduc, liars (liar's dice, 1 die of 6 sides): `from_pyspiel`
  (`compile_game`) when OpenSpiel is installed, else `jaxsolve.games` (Kuhn,
  Leduc) or the builder (liar's dice);
* liars_builder: liar's dice 1x6 from `jaxsolve.builders.liars_dice` (jaxsolve
  only: the OpenSpiel solvers on this game are the `liars` entry);
* goofspiel5, goofspiel6, goofspiel7: `jaxsolve.builders.goofspiel(N)`, OpenSpiel's
  turn-based imperfect-information goofspiel, descending point order (2.7e4, 9.7e5
  and 4.75e7 histories);
* battleship: `jaxsolve.builders.battleship` on a 3x2 board, one ship of length 2, 3
  shots each (2.3e6 histories); battleship3x3: 3x3 board, one 1-cell ship, 3 shots
  (2.7e7 histories).

OpenSpiel's solvers run only on games of at most `--competitor-max-histories`
histories (default 3e5: liar's dice, the largest default game, already takes them
tens of ms per iteration, see results/bench_cfr.json) and only where OpenSpiel is
installed; the output says why they were skipped. The independent check of our
exploitability (below) runs on games of at most `--check-max-histories` histories
(default: the same limit); the per-game table and the summary say when ours is
unchecked.

All solvers use the same update scheme (alternating updates, regrets floored at
zero, linear averaging). That does not make their exploitabilities equal: exact
ties in the regrets leave tiny round-off residues (1e-19 to 1e-34 after one iteration
of Goofspiel 5) that depend on each implementation's summation order, and RM+ keeps
them and turns them into different pure strategies. On Goofspiel the three
trajectories part from the third iteration (in float64 too; the tree itself equals
OpenSpiel's); in float32 against the C++ float64 they part by a few % on Leduc too
(with `--x64` Leduc agrees to ~1e-10 at 100 iterations; Kuhn and liar's dice agree to
~4 digits even in float32). A note is printed where they differ by more than 0.1% at
a checkpoint: compare the timings there, not the exploitabilities.

For each solver and game it measures

* setup s: building the solver's tables (OpenSpiel: the constructor; jaxsolve:
  building the tree: `from_pyspiel`, i.e. `compile_game`, or the builder); for
  jaxsolve also `device_put` s, placing the tree on the device (in neither setup nor
  compile);
* compile s: JaxCFR: its first `step()` (one iteration included); jaxsolve: the first
  call of `jax.jit(jaxsolve.run, static_argnums=0, donate_argnums=2)` with zero
  iterations (the count is traced, so every block reuses that executable);
* ms/iter: the median over timed blocks of iterations after compilation
  (`time.perf_counter`, `jax.block_until_ready` for the JAX solvers). Every solver is
  timed block by block on its way to the last checkpoint; jaxsolve runs each block
  of `block` iterations in one compiled call, with the state donated, and adds
  blocks after the last checkpoint until it has `repeats` of them. The solvers of a
  game run one after the other (jaxsolve, C++, JaxCFR), not interleaved, so a change
  in the machine's load falls on one of them: the 1-minute load average before and
  after each solver's timed iterations is printed and stored (`load_average_1min`),
  and so is every timed block's seconds per iteration (`block_s_per_iter`, in the
  order timed; `ms_per_iter` is 1000 times their median), to show the spread;
* exploitability after 100 and 1000 iterations (OpenSpiel's definition, NashConv / 2):
  `pyspiel.exploitability` on OpenSpiel's average policies, `jaxsolve.exploitability`
  on ours (and, as a check nobody here wrote, `pyspiel.exploitability` on ours too,
  where OpenSpiel is installed and the game has at most `--check-max-histories`
  histories: |ours - pyspiel| is printed and stored beside both, and flagged
  MISMATCH above a tolerance set by the dtype, see `check_tolerance`);
* evaluation time: `pyspiel.exploitability` (C++) on the C++ solver's average policy
  against jitted `jaxsolve.exploitability`, medians after compilation;
* for jaxsolve also memory: the tree's bytes (`jaxsolve.builders.tree_bytes`), and,
  from `jax.devices()[0].memory_stats()` where the backend has it (GPU, TPU; None on
  CPU), bytes in use after placing the tree on the device, the peak after the
  iterations and the peak after the evaluations (each game runs in its own process,
  so the peaks are its own), and the host's peak resident memory.

Before running anything the memory each built game needs is estimated from the
builder's sizes (`estimate_bytes` for the build, plus the tree, solver state and
per-leaf work arrays on the device); a game whose estimate exceeds the device's memory
(`bytes_limit`; on CPU the host's available memory) is refused with a message, and
nothing runs. `--max-memory-gib` sets another limit, `--no-memory-check` skips it.

OpenSpiel's C++ solver computes in float64; JaxCFR and jaxsolve use JAX's default
float32 unless `--x64` is given. Results go to `results/local/bench_cfr.json` on CPU,
`results/local/bench_cfr_<backend>.json` on an accelerator (ignored by git, so a trial
run replaces nothing; `--publish`: the same names directly under `results/`, the
tracked files the README cites; `--quick`: the same names with `_quick` in the temp
folder; `--out` wins over all of these), written after every game. A table per game
and a summary table across games are printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing jaxsolve
    sys.path.insert(0, str(ROOT))

# The parts, beside this file in experiments/ (module: what it holds):
#   bench_cfr_games     the --games entries and their iteration schedules
#   bench_cfr_solvers   the three contestants and the loops that time them
#   bench_cfr_memory    memory statistics, the estimates, the up-front refusal
#   bench_cfr_worker    what a child process runs: the machine probe or one game
#   bench_cfr_tables    the printed tables and number formats
from bench_cfr_games import (DEFAULT_GAMES, GAMES, OPENSPIEL, QUICK_GAMES,  # noqa: E402
                             SOLVER_NAMES, game_entry)
from bench_cfr_memory import fmt_bytes, memory_check  # noqa: E402
from bench_cfr_solvers import load_average  # noqa: E402
from bench_cfr_tables import fmt, print_summary, print_table  # noqa: E402
from bench_cfr_worker import run_child, worker_main  # noqa: E402
from machine import (add_publish_option, positive, refuse_published_smoke_run,  # noqa: E402
                     report_path, where_written)


def build_parser() -> argparse.ArgumentParser:
    """The command line: the options a user passes, then the hidden ones by which the
    parent hands a child process its job (bench_cfr_worker)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=None,
                        help=f"comma-separated subset of {','.join(GAMES)}, or "
                             f"{OPENSPIEL}SPEC for any OpenSpiel game (default "
                             f"{DEFAULT_GAMES}; with --quick {QUICK_GAMES})")
    parser.add_argument("--quick", action="store_true", help="few iterations: a smoke run")
    parser.add_argument("--solver", choices=SOLVER_NAMES, default="cfr+",
                        help="jaxsolve's solver (default cfr+; OpenSpiel's solvers, which "
                             "are CFR+, then run only with cfr+, and the results go to "
                             "bench_cfr_<solver>.json unless --out)")
    parser.add_argument("--x64", action="store_true",
                        help="float64 for the JAX solvers (OpenSpiel C++ is always float64)")
    parser.add_argument("--jaxsolve-only", action="store_true",
                        help="skip OpenSpiel's solvers on every game")
    parser.add_argument("--competitor-max-histories", type=positive(float), default=3e5,
                        help="run OpenSpiel's solvers only on games with at most this "
                             "many histories (default 3e5)")
    parser.add_argument("--check-max-histories", type=positive(float), default=None,
                        help="check jaxsolve's exploitability with pyspiel.exploitability "
                             "only on games with at most this many histories (default: "
                             "--competitor-max-histories); larger games are reported "
                             "UNCHECKED")
    parser.add_argument("--skip-jaxcfr", action="store_true", help="skip JaxCFR on every game")
    parser.add_argument("--skip-jaxcfr-liars", action="store_true",
                        help="skip JaxCFR on liar's dice (its setup is slow there: see "
                             "games.liars.jaxcfr.setup_s in results/bench_cfr.json)")
    parser.add_argument("--liars-iters", type=positive(int), default=None,
                        help="cap liar's dice's checkpoints at this many iterations, so "
                             "every solver on it (jaxsolve too) runs and is evaluated to at "
                             "most this many (OpenSpiel's solvers take tens of ms per "
                             "iteration there: games.liars.*.ms_per_iter in "
                             "results/bench_cfr.json)")
    parser.add_argument("--cap", type=positive(float), default=None,
                        help="stop an OpenSpiel solver's iterations after this many seconds")
    parser.add_argument("--max-memory-gib", type=positive(float), default=None,
                        help="refuse games whose estimate exceeds this (default: the "
                             "device's memory; on CPU the host's available memory)")
    parser.add_argument("--no-memory-check", action="store_true",
                        help="run games even if their memory estimate exceeds the limit")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other games already in --out")
    parser.add_argument("--out", default=None,
                        help="JSON report (default results/local/bench_cfr.json on CPU, "
                             "results/local/bench_cfr_<backend>.json on an accelerator; "
                             "with --publish the same names directly under results/; with "
                             "--quick the same names with _quick in the temp folder)")
    add_publish_option(parser)
    parser.add_argument("--_worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--_worker-out", default=None, help=argparse.SUPPRESS)
    return parser


def output_path(args, backend: str) -> Path:
    """Where the report goes: --out; a --quick run's file in the temp folder (a smoke
    run does not replace the measured results); results/ with --publish; else
    results/local/. Another --solver than CFR+ gets its own name, never that of the
    CFR+ results the README cites."""
    default = "bench_cfr.json" if backend == "cpu" else f"bench_cfr_{backend}.json"
    if args.solver != "cfr+":
        default = default.replace("bench_cfr", f"bench_cfr_{args.solver.replace('+', 'plus')}")
    smoke = (Path(tempfile.gettempdir()) / default.replace(".json", "_quick.json")
             if args.quick else None)
    return report_path(default, args.out, args.publish, smoke)


def main(argv=None):
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args._worker or args._probe:
        return worker_main(args)
    refuse_published_smoke_run(parser, args)

    games = args.games or (QUICK_GAMES if args.quick else DEFAULT_GAMES)
    keys = [k.strip() for k in games.split(",") if k.strip()]
    if not keys:
        parser.error(f"--games names no game ({games!r}); e.g. --games kuhn,leduc")
    unknown = [k for k in keys if k not in GAMES and not (k.startswith(OPENSPIEL)
                                                          and len(k) > len(OPENSPIEL))]
    if unknown:
        parser.error(f"unknown game(s) {unknown}; choose from {', '.join(GAMES)}, or "
                     f"{OPENSPIEL}SPEC for any OpenSpiel game (SPEC as pyspiel.load_game "
                     "takes it, e.g. openspiel:liars_dice(dice_sides=4))")

    started = time.perf_counter()
    probe, rc = run_child(["--x64"] if args.x64 else [], ["--_probe"])
    if probe is None:
        raise SystemExit(f"bench_cfr: probing JAX failed (exit status {rc})")
    print(f"device: {probe['device_kind']} ({probe['jax_backend']}, "
          f"{probe['device_count']} device(s), memory limit "
          f"{fmt_bytes(probe['device_bytes_limit'])}), jax {probe['jax']}, open_spiel "
          f"{probe['open_spiel'] if probe['open_spiel_importable'] else 'not installed'}, "
          f"x64={probe['x64']}", flush=True)
    estimates = memory_check(keys, args, probe)
    for key, est in estimates.items():
        print(f"estimate {key}: {est['histories']:,} histories, build "
              f"{fmt_bytes(est['build_bytes'])}, solver run <= "
              f"{fmt_bytes(est['device_bytes'])}", flush=True)

    out_path = output_path(args, probe["jax_backend"])
    out_path.parent.mkdir(parents=True, exist_ok=True)
    report = {"machine": probe, "mode": "quick" if args.quick else "full",
              "argv": argv, "estimates": estimates, "games": {}}
    if args.merge and out_path.exists():
        old = json.loads(out_path.read_text())
        report["games"] = {k: v for k, v in old.get("games", {}).items() if k not in keys}
        report["estimates"] = {**old.get("estimates", {}), **estimates}
        report["merged_from_argv"] = old.get("argv")
    # Each game in its own process, the report rewritten after each, so that a run cut
    # short keeps what it measured.
    for key in keys:
        print(f"\n[{key}] {game_entry(key).label}", flush=True)
        result, rc = run_child(argv, ["--_worker", key])
        if result is None:
            result = {"error": f"the benchmark process exited with status {rc}"}
        result["load_average_after"] = load_average()
        report["games"][key] = result
        print_table(key, result)
        report["total_s"] = time.perf_counter() - started
        out_path.write_text(json.dumps(report, indent=2) + "\n")

    print_summary({k: report["games"][k] for k in keys})
    m = report["machine"]
    print(f"\nmachine: {m['cpu']} ({m['cpu_count']} CPUs), jax {m['jax']} on "
          f"{m['jax_backend']}/{m['device_kind']}, open_spiel "
          f"{m['open_spiel'] if m['open_spiel_importable'] else 'not installed'}, "
          f"x64={m['x64']}")
    loads = [m["load_average_at_start"]] + [report["games"][k]["load_average_after"]
                                            for k in keys]
    print(f"load average (1 min) at start and after each game: "
          f"{', '.join(fmt(x, '.2f') for x in loads)} on {m['cpu_count']} CPUs")
    print(f"total {report['total_s']:.0f} s; wrote {where_written(out_path)}")
    failed = [k for k in keys if "error" in report["games"][k]]
    if failed:  # a game that could not be measured is a failed run, not a quiet row
        print(f"bench_cfr: no measurement for {', '.join(failed)} (see the rows above)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    sys.exit(main())
