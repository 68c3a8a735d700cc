"""Re-solving every public state of one depth, by each gadget, against blueprints from
uniform to nearly solved, measured in the full game.

    python experiments/resolving.py               # Leduc (two depths), liar's dice 1x6: ~10 min on 2 cores
    python experiments/resolving.py --quick       # Leduc at one depth, two blueprints: a smoke run

For each game, depth, blueprint (uniform, then CFR+'s average after 10, 100 and 1,000
iterations) and method ("unsafe", "resolve", "max_margin"), `jaxsolve.subgames.resolve`
re-solves both players at the depth with CFR+ (`--iterations` on each gadget tree)
and the full game's exploitability (NashConv / 2) is computed before and after, with
the gadgets' own bound on the rise and the seconds per call (building the gadget
trees, solving them, the bound; the first blueprint's call compiles, the others
reuse it, and the median of those is reported).

Then the speed of one call per depth: Leduc's public states of one depth re-solved
for one player as one gadget tree, against a Python loop solving each state's
gadget alone (each with its own compiled program), both timed after a first pass
that compiles (medians of 7).

float64 (`jax_enable_x64`). Writes results/local/resolving.json (`--publish`:
results/resolving.json, read by the docs' "Public states and subgames" page).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing jaxsolve
    sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import jaxsolve  # noqa: E402
from experiments import machine  # noqa: E402
from jaxsolve import games  # noqa: E402

GAMES = {
    "leduc": ("Leduc poker", lambda: jaxsolve.compile_game(games.load("leduc_poker")), (3, 6)),
    "liars": ("liar's dice 1x6", lambda: jaxsolve.builders.liars_dice((1, 1), 6), (5,)),
}
BLUEPRINTS = (0, 10, 100, 1000)  # CFR+ iterations; 0 is the uniform policy
METHODS = ("unsafe", "resolve", "max_margin")
REPEATS = 7  # timings of the one call and of the loop: their medians


def blueprints(tree, counts):
    """{CFR+ iterations: the average policy after them (0: uniform)}."""
    solver = jaxsolve.cfr_plus()
    state, done, out = solver.init(tree), 0, {}
    for n in counts:
        if n == 0:
            out[n] = np.asarray(jaxsolve.uniform_policy(tree))
            continue
        state = jaxsolve.run(solver, tree, state, n - done)
        done = n
        out[n] = np.asarray(jaxsolve.average_policy(tree, state))
    return out


def timed(fn):
    """(fn(), its seconds until its arrays are ready)."""
    start = time.perf_counter()
    out = fn()
    jax.block_until_ready(out.policy if hasattr(out, "policy") else out)
    return out, time.perf_counter() - start


def one_call_against_a_loop(tree, depth, iterations, player=1):
    """(seconds of one gadget tree for every state, seconds of a loop of one gadget per
    state), both compiled, for the "resolve" gadget of `player` under the uniform
    blueprint."""
    uniform = jaxsolve.uniform_policy(tree)
    solver = jaxsolve.cfr_plus()
    states = jaxsolve.subgames.with_decisions(tree, depth)

    def solve(g):
        return jaxsolve.average_policy(g.tree, jaxsolve.run(solver, g.tree,
                                                            solver.init(g.tree), iterations))
    union = jaxsolve.subgames.gadget(tree, states, uniform, player)
    alone = [jaxsolve.subgames.gadget(tree, s, uniform, player) for s in states]
    timed(lambda: solve(union))  # compile
    for g in alone:
        timed(lambda: solve(g))
    one = statistics.median(timed(lambda: solve(union))[1] for _ in range(REPEATS))
    loop = statistics.median(timed(lambda: [solve(g) for g in alone])[1]
                             for _ in range(REPEATS))
    return len(states), one, loop


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="leduc,liars", help=f"of {', '.join(GAMES)}")
    parser.add_argument("--iterations", type=machine.positive(int), default=1000,
                        help="CFR+ iterations on each gadget tree (default 1000)")
    parser.add_argument("--quick", action="store_true",
                        help="Leduc at depth 3, two blueprints, 100 iterations: a smoke run")
    parser.add_argument("--out", help="the report's path (default: see --publish)")
    machine.add_publish_option(parser)
    args = parser.parse_args(argv)
    machine.refuse_published_smoke_run(parser, args)
    keys = ["leduc"] if args.quick else args.games.split(",")
    unknown = [k for k in keys if k not in GAMES]
    if unknown:
        parser.error(f"unknown game(s) {', '.join(unknown)}; choose from {', '.join(GAMES)}")
    iterations = 100 if args.quick else args.iterations
    counts = BLUEPRINTS[:2] if args.quick else BLUEPRINTS
    path = machine.report_path("resolving.json", args.out, args.publish,
                               ROOT / "results/local/resolving_quick.json" if args.quick
                               else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_enable_x64", True)  # float64 from here on; importing sets nothing

    report = {"command": "python experiments/resolving.py " + " ".join(argv or sys.argv[1:]),
              "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "machine": machine.machine_info(), "dtype": "float64", "solver": "cfr+",
              "iterations": iterations, "blueprints": list(counts), "games": {}}
    for key in keys:
        label, build, depths = GAMES[key]
        tree = build()
        plans = blueprints(tree, counts)
        entry = {"label": label, "histories": int(tree.sizes.num_nodes), "depths": {}}
        print(f"== {label}: {tree.sizes.num_nodes:,} histories")
        for depth in depths[:1] if args.quick else depths:
            states = jaxsolve.subgames.with_decisions(tree, depth)
            rows = {}
            for method in METHODS:
                rows[method] = []
                for n, plan in plans.items():
                    done, seconds = timed(lambda: jaxsolve.subgames.resolve(
                        tree, plan, depth, method=method, iterations=iterations))
                    bound = done.nash_conv_bound
                    before = float(jaxsolve.exploitability(tree, plan))
                    after = float(jaxsolve.exploitability(tree, done.policy))
                    rows[method].append({"blueprint": n, "before": before, "after": after,
                                         "bound": bound, "seconds": seconds})
                    print(f"  depth {depth} {method:10s} CFR+ {n:5d}: {before:.4g} -> "
                          f"{after:.4g} ({seconds:.2f} s)")
            warm = {m: statistics.median(r["seconds"] for r in rows[m][1:]) if len(rows[m]) > 1
                    else None for m in METHODS}
            entry["depths"][str(depth)] = {"states": len(states), "rows": rows,
                                           "seconds_compiled": warm}
        report["games"][key] = entry
        path.write_text(json.dumps(report, indent=1))
    if "leduc" in keys:
        tree = GAMES["leduc"][1]()
        depth = GAMES["leduc"][2][-1]
        n, one, loop = one_call_against_a_loop(tree, depth, iterations)
        report["one_call"] = {"game": "Leduc poker", "depth": depth, "states": n,
                              "method": "resolve", "player": 1, "one_call_seconds": one,
                              "loop_seconds": loop}
        print(f"Leduc depth {depth}, {n} states: one call {one:.3f} s, a loop {loop:.3f} s "
              f"({loop / one:.1f}x)")
    path.write_text(json.dumps(report, indent=1))
    print(f"wrote {machine.where_written(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
