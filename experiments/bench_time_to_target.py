"""Time to a given exploitability: jaxsolve's CFR variants against every peer's best.

    make bench-time-to-target             # the default games, in .venv-bench
    .venv-bench/bin/python experiments/bench_time_to_target.py --publish   # the published run
    .venv-bench/bin/python experiments/bench_time_to_target.py --quick     # smoke run
    .venv-bench/bin/python experiments/bench_time_to_target.py --plot-only [--publish]

The published run (`results/time_to_target.json` and `results/time_to_target.png`,
read by the performance page) is the second command, as `make bench-all` runs it, on
a machine with nothing else running: every figure is a wall time.

For each game (`--games`, keys of bench_cfr_games.GAMES) and each solver it measures
the wall time, from a built tree, until the exploitability (NashConv / 2) is at most
each of `--thresholds` (relative: 1e-3 and 1e-4 of the payoff range, the largest
minus the smallest of player 0's terminal payoffs):

* jaxsolve: every built-in full-width variant (CFR+, PCFR+, DCFR, LCFR, DCFR+,
  PDCFR+, SAPCFR+) in float32, as users run them; the average policy. A variant
  whose float32 run `stalled` above the smallest threshold (float32's round-off
  floor, which on these games lies below 1e-4 of the payoff range) runs again in
  float64, x64 switched on around it as a user switching precision does
  (`--float64` names variants to run so anyway, or none);
* NoRegret (`noregret`, NumPy/SciPy, float64): CFR+, PCFR+ (quadratic averaging, as
  jaxsolve's) and DCFR (1.5, 0, 2); the average;
* LiteEFG (`liteefg`, C++, one thread, float64): PCFR+ and DCFR as its baselines
  evaluate them (PCFR+'s linearly weighted average, DCFR's own discounted average),
  and two last-iterate methods with its default settings, MMD and Reg-CFR, whose
  current policy is evaluated;
* OpenSpiel's C++ `CFRPlusSolver` (float64); the average.

The clock counts the iterations and the evaluations, each solver's own evaluation
(the solvers of bench_peers.py), at one check schedule for all: after iteration i
the next check comes `jaxsolve.stopping.check_gap(i)` iterations later, every 10
iterations up to iteration 100 and every 10% of the iterations done after that (the
schedule of `jaxsolve solve --target`). Setup (building the solver's tables from the
game) and jaxsolve's compilation (of its loop and its evaluation) are measured
apart, off the clock. A solver stops at the first check at or below the smallest
threshold, or once its clock passes its budget: `--budget-seconds` (default 60);
a peer's budget is also cut to `--peer-factor` (default 20) times jaxsolve's best
time to the smallest threshold, but not below `--min-peer-seconds` (default 10):
a peer that has not arrived by then is at least that factor slower, which is all
the comparison needs. A peer whose package is missing, or that cannot load a game,
is skipped with a note.

Recorded per game and solver: setup s, compile s, ms per iteration (the median over
the blocks between checks), ms per evaluation (the median), iterations and seconds
to each threshold (null where not reached), the best exploitability, and the whole
trajectory: iteration, seconds (iterations and evaluations), seconds of those spent
evaluating and exploitability at every check. Per game and threshold: jaxsolve's
best time against the best peer's, their ratio (peer / jaxsolve: above 1, jaxsolve
is faster), exact where both arrived, a bound where one did not. Results go to
results/local/time_to_target.json (`--publish`: results/time_to_target.json;
`--out` wins; `--quick`: results/local/time_to_target_quick.json), written after
every game, and a log-log plot of exploitability / payoff range against seconds,
one panel per game, beside it (`.png`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import machine
from bench_cfr_games import GAMES as GAME_TABLE
from jaxsolve.stopping import CHECK_EVERY, CHECK_GROWTH_PERCENT, check_gap

DEFAULT_GAMES = ("kuhn", "leduc", "goofspiel5", "liars", "goofspiel6", "battleship")
THRESHOLDS = (1e-3, 1e-4)
LIBRARIES = ("jaxsolve", "noregret", "liteefg", "openspiel")
LIBRARY_LABELS = {"jaxsolve": "jaxsolve", "noregret": "NoRegret", "liteefg": "LiteEFG",
                  "openspiel": "OpenSpiel"}


@dataclasses.dataclass(frozen=True)
class Entry:
    """One solver of the race: `library` is a key of bench_peers.SOLVERS, `settings`
    its adapter's keyword arguments (for jaxsolve, `variant` names a key of
    jaxsolve.SOLVERS), `policy` the one evaluated ("average" or "current")."""

    library: str
    algorithm: str
    settings: dict
    policy: str = "average"
    float64: bool = False

    @property
    def label(self) -> str:
        return (f"{LIBRARY_LABELS[self.library]} {self.algorithm}"
                + (" float64" if self.float64 else ""))


VARIANTS = {"cfr+": "CFR+", "pcfr+": "PCFR+", "dcfr": "DCFR", "lcfr": "LCFR",
            "dcfr+": "DCFR+", "pdcfr+": "PDCFR+", "sapcfr+": "SAPCFR+"}
PEERS = {
    "noregret cfr+": Entry("noregret", "CFR+", {}),
    "noregret pcfr+": Entry("noregret", "PCFR+", {"prediction": True, "gamma": 2}),
    "noregret dcfr": Entry("noregret", "DCFR", {"minimizer": "DCFR"}),
    "liteefg pcfr+": Entry("liteefg", "PCFR+", {"baseline": "PCFR"}),
    "liteefg dcfr": Entry("liteefg", "DCFR", {"baseline": "DCFR", "convergence": "last-iterate",
                                              "selector": "average-iterate"}),
    "liteefg mmd": Entry("liteefg", "MMD", {"baseline": "MMD", "convergence": "last-iterate"},
                         policy="current"),
    "liteefg reg-cfr": Entry("liteefg", "Reg-CFR", {"baseline": "Reg_CFR",
                                                    "convergence": "last-iterate"},
                             policy="current"),
    "openspiel cfr+": Entry("openspiel", "CFR+", {}),
}


def float64_entry(variant: str) -> tuple[str, Entry]:
    """jaxsolve's `variant` in float64, and its key."""
    return f"jaxsolve {variant} float64", Entry("jaxsolve", VARIANTS[variant],
                                                {"variant": variant}, float64=True)


def entries(float64: list[str], skip: set[str]) -> dict[str, Entry]:
    """Every solver to run, by key: jaxsolve's variants in float32, each followed by
    itself in float64 where `float64` names it, then the peers; those of `skip` (keys
    or libraries) left out."""
    out = {}
    for variant, name in VARIANTS.items():
        out[f"jaxsolve {variant}"] = Entry("jaxsolve", name, {"variant": variant})
        if variant in float64:
            out.update([float64_entry(variant)])
    out |= PEERS
    return {k: e for k, e in out.items() if k not in skip and e.library not in skip}


# ------------------------------------------------------------------ pure helpers
def block_size(done: int, remaining_s: float, seconds_per_iteration: float | None = None) -> int:
    """Iterations to run before the next check: the schedule's gap after `done`
    (`jaxsolve.stopping.check_gap(done)`: 10, or 10% of `done` where that is more),
    cut to what fits in `remaining_s` at the rate measured so far, and at least 1."""
    gap = check_gap(done, CHECK_EVERY, CHECK_GROWTH_PERCENT)
    if seconds_per_iteration:
        gap = min(gap, int(max(remaining_s, 0.0) / seconds_per_iteration))
    return max(1, gap)


def stalled(values: list[float], level: float, least_checks: int = 9) -> bool:
    """Whether a run whose checks read `values` stopped short of `level` at a floor:
    over its last third of checks (with checks 10% of the iterations apart, the last
    third of 9 or more spans at least a third more iterations) its best is no better
    than 0.8 times its best before, as a solver converging like 1/T would be. Float32
    round-off stops a fast solver so (its exploitability then wanders about a floor);
    a run stopped by its budget while still improving is not stalled."""
    if len(values) < least_checks or min(values) <= level:
        return False
    cut = len(values) - len(values) // 3
    return min(values[cut:]) > 0.8 * min(values[:cut])


def time_to(trajectory: dict, level: float) -> dict | None:
    """The first check of `trajectory` (columns iteration, seconds, eval_seconds,
    exploitability) at most `level`: its iterations, seconds (iterations and
    evaluations) and seconds spent evaluating, and the evaluations up to it; None
    where no check is."""
    for i, value in enumerate(trajectory["exploitability"]):
        if value <= level:
            return {"iterations": trajectory["iteration"][i], "seconds": trajectory["seconds"][i],
                    "eval_seconds": trajectory["eval_seconds"][i], "evaluations": i + 1}
    return None


def level_key(level: float) -> str:
    """A threshold as the results file's keys spell it: 1e-3 as "0.001"."""
    return f"{level:g}"


def best_time(solvers: dict, library_is_ours: bool, level: float):
    """(seconds, key) of the fastest solver to `level` among jaxsolve's
    (`library_is_ours`) or among the peers', or None where none arrived."""
    times = [(s["time_to"][level_key(level)]["seconds"], key) for key, s in solvers.items()
             if (s["library"] == "jaxsolve") == library_is_ours
             and s["time_to"][level_key(level)] is not None]
    return min(times) if times else None


def ratio(solvers: dict, level: float) -> dict | None:
    """The best peer's time to `level` over jaxsolve's best time (above 1: jaxsolve is
    faster). `bound` says what the number is: "exact" where both arrived; "at least"
    where only jaxsolve did (the peers' time is more than the shortest run of a peer
    that did not arrive); "at most" where only a peer did (jaxsolve's is more than
    its longest run). None where neither arrived or one side has no solver."""
    ours = {k: s for k, s in solvers.items() if s["library"] == "jaxsolve"}
    theirs = {k: s for k, s in solvers.items() if s["library"] != "jaxsolve"}
    if not ours or not theirs:
        return None
    mine, peer = best_time(solvers, True, level), best_time(solvers, False, level)
    if mine and peer:
        return {"ratio": peer[0] / mine[0], "bound": "exact", "jaxsolve": mine[1],
                "jaxsolve_s": mine[0], "peer": peer[1], "peer_s": peer[0]}
    if mine:
        shortest = min(s["seconds"] for s in theirs.values())
        return {"ratio": shortest / mine[0], "bound": "at least", "jaxsolve": mine[1],
                "jaxsolve_s": mine[0], "peer": None, "peer_s": None}
    if peer:
        longest = max(s["seconds"] for s in ours.values())
        return {"ratio": peer[0] / longest, "bound": "at most", "jaxsolve": None,
                "jaxsolve_s": None, "peer": peer[1], "peer_s": peer[0]}
    return None


def verdict(result: dict | None, factor: float) -> str:
    """Whether `ratio`'s result shows jaxsolve's best at least `factor` times as fast
    as the best peer's: "yes", "no" or "undecided" (a bound on the wrong side)."""
    if result is None:
        return "undecided"
    above = result["ratio"] >= factor
    if result["bound"] == "exact":
        return "yes" if above else "no"
    if result["bound"] == "at least":
        return "yes" if above else "undecided"
    return "undecided" if above else "no"


def peer_budget(budget_s: float, ours_s: float | None, factor: float, floor_s: float) -> float:
    """A peer's budget: `budget_s`, cut to `factor` times jaxsolve's best time to the
    smallest threshold (`ours_s`; None where jaxsolve did not arrive), not below
    `floor_s`."""
    if ours_s is None:
        return budget_s
    return min(budget_s, max(floor_s, factor * ours_s))


def summarize(entry: Entry, trajectory: dict, blocks: list[float], evaluations: list[float],
              levels: tuple, payoff_range: float) -> dict:
    """A solver's record: the trajectory, its medians and its times to each level
    (relative to `payoff_range`). `blocks` are the seconds per iteration of each block,
    `evaluations` the seconds of each evaluation."""
    return {
        "library": entry.library, "algorithm": entry.algorithm, "label": entry.label,
        "dtype": "float64" if entry.float64 or entry.library != "jaxsolve" else "float32",
        "policy": entry.policy,
        "ms_per_iter": 1e3 * float(np.median(blocks)) if blocks else None,
        "eval_ms": 1e3 * float(np.median(evaluations)) if evaluations else None,
        "iterations": trajectory["iteration"][-1] if trajectory["iteration"] else 0,
        "seconds": trajectory["seconds"][-1] if trajectory["seconds"] else 0.0,
        "best_exploitability": min(trajectory["exploitability"], default=None),
        "time_to": {level_key(level): time_to(trajectory, level * payoff_range)
                    for level in levels},
        "trajectory": trajectory,
    }


# ------------------------------------------------------------------ measuring
def race(solver, smallest: float, budget_s: float) -> tuple[dict, list[float], list[float]]:
    """Runs `solver` block by block on the check schedule, evaluating after each
    block, until an exploitability is at most `smallest` or the clock (iterations and
    evaluations) passes `budget_s`. Returns the trajectory, the seconds per iteration
    of each block and the seconds of each evaluation."""
    from bench_peers import _no_collection  # noqa: PLC0415

    trajectory = {"iteration": [], "seconds": [], "eval_seconds": [], "exploitability": []}
    blocks, evaluations = [], []
    done, solving, evaluating = 0, 0.0, 0.0
    while True:
        rate = solving / done if done else None
        last_eval = evaluations[-1] if evaluations else 0.0
        n = block_size(done, budget_s - solving - evaluating - last_eval, rate)
        gc.collect()
        with _no_collection():
            start = time.perf_counter()
            solver.iterate(n)
            middle = time.perf_counter()
            value = solver.exploitability(solver.average())
            end = time.perf_counter()
        done, solving, evaluating = done + n, solving + middle - start, evaluating + end - middle
        blocks.append((middle - start) / n)
        evaluations.append(end - middle)
        for column, x in zip(trajectory, (done, solving + evaluating, evaluating, value)):
            trajectory[column].append(x)
        if value <= smallest or solving + evaluating >= budget_s:
            return trajectory, blocks, evaluations


def run_one(key: str, entry: Entry, game, levels: tuple, payoff_range: float,
            budget_s: float) -> dict:
    """Sets up one solver (timed), compiles jaxsolve's (timed), races it."""
    import jax  # noqa: PLC0415

    import jaxsolve  # noqa: PLC0415
    from bench_peers import SOLVERS  # noqa: PLC0415

    settings = dict(entry.settings)
    with jax.enable_x64(entry.float64):
        if entry.library == "jaxsolve":
            settings = {"solver": jaxsolve.SOLVERS[settings["variant"]](),
                        "dtype": np.float64 if entry.float64 else np.float32}
        start = time.perf_counter()
        solver = SOLVERS[entry.library](key, game, **settings)
        setup_s = time.perf_counter() - start
        compile_s = None
        if entry.library == "jaxsolve":
            compile_s = solver.compile()
            start = time.perf_counter()
            solver.exploitability(solver.average())  # compiles the evaluation
            compile_s += time.perf_counter() - start
        trajectory, blocks, evaluations = race(solver, min(levels) * payoff_range, budget_s)
    out = {"setup_s": setup_s, "compile_s": compile_s, "budget_s": budget_s,
           "threads": solver.threads}
    return out | summarize(entry, trajectory, blocks, evaluations, levels, payoff_range)


def bench_game(key: str, solvers: dict[str, Entry], args) -> dict:
    """Every solver of `solvers` on one game; see the module docstring. With
    `args.float64_auto`, a jaxsolve variant whose float32 run `stalled` short of the
    smallest threshold runs again in float64, right after."""
    import jax  # noqa: PLC0415

    from bench_peers import Jaxsolve, openspiel_game  # noqa: PLC0415

    game = openspiel_game(key)
    tree = Jaxsolve(key, game).tree
    utilities = np.asarray(jax.device_get(tree.utilities))[:, 0]
    payoff_range = float(utilities.max() - utilities.min())
    out = {"game": GAME_TABLE[key].label, "openspiel_game": str(game),
           "histories": int(tree.sizes.num_nodes), "payoff_range": payoff_range,
           "solvers": {}, "skipped": {}, "ratios": {}}
    del tree
    levels = tuple(args.thresholds)
    smallest = min(levels) * payoff_range
    ours_best = None
    queue = list(solvers.items())
    while queue:
        label, entry = queue.pop(0)
        budget = args.budget_seconds
        if entry.library != "jaxsolve":
            budget = peer_budget(budget, ours_best, args.peer_factor, args.min_peer_seconds)
        try:
            result = run_one(key, entry, game, levels, payoff_range, budget)
        except ImportError as e:
            out["skipped"][label] = f"not installed ({e.name or e})"
        except Exception as e:  # a peer that cannot load this game: say so, go on
            if entry.library == "jaxsolve":
                raise
            out["skipped"][label] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        else:
            out["solvers"][label] = result
            print_solver(label, result, levels, payoff_range)
            if entry.library != "jaxsolve":
                continue
            best = best_time(out["solvers"], True, min(levels))
            ours_best = best and best[0]
            again = float64_entry(entry.settings["variant"])
            if (args.float64_auto and not entry.float64 and again[0] not in solvers
                    and stalled(result["trajectory"]["exploitability"], smallest)):
                queue.insert(0, again)
            continue
        print(f"  {label}: skipped, {out['skipped'][label]}")
    for level in levels:
        out["ratios"][level_key(level)] = ratio(out["solvers"], level)
    return out


# ------------------------------------------------------------------ reporting
def print_solver(label: str, r: dict, levels: tuple, payoff_range: float) -> None:
    compiled = f"{r['compile_s']:.2f}" if r["compile_s"] is not None else "-"
    cells = []
    for level in levels:
        record = r["time_to"][level_key(level)]
        cells.append(f"{level:g}: " + (
            f"{record['iterations']} it, {record['seconds']:.3g} s" if record else
            f"not in {r['seconds']:.3g} s (best {r['best_exploitability'] / payoff_range:.2g})"))
    print(f"  {label:24s} setup {r['setup_s']:6.2f} s  compile {compiled:>5s} s  "
          f"{r['ms_per_iter']:9.4g} ms/it  eval {r['eval_ms']:9.4g} ms  "
          + "  ".join(f"{c:<30s}" for c in cells), flush=True)


def print_verdict(report: dict, factor: float = 5.0) -> None:
    """jaxsolve's best against the best peer's, per game and threshold, and whether
    it is at least `factor` times as fast (printed, not stored)."""
    print(f"\njaxsolve's best against the best peer (peer time / jaxsolve time; "
          f"at least {factor:g}x?)")
    for game in report["games"]:
        for level, r in game["ratios"].items():
            if r is None:
                text = "no comparison (neither arrived, or one side did not run)"
            else:
                words = {"exact": "", "at least": ">= ", "at most": "<= "}[r["bound"]]
                text = (f"{words}{r['ratio']:.3g}x  ({r['jaxsolve'] or 'no jaxsolve variant'}"
                        f" against {r['peer'] or 'no peer'})")
            print(f"  {game['game']:34s} {level:>8s}: {text}  -> {verdict(r, factor)}")


ALGORITHM_COLORS = {name: f"C{i}" for i, name in enumerate(
    ["CFR+", "PCFR+", "DCFR", "LCFR", "DCFR+", "PDCFR+", "SAPCFR+", "MMD", "Reg-CFR"])}
LIBRARY_STYLES = {"jaxsolve": {"ls": "-", "lw": 1.8}, "noregret": {"ls": "--", "lw": 1.2},
                  "liteefg": {"ls": ":", "lw": 1.6}, "openspiel": {"ls": "-.", "lw": 1.2}}


def plot(report: dict, path: Path) -> Path:
    """Exploitability / payoff range against seconds, log-log, one panel per game,
    every solver on it: one color per algorithm, one line style per library (jaxsolve
    solid, in float64 thin), so that a horizontal gap between two lines of one color is
    the kernels' speed; the thresholds in grey."""
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    games = report["games"]
    columns = min(3, len(games))
    rows = math.ceil(len(games) / columns)
    labels = list(dict.fromkeys(s["label"] for g in games for s in g["solvers"].values()))
    legend_rows = math.ceil(len(labels) / 5)
    height = 4.0 * rows + 0.5 + 0.25 * legend_rows
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, height), squeeze=False)
    for ax, game in zip(axes.flat, games):
        values = [v / game["payoff_range"] for s in game["solvers"].values()
                  for v in s["trajectory"]["exploitability"]]
        # A log axis has no room for 0: a value at or below 0 (round-off at an exact
        # equilibrium) is drawn at a floor below the others rather than dropped.
        floor = max(min((v for v in values if v > 0), default=1e-12), 1e-12) / 2
        for s in game["solvers"].values():
            t = s["trajectory"]
            style = dict(LIBRARY_STYLES[s["library"]])
            if s["dtype"] == "float64" and s["library"] == "jaxsolve":
                style.update(lw=0.8, alpha=0.8)
            ax.plot(t["seconds"], [max(v / game["payoff_range"], floor)
                                   for v in t["exploitability"]],
                    color=ALGORITHM_COLORS.get(s["algorithm"], "k"), label=s["label"], **style)
        for level in report["thresholds"]:
            ax.axhline(level, color="grey", lw=0.6, alpha=0.6)
        ax.set(xscale="log", yscale="log", title=game["game"],
               xlabel="seconds (iterations and evaluations)",
               ylabel="exploitability / payoff range")
        ax.grid(True, which="major", alpha=0.25)
    for ax in axes.flat[len(games):]:
        ax.set_visible(False)
    handles = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=5, fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, (0.15 + 0.25 * legend_rows) / height, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ command line
def _thresholds(text: str) -> list[float]:
    try:
        values = sorted({float(x) for x in text.split(",")}, reverse=True)
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated numbers, got {text!r}") from None
    if not values or not all(0 < v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"numbers between 0 and 1, got {text!r}")
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=",".join(DEFAULT_GAMES),
                        help=f"comma-separated, of {', '.join(GAME_TABLE)}")
    parser.add_argument("--thresholds", type=_thresholds, default=list(THRESHOLDS),
                        help="exploitabilities over the payoff range to time, comma-separated "
                             "(default 1e-3,1e-4)")
    parser.add_argument("--float64", default="auto",
                        help=f"jaxsolve variants to run in float64 too, comma-separated, of "
                             f"{', '.join(VARIANTS)}; 'auto' (the default): those whose float32 "
                             "run stalls above the smallest threshold; 'none'")
    parser.add_argument("--skip", default="",
                        help="solvers or libraries to leave out, comma-separated (e.g. "
                             "openspiel,liteefg mmd)")
    parser.add_argument("--budget-seconds", type=machine.positive(), default=60.0,
                        help="each solver's clock on each game (default 60)")
    parser.add_argument("--peer-factor", type=machine.positive(), default=20.0,
                        help="a peer stops at this times jaxsolve's best time to the smallest "
                             "threshold (default 20)")
    parser.add_argument("--min-peer-seconds", type=machine.positive(), default=10.0,
                        help="but not before this (default 10)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: Kuhn and Leduc, thresholds 1e-2,1e-3, short budgets")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the plot from the results file, run nothing")
    parser.add_argument("--out", help="report path (default results/local/time_to_target.json)")
    machine.add_publish_option(parser)
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    machine.refuse_published_smoke_run(parser, args)
    if args.quick:
        args.games, args.thresholds = "kuhn,leduc", [1e-2, 1e-3]
        args.budget_seconds, args.min_peer_seconds = 5.0, 2.0
    args.keys = [k.strip() for k in args.games.split(",")]
    unknown = [k for k in args.keys if k not in GAME_TABLE]
    if unknown or not all(args.keys):
        parser.error(f"--games: unknown {', '.join(map(repr, unknown)) or 'empty entry'}; "
                     f"known: {', '.join(GAME_TABLE)}")
    args.float64_auto = args.float64 == "auto"
    args.float64 = [v.strip() for v in args.float64.split(",")
                    if v.strip() and args.float64 not in ("auto", "none")]
    if set(args.float64) - set(VARIANTS):
        parser.error(f"--float64: unknown {', '.join(sorted(set(args.float64) - set(VARIANTS)))}"
                     f"; known: {', '.join(VARIANTS)}")
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    known = set(LIBRARIES) | set(entries(args.float64, set()))
    if args.skip - known:
        parser.error(f"--skip: unknown {', '.join(sorted(args.skip - known))}")
    args.path = machine.report_path("time_to_target.json", args.out, args.publish,
                                    machine.LOCAL_RESULTS / "time_to_target_quick.json"
                                    if args.quick else None)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.plot_only:
        report = json.loads(args.path.read_text())
        print(f"written to {plot(report, args.path.with_suffix('.png'))}")
        return 0
    solvers = entries(args.float64, args.skip)
    report = {"command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine.machine_info(),
              "versions": {d: machine.version(d) for d in ("noregret", "liteefg", "open_spiel")},
              "thresholds": args.thresholds,
              "float64": "auto" if args.float64_auto else args.float64,
              "schedule": {"check_every": CHECK_EVERY, "growth_percent": CHECK_GROWTH_PERCENT},
              "budget_s": args.budget_seconds, "peer_factor": args.peer_factor,
              "min_peer_s": args.min_peer_seconds, "games": []}
    # LiteEFG writes a cache file of each game into the working folder: keep it apart.
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):
        for key in args.keys:
            print(f"\n== {GAME_TABLE[key].label}", flush=True)
            report["games"].append(bench_game(key, solvers, args))
            args.path.parent.mkdir(parents=True, exist_ok=True)
            args.path.write_text(json.dumps(report, indent=1))
    print_verdict(report)
    plot(report, args.path.with_suffix(".png"))
    print(f"\nwritten to {args.path if args.quick else machine.where_written(args.path)} "
          "and its .png")
    return 0


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    sys.exit(main())
