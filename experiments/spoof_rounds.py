"""Spoof: the game value against the round limit `max_rounds` = 1..8.

    python experiments/spoof_rounds.py           # max_rounds 1..8, cap 20,000 iterations
    python experiments/spoof_rounds.py --quick   # max_rounds 1..6, cap 5,000

For each `max_rounds`, CFR+ (float64) runs in chunks of 100 iterations until the
exploitability (NashConv / 2) of its average strategy is below 1e-4, or the cap. The
value reported is Player 0's (the toggler's) expected payoff under that strategy;
it is within 2 x exploitability of the true game value (|u0 - v*| <= NashConv in a
two-player zero-sum game). Player 1 sets the starting arrangement
(shuffle_initial=False, the game's default); the draw after `max_rounds` pays 0.

Writes results/spoof_rounds.json and results/spoof_rounds.png.
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
sys.path.insert(0, ROOT)

from machine import positive  # noqa: E402  (experiments/machine.py)
import jaxsolve  # noqa: E402
from jaxsolve import games  # noqa: E402

RUN = jax.jit(jaxsolve.run, static_argnums=(0,))
AVERAGE = jax.jit(jaxsolve.average_policy)
EXPLOIT = jax.jit(jaxsolve.exploitability)
VALUE = jax.jit(jaxsolve.policy_value)
TARGET, CHUNK = 1e-4, 100


def solve(rounds, cap, shuffle):
    t0 = time.perf_counter()
    tree = jaxsolve.compile_game(games.load("spoof", max_rounds=rounds, shuffle_initial=shuffle))
    compile_s = time.perf_counter() - t0
    solver = jaxsolve.cfr_plus()
    state = solver.init(tree)
    t0 = time.perf_counter()
    while True:
        state = RUN(solver, tree, state, CHUNK)
        policy = AVERAGE(tree, state)
        expl = float(EXPLOIT(tree, policy))
        if expl < TARGET or int(state.iteration) >= cap:
            break
    return dict(max_rounds=rounds, infosets=tree.sizes.num_infosets,
                terminals=tree.sizes.num_terminals, iterations=int(state.iteration),
                exploitability=expl, value=float(VALUE(tree, policy)[0]),
                compile_game_s=compile_s, solve_s=time.perf_counter() - t0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-rounds", type=positive(int), default=8)
    ap.add_argument("--cap", type=positive(int), default=20_000)
    ap.add_argument("--shuffle-initial", action="store_true",
                    help="chance, not Player 1, sets the starting arrangement")
    ap.add_argument("--out", default=os.path.join(ROOT, "results"),
                    help="folder for the JSON and PNG files (default results/)")
    args = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # float64 from here on; importing sets nothing
    os.makedirs(args.out, exist_ok=True)
    top, cap = (min(args.max_rounds, 6), min(args.cap, 5000)) if args.quick else (args.max_rounds, args.cap)
    if (top, cap) != (args.max_rounds, args.cap):
        print(f"note: --quick runs max_rounds 1..{top} with a cap of {cap:,} iterations "
              "(leave out --quick for more)", flush=True)

    print(f"{'rounds':>6}{'infosets':>10}{'terminals':>11}{'iters':>8}{'value (P0)':>12}"
          f"{'exploit.':>11}{'solve s':>9}")
    rows = []
    for r in range(1, top + 1):
        row = solve(r, cap, args.shuffle_initial)
        rows.append(row)
        print(f"{r:>6}{row['infosets']:>10}{row['terminals']:>11}{row['iterations']:>8}"
              f"{row['value']:>+12.6f}{row['exploitability']:>11.1e}{row['solve_s']:>9.2f}", flush=True)
        with open(os.path.join(args.out, "spoof_rounds.json"), "w") as f:
            json.dump(dict(solver="cfr+", target_exploitability=TARGET, cap=cap,
                           shuffle_initial=args.shuffle_initial, quick=args.quick, rows=rows), f, indent=1)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = [r["max_rounds"] for r in rows]
    v = np.array([r["value"] for r in rows])
    e = np.array([2 * r["exploitability"] for r in rows])
    ax.errorbar(x, v, yerr=e, marker="o", capsize=3)
    ax.set_xlabel("max_rounds")
    ax.set_ylabel("game value for Player 0 (toggler)")
    ax.set_title("Spoof: value against the round limit (CFR+, bar = NashConv bound)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "spoof_rounds.png"), dpi=120)
    print(f"\nwrote {args.out}/spoof_rounds.json and spoof_rounds.png")


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
