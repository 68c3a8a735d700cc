"""Maneuver detection: equilibrium, value, and how they move as the sensors get better
or worse.

    python experiments/maneuver_detection.py           # 41 factors, 20,000 CFR+ iterations
    python experiments/maneuver_detection.py --quick   # 21 factors, 5,000 iterations

The default game (`jaxsolve.games.maneuver_detection`) is solved with CFR+ (float64)
and checked against the independent sequence-form LP (tests/reference). Then every
detection probability is multiplied by a factor s (s = 0.05 .. 1.05; 1.05 x 0.95,
the largest default, stays below 1, so every game has the same chance outcomes and
tree shape), the games are stacked with `jaxsolve.stack` and solved in one vmapped
call; for each s: the Operator's strategy per situation, the Observer's
allocation, the value to the Operator and the exploitability.

Writes results/maneuver_detection.json and results/maneuver_detection.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from machine import positive  # noqa: E402  (experiments/machine.py)
import jaxsolve  # noqa: E402
from jaxsolve import games  # noqa: E402
from jaxsolve.games.maneuver_detection import (  # noqa: E402
    ALLOCATION_NAMES, DEFAULT_DETECTION_PROBS, INTENSITY_NAMES)


def solve_batch(trees, iters):
    batch = jaxsolve.stack(trees)
    solver = jaxsolve.cfr_plus()

    def solve(t):
        policy = jaxsolve.average_policy(t, jaxsolve.run(solver, t, solver.init(t), iters))
        return policy, jaxsolve.policy_value(t, policy)[0], jaxsolve.exploitability(t, policy)

    return [np.asarray(x) for x in jax.block_until_ready(jax.jit(jax.vmap(solve))(batch))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--iters", type=positive(int), default=20_000)
    ap.add_argument("--out", default=os.path.join(ROOT, "results"),
                    help="folder for the JSON and PNG files (default results/)")
    args = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # float64 from here on; importing sets nothing
    os.makedirs(args.out, exist_ok=True)
    iters = min(args.iters, 5000) if args.quick else args.iters
    factors = np.round(np.linspace(0.05, 1.05, 21 if args.quick else 41), 6)
    if 1.0 not in factors:
        factors = np.sort(np.append(factors, 1.0))

    base = np.asarray(DEFAULT_DETECTION_PROBS)
    trees = [jaxsolve.compile_game(games.load("maneuver_detection", detection_probs=base * s))
             for s in factors]
    names = trees[0].names.infosets
    t0 = time.perf_counter()
    policies, values, expl = solve_batch(trees, iters)
    seconds = time.perf_counter() - t0
    k = int(np.argmin(np.abs(factors - 1.0)))

    out = dict(solver="cfr+", iterations=iters, factors=factors.tolist(),
               seconds_incl_compile=seconds, infosets=list(names),
               default=dict(strategy=jaxsolve.table(trees[k], policies[k], digits=6),
                            value=float(values[k]), exploitability=float(expl[k])),
               sweep=dict(value=values.tolist(), exploitability=expl.tolist(),
                          policy={n: policies[:, i].tolist() for i, n in enumerate(names)}))
    try:
        from reference.sequence_form_lp import solve_zero_sum
        out["default"]["lp_value"] = solve_zero_sum(games.load("maneuver_detection")).value
    except ImportError as err:  # scipy missing
        out["default"]["lp_value"] = f"skipped: {err}"

    d = out["default"]
    print(f"Default game (CFR+, {iters} iterations): value {d['value']:+.6f}, LP value "
          f"{d['lp_value']:+.6f}, exploitability {d['exploitability']:.1e}")
    for info, row in d["strategy"].items():
        print(f"  {info:<22}" + "  ".join(f"{a} {p:.3f}" for a, p in row.items() if p > 5e-4))

    print(f"\nDetection probabilities x s ({len(factors)} games, one vmapped call, "
          f"{seconds:.1f} s incl. compile)")
    idx = {n: i for i, n in enumerate(names)}
    op_n, op_m, obs = idx["situation=N"], idx["situation=M"], idx["operator_acted"]
    head = ("s", "value", "expl.", "N: " + "/".join(x[0] for x in INTENSITY_NAMES),
            "M: " + "/".join(x[0] for x in INTENSITY_NAMES), "Observer: W/S/M/L/P")
    print(f"{head[0]:>5}{head[1]:>9}{head[2]:>9}  {head[3]:<24}{head[4]:<24}{head[5]}")
    fmt = lambda row, n: "/".join(f"{x:.2f}" for x in row[:n])  # noqa: E731
    step = max(1, len(factors) // 10)
    for b in sorted(set(range(0, len(factors), step)) | {k, len(factors) - 1}):
        print(f"{factors[b]:>5.2f}{values[b]:>+9.4f}{expl[b]:>9.1e}  "
              f"{fmt(policies[b, op_n], 4):<24}{fmt(policies[b, op_m], 4):<24}{fmt(policies[b, obs], 5)}")

    with open(os.path.join(args.out, "maneuver_detection.json"), "w") as f:
        json.dump(out, f, indent=1, default=float)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(19, 4.2))
    axes[0].plot(factors, values, marker=".")
    axes[0].axvline(1.0, color="k", ls=":", lw=0.8)
    axes[0].set_title("value to the Operator")
    for ax, i, title, labels, n in ((axes[1], op_n, "Operator, situation No-maneuver",
                                     INTENSITY_NAMES, 4),
                                    (axes[2], op_m, "Operator, situation Maneuver",
                                     INTENSITY_NAMES, 4),
                                    (axes[3], obs, "Observer allocation", ALLOCATION_NAMES, 5)):
        ax.stackplot(factors, policies[:, i, :n].T, labels=labels)
        ax.axvline(1.0, color="k", ls=":", lw=0.8)
        ax.set_ylim(0, 1)
        ax.set_title(title)
        ax.legend(fontsize=7, loc="upper left")
    for ax in axes:
        ax.set_xlabel("detection-probability factor s")
    fig.suptitle(f"Maneuver detection: equilibrium (CFR+, {iters} it.) as detection "
                 f"probabilities scale; s = 1 is the default game")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "maneuver_detection.png"), dpi=110)
    print(f"\nwrote {args.out}/maneuver_detection.json and maneuver_detection.png")


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
