"""Sampling CFR against OpenSpiel's C++ MCCFR solvers, in one process.

    python experiments/bench_mccfr.py                  # Leduc + liar's dice 1x6: 5-10 min
    python experiments/bench_mccfr.py --publish        # the same, into results/bench_mccfr.json
    python experiments/bench_mccfr.py --quick          # smoke run: Leduc only, < 1 min
    python experiments/bench_mccfr.py --games leduc --batch-sizes 256,1024 --seconds 30

Contestants, per sampling scheme:

* external sampling: OpenSpiel's `pyspiel.ExternalSamplingMCCFRSolver(game, seed)`
  (average type SIMPLE, its default: opponents' infosets averaged on-policy) against
  `jaxsolve.external_sampling(batch_size=B)` (the same averaging);
* outcome sampling: `pyspiel.OutcomeSamplingMCCFRSolver(game, 0.6, seed)` against
  `jaxsolve.outcome_sampling(batch_size=B, exploration=0.6)`.

OpenSpiel's solvers use the plain-CFR regret rule (sums, uniform averaging);
jaxsolve runs that rule too, and in part (b) also the discounted rule
(`rule="dcfr"`), which OpenSpiel's MCCFR does not offer. jaxsolve draws a batch of B
samples with `traversal="auto"`: B frontier walks, or (when B walks would examine
more slots than the tree has histories) visit counts split down the tree in one
pass (`jaxsolve.visit_counts`, systematic split); each contestant's label names
the traversal used.

Samples. One sample is one traversal for one player (a per-player episode). In
OpenSpiel's C++ source (`open_spiel/algorithms/external_sampling_mccfr.cc` and
`outcome_sampling_mccfr.cc`, shipped with the wheel) `RunIteration` loops over the
players and runs one traversal (`UpdateRegrets`, resp. `SampleEpisode`) from the
initial state for each, so one C++ iteration = P samples (P = 2 here). One
jaxsolve step = B samples per player = B x P samples. The C++ solver is driven by
a Python loop calling `run_iteration()` (its bindings have no multi-iteration call);
that loop and the pybind call cost about the per-call overhead printed as "loop
overhead" (measured on a trivial bound method), which is included in its timings.

(a) Throughput: samples per second, Leduc poker and liar's dice (1 die each, 6
sides: OpenSpiel's default parameters), jaxsolve at each `--batch-sizes` B (default
64, 256, 1024, 8192) against C++. Each contestant is set up (C++: the constructor;
jaxsolve: `solver.init` and the compilation of `jax.jit(jaxsolve.run,
static_argnums=0)` by a zero-step call, listed separately), calibrated so that one
timed block lasts about `--block` seconds, and then timed for `--repeats` blocks,
the contestants taking turns block by block (rotating who goes first) so that a
shared machine's load falls on all of them alike. The table gives the median
samples per second over the blocks and jaxsolve's ratio to C++.

(b) Exploitability at equal wall-clock time: each scheme, jaxsolve at each
`--equal-configs` B:rule (default 256:cfr, 4096:dcfr; --quick 256:cfr, 1024:dcfr)
and C++ each get
`--seconds` (10) of solver time, again in
alternating blocks, and are evaluated at a quarter, half and all of it (blocks are
cut to end near each checkpoint, but a jaxsolve step is indivisible: where one
step passes several checkpoints it is evaluated once, and the table shows the
solver time each point was actually taken at).
Evaluation is off the clock: `pyspiel.exploitability(game,
solver.average_policy())` for C++, jitted `jaxsolve.exploitability` of
`jaxsolve.average_policy` for jaxsolve (NashConv / 2, the same definition), and at
every point jaxsolve's policy is also scored by `pyspiel.exploitability` (through
`jaxsolve.openspiel.to_tabular_policy`, float64), by code nobody here wrote. The
printed jaxsolve / C++ ratio uses that independent pyspiel score, so both sides are
scored by the same evaluator; only where it is missing (`--no-check`, or pyspiel
failed on the policy) does it fall back to `jaxsolve.exploitability`, and the output
and the JSON say so. |jaxsolve - pyspiel| is printed for every point and
flagged MISMATCH above the tolerance of `machine.check_tolerance` (the rule
bench_cfr.py uses too: relative, plus a few float eps times the largest payoff).

The ratios printed: (a) jaxsolve's samples per second over C++'s at each batch size
(above 1: more samples per second) and (b) jaxsolve's exploitability over C++'s at the
full budget (below 1: less exploitable; the solvers' own time, compilation and
evaluation off the clock, each side's last block possibly ending a little past the
budget: the final points' times are printed beside the ratio). They are printed with
as many digits as it takes to stay on their side of 1 (0.996 prints "0.996", not
"1.00"). Both are single runs with one seed: sampled solvers' exploitability is
noisy, so read small differences in (b) with care.

Results go to `results/local/bench_mccfr.json` (ignored by git, so a trial run
replaces nothing; `--publish`: the tracked `results/bench_mccfr.json` the README cites;
`--quick`: `results/bench_mccfr_quick.json`; `--out` wins over all of these) with
machine information (CPU model, cores, load average at start and end, jax and
open_spiel versions, backend). jaxsolve computes in float32 (C++ in float64) unless
`--x64`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing jaxsolve
    sys.path.insert(0, str(ROOT))

GAMES = {
    "leduc": ("Leduc poker", "leduc_poker", {}),
    "liars": ("liar's dice 1x6", "liars_dice", {}),  # OpenSpiel's defaults: 1 die, 6 sides
}
SCHEMES = ("es", "os")
SCHEME_LABEL = {"es": "external sampling", "os": "outcome sampling"}
EXPLORATION = 0.6

def equal_time_comparison(mine: dict, theirs: dict, rtol: float, atol: float) -> dict:
    """Part (b) for one jaxsolve contestant: its exploitability over C++'s at the full
    budget (`ratio`; below 1: less exploitable). `mine` and `theirs` are the final
    points of `equal_time` ("exploitability"; ours may carry "pyspiel_exploitability"
    or "pyspiel_error"). C++ is scored by pyspiel.exploitability, so ours is too where
    that score exists (source "pyspiel"); otherwise the ratio falls back to our own
    jaxsolve.exploitability (source "jaxsolve") and says why."""
    own = mine["exploitability"]
    independent = mine.get("pyspiel_exploitability")
    comparison = {"jaxsolve_exploitability": own, "pyspiel_exploitability": independent,
                  "cpp_exploitability": theirs["exploitability"]}
    if independent is not None:
        gap = compare_check(own, independent, rtol, atol)
        comparison.update(value=independent, source="pyspiel", abs_diff=gap["abs_diff"],
                          tolerance=gap["tolerance"], mismatch=gap["mismatch"])
    else:
        comparison.update(value=own, source="jaxsolve", abs_diff=None, tolerance=None,
                          mismatch=None,
                          fallback_reason=mine.get("pyspiel_error",
                                                   "pyspiel check skipped (--no-check)"))
    ratio = comparison["value"] / theirs["exploitability"] if theirs["exploitability"] \
        else math.inf
    comparison.update(ratio=ratio, ratio_text=figure_beside(ratio, 1, 3))
    return comparison


from machine import (RESULTS, add_publish_option, check_tolerance,  # noqa: E402
                     compare_check, figure_beside, machine_info, positive,
                     refuse_published_smoke_run, report_path,
                     where_written)  # experiments/machine.py


# ----------------------------------------------------------------- contestants
class Cpp:
    """OpenSpiel's C++ solver; one unit = one `run_iteration()` = P samples."""

    def __init__(self, game, scheme: str, seed: int):
        import pyspiel  # noqa: PLC0415

        self.game, self.pyspiel = game, pyspiel
        self.label = f"C++ {scheme.upper()}"
        start = time.perf_counter()
        if scheme == "es":
            self.solver = pyspiel.ExternalSamplingMCCFRSolver(game, seed=seed)
        else:
            self.solver = pyspiel.OutcomeSamplingMCCFRSolver(game, EXPLORATION, seed)
        self.setup_s = time.perf_counter() - start
        self.compile_s = 0.0
        self.samples_per_unit = game.num_players()
        self.units = 0

    def advance(self, n: int) -> float:
        step = self.solver.run_iteration
        start = time.perf_counter()
        for _ in range(n):
            step()
        seconds = time.perf_counter() - start
        self.units += n
        return seconds

    def evaluate(self) -> float:
        return float(self.pyspiel.exploitability(self.game, self.solver.average_policy()))


class Ours:
    """A jaxsolve sampling solver; one unit = one step = B x P samples."""

    def __init__(self, tree, scheme: str, batch_size: int, seed: int, run, evaluate,
                 rule: str = "cfr", check_game=None):
        import jax  # noqa: PLC0415
        import jaxsolve  # noqa: PLC0415

        self.jax, self.tree, self.run, self._evaluate = jax, tree, run, evaluate
        self.check_game = check_game  # pyspiel game to score our policies with, or None
        self.batch_size, self.rule = batch_size, rule
        if scheme == "es":
            self.solver = jaxsolve.external_sampling(batch_size=batch_size, rule=rule)
        else:
            self.solver = jaxsolve.outcome_sampling(batch_size=batch_size,
                                                    exploration=EXPLORATION, rule=rule)
        start = time.perf_counter()
        self.state = jax.block_until_ready(self.solver.init(tree, jax.random.PRNGKey(seed)))
        self.setup_s = time.perf_counter() - start
        # traversal="auto" picks per (tree, B): the frontier walk or visit counts.
        self.traversal = jaxsolve.sampling.choose_traversal(
            tree, batch_size, self.state.frontier.shape[0])
        rule_label = "" if rule == "cfr" else f" {rule}"
        self.label = f"jaxsolve {scheme.upper()} B={batch_size}{rule_label} ({self.traversal})"
        start = time.perf_counter()  # compile (or fetch the cached executable): no steps
        self.state = jax.block_until_ready(run(self.solver, tree, self.state, 0))
        self.compile_s = time.perf_counter() - start
        self.samples_per_unit = batch_size * tree.sizes.num_players
        self.units = 0

    def advance(self, n: int) -> float:
        start = time.perf_counter()
        self.state = self.jax.block_until_ready(self.run(self.solver, self.tree, self.state, n))
        seconds = time.perf_counter() - start
        self.units += n
        return seconds

    def policy(self):
        import jaxsolve  # noqa: PLC0415
        return jaxsolve.average_policy(self.tree, self.state)

    def evaluate(self) -> float:
        return float(self._evaluate(self.tree, self.state))

    def check(self) -> dict | None:
        """The independent score of the current average policy: {"pyspiel_exploitability"}
        or, where pyspiel cannot evaluate it, {"pyspiel_error"}; None without a game."""
        if self.check_game is None:
            return None
        try:
            return {"pyspiel_exploitability": pyspiel_check(self.check_game, self)}
        except Exception as e:  # noqa: BLE001 -- reported, and the ratio falls back
            return {"pyspiel_error": f"pyspiel could not evaluate it: {type(e).__name__}: {e}"}


def calibrate(c, block_s: float) -> int:
    """Units per block of about `block_s` seconds (doubling from one unit; these
    warm-up units are not timed in the results)."""
    n = 1
    while True:
        seconds = c.advance(n)
        if seconds >= block_s / 4 or n >= 1 << 24:
            return max(1, round(n * block_s / max(seconds, 1e-9)))
        n *= 2


def loop_overhead_us(game) -> float:
    """Per-call cost of a Python loop calling a trivial pybind method (µs)."""
    f = game.num_players
    n = 200_000
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, time.perf_counter() - start)
    return best / n * 1e6


# ----------------------------------------------------------------- (a) throughput
def throughput(contestants, block_s: float, repeats: int) -> dict:
    units = {c.label: calibrate(c, block_s) for c in contestants}
    rates = {c.label: [] for c in contestants}
    for r in range(repeats):
        k = r % len(contestants)
        for c in contestants[k:] + contestants[:k]:  # rotate who goes first
            seconds = c.advance(units[c.label])
            rates[c.label].append(units[c.label] * c.samples_per_unit / seconds)
    return {c.label: {
        "samples_per_s": statistics.median(rates[c.label]),
        "samples_per_s_blocks": rates[c.label],
        "units_per_block": units[c.label], "samples_per_unit": c.samples_per_unit,
        "setup_s": c.setup_s, "compile_s": c.compile_s,
        "batch_size": getattr(c, "batch_size", None),
        "traversal": getattr(c, "traversal", None)} for c in contestants}


# ----------------------------------------------------------------- (b) equal time
def equal_time(contestants, seconds: float, block_s: float, fractions=(0.25, 0.5, 1.0)) -> dict:
    """Runs the contestants in alternating blocks, each to `seconds` of its own solver
    time; evaluates (off the clock) when each passes a fraction of the budget."""
    checkpoints = [f * seconds for f in fractions]
    state = {c.label: {"spent": 0.0, "next": 0, "points": [], "eval_s": 0.0, "check_s": 0.0}
             for c in contestants}
    while True:
        live = [c for c in contestants if state[c.label]["next"] < len(checkpoints)]
        if not live:
            break
        c = min(live, key=lambda c: state[c.label]["spent"])
        s = state[c.label]
        goal = checkpoints[s["next"]]
        if c.units:
            per_unit = s["spent"] / c.units
            n = max(1, min(math.ceil(block_s / per_unit),
                           math.ceil((goal - s["spent"]) / per_unit)))
        else:
            n = 1
        s["spent"] += c.advance(n)
        passed = []
        while s["next"] < len(checkpoints) and s["spent"] >= checkpoints[s["next"]]:
            passed.append(checkpoints[s["next"]])
            s["next"] += 1
        if passed:  # one evaluation even when one block passed several checkpoints
            start = time.perf_counter()
            value = c.evaluate()
            s["eval_s"] += time.perf_counter() - start
            point = {"seconds": s["spent"], "units": c.units,
                     "samples": c.units * c.samples_per_unit,
                     "exploitability": value, "checkpoints": passed}
            if hasattr(c, "check"):  # jaxsolve: scored by pyspiel too, off the clock
                start = time.perf_counter()
                point.update(c.check() or {})
                s["check_s"] += time.perf_counter() - start
            s["points"].append(point)
    return {c.label: {"points": state[c.label]["points"],
                      "final": state[c.label]["points"][-1],
                      "evaluation_s": state[c.label]["eval_s"],
                      **({"pyspiel_check_s": state[c.label]["check_s"]}
                         if hasattr(c, "check") else {}),
                      "setup_s": c.setup_s, "compile_s": c.compile_s,
                      "batch_size": getattr(c, "batch_size", None),
                      "rule": getattr(c, "rule", "cfr"),
                      "traversal": getattr(c, "traversal", None)} for c in contestants}


def pyspiel_check(game, ours: Ours) -> float:
    """`pyspiel.exploitability` of jaxsolve's average policy."""
    import pyspiel  # noqa: PLC0415
    from open_spiel.python import policy as os_policy  # noqa: PLC0415

    from jaxsolve.openspiel import to_tabular_policy  # noqa: PLC0415

    tabular = to_tabular_policy(ours.tree, game, ours.policy())
    return float(pyspiel.exploitability(game, os_policy.python_policy_to_pyspiel_policy(tabular)))


# ----------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: Leduc, B=64,256, short blocks, 3 s budget")
    parser.add_argument("--games", default=None,
                        help="comma-separated from leduc,liars (default leduc,liars; "
                             "--quick leduc)")
    parser.add_argument("--schemes", default="es,os",
                        help="comma-separated from es,os (default es,os)")
    parser.add_argument("--batch-sizes", default=None,
                        help="jaxsolve B values of part (a), comma-separated, no repeats "
                             "(default 64,256,1024,8192; --quick 64,256)")
    parser.add_argument("--equal-configs", default=None,
                        help="jaxsolve contestants of part (b) as B:rule,..., no repeats "
                             "(default 256:cfr,4096:dcfr: OpenSpiel's rule at B = 256, then "
                             "the discounted rule at a large batch; --quick 256:cfr,1024:dcfr)")
    parser.add_argument("--seconds", type=positive(float), default=None,
                        help="solver time per contestant in part (b) (10; --quick 3)")
    parser.add_argument("--block", type=positive(float), default=None,
                        help="seconds per timed block (0.5; --quick 0.15)")
    parser.add_argument("--repeats", type=positive(int), default=None,
                        help="timed blocks per contestant in part (a) (7; --quick 3)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of every solver, C++ and jaxsolve (default 1)")
    parser.add_argument("--skip-throughput", action="store_true",
                        help="skip part (a), samples per second")
    parser.add_argument("--skip-equal-time", action="store_true",
                        help="skip part (b), exploitability at equal solver time")
    parser.add_argument("--no-check", action="store_true",
                        help="skip scoring jaxsolve's policies with pyspiel.exploitability; "
                             "part (b)'s ratios then use jaxsolve.exploitability")
    parser.add_argument("--x64", action="store_true", help="float64 for jaxsolve")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON file to write (default results/local/bench_mccfr.json; "
                             "results/bench_mccfr.json with --publish; "
                             "results/bench_mccfr_quick.json with --quick)")
    add_publish_option(parser)
    return parser


def output_path(args) -> Path:
    """--out; a --quick run's own file (git-ignored: results/*quick*); results/ with
    --publish; else results/local/."""
    smoke = RESULTS / "bench_mccfr_quick.json" if args.quick else None
    return report_path("bench_mccfr.json", args.out, args.publish, smoke)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    refuse_published_smoke_run(parser, args)

    q = args.quick
    games = [g.strip() for g in (args.games or ("leduc" if q else "leduc,liars")).split(",")]
    schemes = [x.strip() for x in args.schemes.split(",")]
    for option, values in (("--games", games), ("--schemes", schemes)):
        if not all(values):
            parser.error(f"{option} has an empty entry ({','.join(values)!r}); e.g. "
                         f"{option} {'leduc,liars' if option == '--games' else 'es,os'}")
    batch_sizes = []
    for item in (args.batch_sizes or ("64,256" if q else "64,256,1024,8192")).split(","):
        if not item.isdigit() or int(item) < 1:
            parser.error(f"--batch-sizes entry {item!r}: expected a positive integer")
        batch_sizes.append(int(item))
    equal_configs = []
    for item in (args.equal_configs or ("256:cfr,1024:dcfr" if q else "256:cfr,4096:dcfr")
                 ).split(","):
        b, _, rule = item.partition(":")
        if not b.isdigit() or int(b) < 1 or rule not in ("cfr", "cfr+", "dcfr"):
            parser.error(f"--equal-configs entry {item!r}: expected B:rule with B a positive "
                         "integer and rule one of cfr, cfr+, dcfr")
        equal_configs.append((int(b), rule))
    # Contestants, games and schemes are keyed by label: a repeat would merge two
    # contestants' results (or overwrite a game's) without a word, so refuse it.
    for option, values, show in (
            ("--games", games, str), ("--schemes", schemes, str),
            ("--batch-sizes", batch_sizes, lambda b: f"B={b}"),
            ("--equal-configs", equal_configs, lambda c: f"{c[0]}:{c[1]}")):
        repeated = sorted({show(v) for v in values if values.count(v) > 1})
        if repeated:
            parser.error(f"{option}: duplicate entries {', '.join(repeated)} (results are "
                         "keyed by label, so repeats would silently merge into one entry)")
    seconds = args.seconds if args.seconds is not None else (3.0 if q else 10.0)
    block_s = args.block if args.block is not None else (0.15 if q else 0.5)
    repeats = args.repeats if args.repeats is not None else (3 if q else 7)
    for g in games:
        if g not in GAMES:
            parser.error(f"unknown game {g!r}; known: {', '.join(GAMES)}")
    for s in schemes:
        if s not in SCHEMES:
            parser.error(f"unknown scheme {s!r}; known: es, os")
    out = output_path(args)
    out.parent.mkdir(parents=True, exist_ok=True)

    import jax  # noqa: PLC0415
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    import numpy as np  # noqa: PLC0415
    import pyspiel  # noqa: PLC0415

    import jaxsolve  # noqa: PLC0415

    run = jax.jit(jaxsolve.run, static_argnums=0)
    dtype = "float64" if args.x64 else "float32"
    evaluate = jax.jit(lambda tree, state: jaxsolve.exploitability(
        tree, jaxsolve.average_policy(tree, state)))

    results = {
        "description": "jaxsolve's batched MCCFR against OpenSpiel's C++ MCCFR solvers",
        "conventions": {
            "sample": "one traversal for one player (a per-player episode); C++ "
                      "run_iteration() = one traversal per player = P samples (RunIteration "
                      "loops over players); jaxsolve step = B samples per player = B x P",
            "seconds": "solver time only: C++ run_iteration loop, jaxsolve jitted run calls "
                       "(block_until_ready) after a zero-step compile call; evaluations and "
                       "setup off the clock",
            "exploitability": "NashConv / 2 (pyspiel.exploitability; jaxsolve.exploitability)",
            "comparison": "part (b): ratio of the pyspiel.exploitability of jaxsolve's "
                          "policy (point key pyspiel_exploitability) to C++'s; falls back "
                          "to jaxsolve.exploitability only without it (comparison.source, "
                          "comparison.fallback_reason)",
            "check_tolerance": "per game (games.<key>.check_tolerance): machine.check_tolerance "
                               "of the dtype and the game's largest |payoff|",
        },
        "config": {"games": games, "schemes": schemes, "batch_sizes": batch_sizes,
                   "equal_configs": equal_configs, "seconds": seconds, "block_s": block_s,
                   "repeats": repeats, "seed": args.seed, "quick": q,
                   "os_exploration": EXPLORATION},
        "machine": machine_info(),
        "games": {},
    }
    def save():
        out.write_text(json.dumps(results, indent=1))

    for key in games:
        label, name, params = GAMES[key]
        game = pyspiel.load_game(name, params)
        start = time.perf_counter()
        tree = jaxsolve.compile_game(game)
        build_s = time.perf_counter() - start
        overhead = loop_overhead_us(game)
        utilities = np.asarray(tree.utilities)
        payoff_scale = float(max(utilities.max(), -utilities.min()))  # max |payoff|
        rtol, atol = check_tolerance(dtype, payoff_scale)
        entry = results["games"][key] = {
            "label": label, "pyspiel": [name, params], "tree_build_s": build_s,
            "check_tolerance": {"rtol": rtol, "atol": atol, "payoff_scale": payoff_scale},
            "num_nodes": tree.sizes.num_nodes, "num_infosets": tree.sizes.num_infosets,
            "cpp_loop_overhead_us": overhead, "throughput": {}, "equal_time": {}}
        print(f"\n== {label}: {tree.sizes.num_nodes} histories, {tree.sizes.num_infosets} "
              f"infosets; jaxsolve tree built in {build_s:.2f} s; C++ loop overhead "
              f"{overhead:.2f} µs per call", flush=True)

        for scheme in schemes:
            if args.skip_throughput:
                break
            cpp = Cpp(game, scheme, args.seed)
            ours = [Ours(tree, scheme, b, args.seed, run, evaluate) for b in batch_sizes]
            res = throughput([cpp] + ours, block_s, repeats)
            entry["throughput"][scheme] = res
            save()
            base = res[cpp.label]["samples_per_s"]
            print(f"\n  (a) {SCHEME_LABEL[scheme]}: samples (per-player traversals) per "
                  f"second, median of {repeats} blocks of ~{block_s:g} s")
            print(f"  {'contestant':<26}{'samples/s':>12}{'vs C++':>9}{'setup s':>10}"
                  f"{'compile s':>11}{'per block':>11}")
            for lbl, r in res.items():
                print(f"  {lbl:<26}{r['samples_per_s']:>12.4g}"
                      f"{figure_beside(r['samples_per_s'] / base, 1, 2):>8}x{r['setup_s']:>10.3f}"
                      f"{r['compile_s']:>11.2f}{r['units_per_block']:>11}")

        for scheme in schemes:
            if args.skip_equal_time:
                break
            cpp = Cpp(game, scheme, args.seed)
            ours = [Ours(tree, scheme, b, args.seed, run, evaluate, rule,
                         check_game=None if args.no_check else game)
                    for b, rule in equal_configs]
            for o in ours:
                float(evaluate(tree, o.state))  # compile the evaluation off the clock
            res = equal_time([*ours, cpp], seconds, block_s)
            for o in ours:  # the final point's independent score, as before, at top level
                final = res[o.label]["final"]
                if "pyspiel_exploitability" in final:
                    res[o.label]["pyspiel_exploitability"] = final["pyspiel_exploitability"]
            entry["equal_time"][scheme] = res
            save()
            print(f"\n  (b) {SCHEME_LABEL[scheme]}: exploitability after equal solver time "
                  f"(evaluation off the clock)")
            print(f"  {'contestant':<34}{'seconds':>9}{'samples':>11}{'exploitability':>16}"
                  f"{'pyspiel check':>15}{'|diff|':>10}")
            for lbl, r in res.items():
                for p in r["points"]:
                    check = p.get("pyspiel_exploitability")
                    cells = ""
                    if check is not None:
                        gap = compare_check(p["exploitability"], check, rtol, atol)
                        diff, p["check_mismatch"] = gap["abs_diff"], gap["mismatch"]
                        flag = " MISMATCH" if p["check_mismatch"] else ""
                        cells = f"{check:>15.4g}{diff:>10.2g}{flag}"
                    elif "pyspiel_error" in p:
                        cells = f"{'n/a':>15}  ({p['pyspiel_error']})"
                    print(f"  {lbl:<34}{p['seconds']:>9.2f}{p['samples']:>11.3g}"
                          f"{p['exploitability']:>16.4g}{cells}")
            if args.no_check:
                print(f"  pyspiel check off (--no-check): the ratios below use "
                      f"jaxsolve.exploitability ({dtype}) against C++'s pyspiel.exploitability "
                      "(float64)")
            else:
                print(f"  exploitability: jaxsolve.exploitability ({dtype}); pyspiel check: "
                      f"pyspiel.exploitability (float64) of the same policy, at every point\n"
                      f"  |diff| = |exploitability - pyspiel check|, MISMATCH when > "
                      f"{rtol:g} * pyspiel check + {atol:g}; ratios use the pyspiel check")
            theirs = res[cpp.label]["final"]
            for o in ours:
                mine = res[o.label]["final"]
                v = res[o.label]["comparison"] = equal_time_comparison(mine, theirs, rtol,
                                                                       atol)
                if v["source"] == "pyspiel":
                    source = "pyspiel score of our policy"
                    if v["mismatch"]:
                        source += (f"; MISMATCH: jaxsolve.exploitability "
                                   f"{v['jaxsolve_exploitability']:.6g}, "
                                   f"|diff| {v['abs_diff']:.2g} > {v['tolerance']:.2g}")
                else:
                    source = (f"jaxsolve.exploitability ({dtype}), no independent score: "
                              f"{v['fallback_reason']}")
                print(f"  ratio {o.label} / C++ at {seconds:g} s: {v['ratio_text']} ({source}; "
                      f"final points at {mine['seconds']:.2f} s and {theirs['seconds']:.2f} s)")
            save()

    results["machine"]["load_average_end"] = list(os.getloadavg())
    save()

    if results["games"] and not args.skip_throughput:
        print("\nSamples-per-second ratio jaxsolve / C++ (median blocks)")
        head = f"  {'game':<18}{'scheme':<8}" + "".join(f"{'B=' + str(b):>10}" for b in batch_sizes)
        print(head)
        for g in results["games"].values():
            for scheme, res in g["throughput"].items():
                base = next(r for r in res.values() if r["batch_size"] is None)["samples_per_s"]
                cells = "".join(f"{figure_beside(r['samples_per_s'] / base, 1, 2):>9}x"
                                for r in res.values() if r["batch_size"] is not None)
                print(f"  {g['label']:<18}{scheme.upper():<8}{cells}")
    print(f"\nmachine: {results['machine']['cpu']}, {results['machine']['cores']} cores, "
          f"load {results['machine']['load_average'][0]:.2f} -> "
          f"{results['machine']['load_average_end'][0]:.2f}; jax "
          f"{results['machine']['jax']} ({results['machine']['backend']}), open_spiel "
          f"{results['machine']['open_spiel']}")
    print(f"wrote {where_written(out)}")
    return 0


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    sys.exit(main())
