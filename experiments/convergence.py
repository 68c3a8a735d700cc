"""Convergence against wall-clock time and against histories touched.

    python experiments/convergence.py                       # 4 games x 6 solvers, 20 s each
    python experiments/convergence.py --quick               # ~2 s each: a smoke run
    python experiments/convergence.py --games leduc --solvers cfr+,es-mccfr --seconds 60
    python experiments/convergence.py --batch-size 1024 --x64

Solvers (`--solvers`, comma-separated): cfr (vanilla CFR, simultaneous updates),
cfr+, dcfr (1.5, 0, 2), pcfr+ (full width, alternating updates), os-mccfr (outcome
sampling, exploration 0.6) and es-mccfr (external sampling), the last two with
`--batch-size` B samples per player per step (default 256).

Games (`--games`): kuhn (Kuhn poker), leduc (Leduc poker), conjunction
(`jaxsolve.games.load("conjunction")`, general-sum) and liars (liar's dice, one
die each, 4 sides). Kuhn, Leduc and liar's dice come from OpenSpiel through
`jaxsolve.compile_game`; without OpenSpiel, from `jaxsolve.games` (Kuhn, Leduc)
and `jaxsolve.builders.liars_dice` (the same tree, array for array).

Metric. `jaxsolve.exploitability` of the average policy (NashConv / 2, OpenSpiel's
definition) on the zero-sum games; `jaxsolve.nash_conv` on conjunction, which is
general-sum (the sum over players of what a best response gains).

Histories touched (the x axis of the second panel): one visit per history per
player traversal.

* full-width solvers: one iteration walks every history (all nodes: decision,
  chance and terminal) once per traversal. The alternating solvers (cfr+, dcfr,
  pcfr+) make one traversal per player per iteration, P x num_nodes; simultaneous
  `jaxsolve.cfr()` serves all players with one pass, num_nodes per iteration. Which
  one a solver is, is read from its knobs (`solver.step.keywords["alternating"]`).
* sampling solvers: `sampling.histories_touched(state)`, the histories their
  samples actually visited (inner nodes and reached leaves, over all B samples of
  every player's traversal), counted by the solver itself as a compensated sum
  (exact to a float ulp, float32 too). Where `traversal="auto"` draws a batch
  as visit counts (`jaxsolve.visit_counts`), this is still what the B samples
  visited, while the computation passes over the whole tree once per player: the
  seconds panel shows that cost.

Timing. Each (game, solver) first compiles `jax.jit(jaxsolve.run, static_argnums=0)`
with a zero-iteration call (the count is traced, so every later chunk reuses that
executable) and the jitted evaluation; both compile times are recorded but not
counted. It then runs in chunks ending at log-spaced iteration checkpoints (each
`--growth` times the last, at least one more), timing only the `run` calls
(`jax.block_until_ready`), and evaluates the average policy after each chunk,
outside the clock. It stops once the clock reaches `--seconds` (the last chunk is
shortened, from the measured rate, to end near the budget). Sampling solvers start
from `jax.random.PRNGKey(--seed)`.

Outputs: `results/convergence.json` (every checkpoint: iteration, seconds,
histories, value; plus sizes, compile and evaluation times and machine info) and
`results/convergence_<game>.png`, two log-log panels per game (value against
seconds, against histories touched); `--quick` writes `convergence_quick*` instead
so a smoke run never overwrites a real one. A summary table per game gives each
solver's final value and the time to first reach each `--thresholds` value (at
checkpoint resolution; "-" = not reached within the budget).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing jaxsolve
    sys.path.insert(0, str(ROOT))

GAMES = {
    "kuhn": "Kuhn poker",
    "leduc": "Leduc poker",
    "conjunction": "conjunction (general-sum)",
    "liars": "liar's dice 1 die, 4 sides",
}
SOLVERS = ("cfr", "cfr+", "dcfr", "pcfr+", "os-mccfr", "es-mccfr")
SAMPLING = ("os-mccfr", "es-mccfr")


# ----------------------------------------------------------------- setup
from machine import machine_info, positive  # noqa: E402  (experiments/machine.py)


def build_game(key: str):
    """(GameTree, source) for a game key."""
    import jaxsolve  # noqa: PLC0415

    if key == "conjunction":
        from jaxsolve import games  # noqa: PLC0415
        return (jaxsolve.compile_game(games.load("conjunction")),
                "jaxsolve.games.load('conjunction')")
    try:
        import pyspiel  # noqa: PLC0415
    except ImportError:
        pyspiel = None
    spiel = {"kuhn": ("kuhn_poker", {}), "leduc": ("leduc_poker", {}),
             "liars": ("liars_dice", {"numdice": 1, "dice_sides": 4})}[key]
    if pyspiel is not None:
        return (jaxsolve.compile_game(pyspiel.load_game(*spiel)),
                f"pyspiel.load_game{spiel!r}")
    if key == "liars":
        from jaxsolve.builders import liars_dice  # noqa: PLC0415
        return liars_dice((1, 1), 4), "jaxsolve.builders.liars_dice((1, 1), 4)"
    from jaxsolve import games  # noqa: PLC0415
    name = spiel[0]
    return jaxsolve.compile_game(games.load(name)), f"jaxsolve.games.load({name!r})"


def make_solver(name: str, batch_size: int):
    import jaxsolve  # noqa: PLC0415

    return {
        "cfr": jaxsolve.cfr, "cfr+": jaxsolve.cfr_plus, "dcfr": jaxsolve.dcfr,
        "pcfr+": jaxsolve.pcfr_plus,
        "os-mccfr": lambda: jaxsolve.outcome_sampling(batch_size=batch_size, exploration=0.6),
        "es-mccfr": lambda: jaxsolve.external_sampling(batch_size=batch_size),
    }[name]()


def histories_per_iteration(solver, tree) -> int:
    """Full-width convention: num_nodes per traversal, P traversals per iteration if
    the solver alternates, one if it updates all players simultaneously."""
    alternating = getattr(solver.step, "keywords", {}).get("alternating", True)
    return tree.sizes.num_nodes * (tree.sizes.num_players if alternating else 1)


# ----------------------------------------------------------------- one run
def converge(tree, name: str, solver, evaluate, run, *, seconds: float, growth: float,
             seed: int) -> dict:
    """Runs `solver` on `tree` for `seconds` of solver time in chunks ending at
    log-spaced checkpoints; evaluates after each chunk, off the clock."""
    from jaxsolve.sampling import histories_touched  # noqa: PLC0415  (lazy, as all jaxsolve here)
    import jax  # noqa: PLC0415

    sampling = name in SAMPLING
    start = time.perf_counter()
    state = solver.init(tree, jax.random.PRNGKey(seed)) if sampling else solver.init(tree)
    state = jax.block_until_ready(state)
    init_s = time.perf_counter() - start

    start = time.perf_counter()
    initial = float(evaluate(tree, state))  # uniform policy; compiles the evaluation
    eval_compile_s = time.perf_counter() - start

    start = time.perf_counter()
    state = jax.block_until_ready(run(solver, tree, state, 0))  # compile, no iterations
    compile_s = time.perf_counter() - start

    per_iter = None if sampling else histories_per_iteration(solver, tree)
    points, done, spent, eval_s = [], 0, 0.0, 0.0
    while spent < seconds:
        target = max(done + 1, math.ceil(done * growth))
        n = target - done
        if done:
            rate = spent / done
            n = max(1, min(n, int((seconds - spent) / rate)))
        start = time.perf_counter()
        state = jax.block_until_ready(run(solver, tree, state, n))
        spent += time.perf_counter() - start
        done += n
        start = time.perf_counter()
        value = float(evaluate(tree, state))
        touched = float(histories_touched(state)) if sampling else float(per_iter * done)
        eval_s += time.perf_counter() - start
        points.append({"iteration": done, "seconds": spent, "histories": touched,
                       "value": value})
    return {
        "solver": solver.name, "sampling": sampling, "init_s": init_s, "compile_s": compile_s,
        "evaluation_compile_s": eval_compile_s, "histories_per_iteration": per_iter, "initial_value": initial,
        "evaluation_s": eval_s, "evaluations": len(points), "points": points,
        "final": points[-1] if points else None,
    }


def time_to(points, threshold):
    for p in points:
        if p["value"] <= threshold:
            return p["seconds"]
    return None


# ----------------------------------------------------------------- outputs
FLOAT_FLOOR = 1e-9  # the plot's floor is at most half the least positive value, and not below this


def plot(path: Path, label: str, metric: str, runs: dict, seconds: float) -> None:
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    # A log axis has no room for 0: values at or below the round-off floor (NashConv of
    # an equilibrium reads a few 1e-8 either side of 0 in float32) are drawn on the
    # floor, a dotted line, rather than dropped (a line ending early reads as a stop).
    values = [p["value"] for r in runs.values() for p in r["points"]]
    floor = max(min((v for v in values if v > 0), default=1.0), FLOAT_FLOOR) / 2
    for r in runs.values():
        pts = r["points"]
        if not pts:
            continue
        style = "--" if r["sampling"] else "-"
        xs = [p["seconds"] for p in pts]
        hs = [p["histories"] for p in pts]
        ys = [max(p["value"], floor) for p in pts]
        left.plot(xs, ys, style, marker=".", markersize=3, label=r["solver"])
        right.plot(hs, ys, style, marker=".", markersize=3, label=r["solver"])
    for ax, xlabel in ((left, "solver wall-clock seconds (no compile, no evaluation)"),
                       (right, "histories touched (1 per history per player traversal)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(metric)
        ax.grid(True, which="both", alpha=0.3)
        ax.axhline(floor, color="grey", ls=":", lw=0.8)
    left.text(0.01, 0.01, f"dotted: {floor:.1e}, where values <= 0 (round-off) are drawn",
              transform=left.transAxes, fontsize=7, color="grey")
    left.legend(fontsize=8)
    fig.suptitle(f"{label}: {metric} of the average policy ({seconds:g} s per solver)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt(x, digits=3):
    if x is None:
        return "-"
    return f"{x:.{digits}g}"


def summary(results: dict, thresholds) -> str:
    lines = []
    for g in results["games"].values():
        lines.append(f"\n{g['label']}  ({g['metric']}; {g['sizes']['num_nodes']} histories, "
                     f"{g['sizes']['num_infosets']} infosets; uniform policy "
                     f"{fmt(g['initial_value'])})")
        head = (f"  {'solver':<14}{'iters':>9}{'histories':>11}{'seconds':>9}{'compile s':>10}"
                f"{'final':>11}" + "".join(f"{'t<=' + fmt(t, 2):>10}" for t in thresholds))
        lines.append(head)
        for r in g["runs"].values():
            f = r["final"]
            lines.append(
                f"  {r['solver']:<14}{f['iteration']:>9}{f['histories']:>11.3g}"
                f"{f['seconds']:>9.2f}{r['compile_s']:>10.2f}{f['value']:>11.3g}"
                + "".join(f"{fmt(time_to(r['points'], t)):>10}" for t in thresholds))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", default=",".join(GAMES),
                        help=f"comma-separated, from {','.join(GAMES)}")
    parser.add_argument("--solvers", default=",".join(SOLVERS),
                        help=f"comma-separated, from {','.join(SOLVERS)}")
    parser.add_argument("--batch-size", "-B", type=positive(int), default=256,
                        help="samples per player per step of the sampling solvers")
    parser.add_argument("--seconds", type=positive(float), default=None,
                        help="solver time per (game, solver); default 20, --quick 2")
    parser.add_argument("--quick", action="store_true", help="2 s per (game, solver)")
    parser.add_argument("--growth", type=float, default=1.3,
                        help="ratio between successive iteration checkpoints")
    parser.add_argument("--thresholds", default="0.1,0.01,0.001",
                        help="values whose time to reach the summary lists")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON path (default results/convergence[_quick].json); "
                             "the PNGs go beside it")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)

    games = [g.strip() for g in args.games.split(",") if g.strip()]
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    for g in games:
        if g not in GAMES:
            parser.error(f"unknown game {g!r}; known: {', '.join(GAMES)}")
    for s in solvers:
        if s not in SOLVERS:
            parser.error(f"unknown solver {s!r}; known: {', '.join(SOLVERS)}")
    if args.growth <= 1:
        parser.error("--growth must be > 1")
    seconds = args.seconds if args.seconds is not None else (2.0 if args.quick else 20.0)
    try:
        thresholds = [float(t) for t in args.thresholds.split(",") if t.strip()]
    except ValueError:
        parser.error(f"--thresholds must be comma-separated numbers, got {args.thresholds!r}")
    if not all(t > 0 and math.isfinite(t) for t in thresholds):
        parser.error(f"--thresholds must be finite numbers above 0, got {args.thresholds!r}")
    suffix = "_quick" if args.quick else ""
    out = args.out or ROOT / "results" / f"convergence{suffix}.json"
    if out.is_dir():  # refused now, not after minutes of solving
        parser.error(f"--out {out} is a folder; give the JSON file's path (the PNGs go "
                     "beside it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.stem

    import jax  # noqa: PLC0415
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    import jaxsolve  # noqa: PLC0415

    run = jax.jit(jaxsolve.run, static_argnums=0)
    metrics = {
        "exploitability": jax.jit(lambda tree, state: jaxsolve.exploitability(
            tree, jaxsolve.average_policy(tree, state))),
        "NashConv": jax.jit(lambda tree, state: jaxsolve.nash_conv(
            tree, jaxsolve.average_policy(tree, state))),
    }

    results = {
        "description": "exploitability (NashConv on general-sum games) of the average "
                       "policy against solver wall-clock time and histories touched",
        "conventions": {
            "seconds": "time inside jitted jaxsolve.run calls only (after a zero-iteration "
                       "compile call); evaluation off the clock",
            "histories": "one visit per history per player traversal: alternating full-width "
                         "solvers P x num_nodes per iteration, simultaneous cfr num_nodes per "
                         "iteration; sampling solvers histories_touched(state) (histories their "
                         "samples "
                         "visited, over all samples and players)",
            "exploitability": "NashConv / num_players (OpenSpiel's definition)",
        },
        "config": {"seconds": seconds, "batch_size": args.batch_size, "growth": args.growth,
                   "seed": args.seed, "quick": args.quick, "thresholds": thresholds,
                   "os_exploration": 0.6},
        "machine": machine_info(),
        "games": {},
    }

    for key in games:
        start = time.perf_counter()
        tree, source = build_game(key)
        build_s = time.perf_counter() - start
        metric = "NashConv" if tree.sizes.utility_sum is None else "exploitability"
        entry = results["games"][key] = {
            "label": GAMES[key], "source": source, "build_s": build_s, "metric": metric,
            "sizes": {"num_players": tree.sizes.num_players, "num_nodes": tree.sizes.num_nodes,
                      "num_infosets": tree.sizes.num_infosets,
                      "num_terminals": tree.sizes.num_terminals},
            "initial_value": None, "runs": {},
        }
        print(f"== {GAMES[key]}: {tree.sizes.num_nodes} histories, "
              f"{tree.sizes.num_infosets} infosets, metric {metric}", flush=True)
        for name in solvers:
            solver = make_solver(name, args.batch_size)
            r = converge(tree, name, solver, metrics[metric], run, seconds=seconds,
                         growth=args.growth, seed=args.seed)
            entry["runs"][name] = r
            entry["initial_value"] = r["initial_value"]
            f = r["final"]
            print(f"  {r['solver']:<14} {f['iteration']:>8} iters  {f['histories']:10.3g} "
                  f"histories  {f['seconds']:6.2f} s (+{r['compile_s']:.2f} s compile, "
                  f"{r['evaluation_s']:.2f} s eval)  {metric} {f['value']:.4g}", flush=True)
            out.write_text(json.dumps(results, indent=1))
        if not args.no_plot:
            png = out.parent / f"{stem}_{key}.png"
            plot(png, GAMES[key], metric, entry["runs"], seconds)
            entry["plot"] = str(png)
            print(f"  wrote {png}", flush=True)
        out.write_text(json.dumps(results, indent=1))

    results["machine"]["load_average_end"] = list(os.getloadavg())
    out.write_text(json.dumps(results, indent=1))
    print("\nSummary: final value after the budget; seconds (solver time, checkpoint "
          "resolution) to first reach each threshold")
    print("Histories touched: one per history per player traversal (alternating "
          "full-width: P x num_nodes per iteration; cfr: num_nodes; sampling: "
          "histories_touched(state))")
    print(summary(results, thresholds))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    sys.exit(main())
