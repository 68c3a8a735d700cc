"""Conjunction negotiation: the equilibrium, iterations to 0.001, costs and variants.

    python experiments/conjunction.py           # full (about a minute on 2 CPU cores)
    python experiments/conjunction.py --quick   # smaller sweep grid, lower iteration cap

1. The equilibrium: vanilla CFR (`jaxsolve.cfr()`, simultaneous updates, uniform
   averaging), 20,000 iterations; the six strategies (Alice's 2 infosets, Bob's 4),
   each player's expected cost and best-response gain (per-player exploitability).
2. Iterations to 0.001: the iterations CFR, CFR+, DCFR(1.5, 0, 2) and PCFR+ need before
   the exploitability (NashConv / 2, OpenSpiel's definition) of their average strategy
   falls below 0.001. The exploitability is evaluated after *every* iteration inside one
   compiled scan (the tree is tiny), so the count is exact; "first" is the first
   iteration below the threshold, "stays" the first after which it never goes back above
   it within the cap. The solvers do not reach the same equilibrium: the table also
   gives each one's costs and Alice's strategy at the cap.
3. How the equilibrium follows the costs: a sweep. The High-priority maneuver cost m
   (default 3) and the collision cost c (both hold, default 10) vary on a grid; every
   other entry stays the default table's. All the tables are solved in ONE vmapped
   call over `jaxsolve.sweep(tree, utilities=[B, Z, P])`, vanilla CFR for 20,000
   iterations as in 1; NashConv is reported per table so that points where CFR has
   not settled (general-sum: no convergence guarantee) are visible.
4. Without the imperfect information (`alice_sees_bob_priority=True`: Alice sees
   Bob's priority) and with a third action (`num_actions=3`: maneuver up, down or
   hold), against the default game, same solver and iterations.

Writes results/conjunction.json, results/conjunction_sweep.png and
results/conjunction_convergence.png.
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
from jaxsolve.games.conjunction import TWO_ACTION_COSTS  # noqa: E402

RUN = jax.jit(jaxsolve.run, static_argnums=(0,))
AVERAGE = jax.jit(jaxsolve.average_policy)
THRESHOLD = 1e-3
CFR_ITERS = 20_000  # vanilla CFR's iterations: the equilibrium, the variants, the sweep
ALGOS = {"cfr": jaxsolve.cfr, "cfr+": jaxsolve.cfr_plus, "dcfr": jaxsolve.dcfr,
         "pcfr+": jaxsolve.pcfr_plus}


def evaluate(tree, policy):
    values = np.asarray(jaxsolve.policy_value(tree, policy))
    br = np.asarray(jaxsolve.best_response_values(tree, policy))
    gains = br - values
    return dict(expected_cost={"alice": -values[0], "bob": -values[1]},
                best_response_gain={"alice": gains[0], "bob": gains[1]},
                nash_conv=float(gains.sum()), exploitability=float(gains.sum() / 2))


def cfr_equilibrium(params, iters):
    """Vanilla CFR's average strategy on the conjunction game of `params` after `iters`
    iterations, with each player's expected cost and best-response gain."""
    tree = jaxsolve.compile_game(games.load("conjunction", **params))
    solver = jaxsolve.cfr()
    policy = AVERAGE(tree, RUN(solver, tree, solver.init(tree), iters))
    out = dict(params={k: v for k, v in params.items()}, iterations=iters,
               strategy=jaxsolve.table(tree, policy, digits=6), **evaluate(tree, policy))
    return jax.tree_util.tree_map(lambda x: float(x) if isinstance(x, np.floating) else x, out)


# ------------------------------------------------- iterations to 0.001

def exploitability_trace(solver, tree, iters):
    """[iters] exploitability of the average strategy after each iteration, and that
    strategy after the last."""
    def body(state, _):
        state = solver.step(tree, state)
        return state, jaxsolve.exploitability(tree, jaxsolve.average_policy(tree, state))
    state, trace = jax.lax.scan(body, solver.init(tree), None, length=iters)
    return trace, jaxsolve.average_policy(tree, state)


def iterations_to_threshold(tree, cap):
    rows, traces = {}, {}
    for name, make in ALGOS.items():
        solver = make()
        t0 = time.perf_counter()
        trace, policy = jax.jit(exploitability_trace, static_argnums=(0, 2))(solver, tree, cap)
        trace = np.asarray(trace)
        values = np.asarray(jaxsolve.policy_value(tree, policy))
        below = trace < THRESHOLD
        first = int(np.argmax(below)) + 1 if below.any() else None
        above = np.nonzero(~below)[0]
        stays = (int(above[-1]) + 2 if above.size else 1) if below[-1] else None
        rows[name] = dict(solver=solver.name, first=first, stays=stays,
                          exploitability_at_20000=float(trace[min(CFR_ITERS, cap) - 1]),
                          final=float(trace[-1]), cap=cap, seconds=time.perf_counter() - t0,
                          # The solvers do not all end at one equilibrium (README).
                          expected_cost_at_cap={"alice": float(-values[0]), "bob": float(-values[1])},
                          alice_maneuvers_at_cap={k: float(v["Maneuver"]) for k, v in
                                                  jaxsolve.table(tree, policy).items()
                                                  if k.startswith("alice")})
        traces[name] = trace
    return rows, traces


# ------------------------------------------------------- the cost sweep

def terminal_cost_index(tree_of):
    """[Z, P] index into the flattened (2,2,2,2,2) cost table of each terminal's
    utility, read off a tree compiled with costs = 0, 1, ..., 31."""
    probe = tree_of(np.arange(TWO_ACTION_COSTS.size, dtype=float).reshape(TWO_ACTION_COSTS.shape))
    index = np.asarray(probe.utilities).round().astype(int)
    assert np.allclose(np.asarray(probe.utilities), index)
    return index


def cost_table(m_high, collision):
    c = TWO_ACTION_COSTS.copy()
    c[c == -3.0] = -m_high
    c[c == -10.0] = -collision
    return c


def sweep(grid_m, grid_c, iters):
    tree_of = lambda costs: jaxsolve.compile_game(games.load("conjunction", costs=costs))  # noqa: E731
    tree = tree_of(TWO_ACTION_COSTS)
    index = terminal_cost_index(tree_of)
    tables = np.stack([cost_table(m, c) for m in grid_m for c in grid_c])     # [B, 2,2,2,2,2]
    utilities = tables.reshape(len(tables), -1)[:, index]                      # [B, Z, P]
    assert np.allclose(TWO_ACTION_COSTS.reshape(-1)[index], np.asarray(tree.utilities))
    batch, axes = jaxsolve.sweep(tree, utilities=utilities)
    solver = jaxsolve.cfr()

    def solve(t):
        policy = jaxsolve.average_policy(t, jaxsolve.run(solver, t, solver.init(t), iters))
        return policy, jaxsolve.nash_conv(t, policy), jaxsolve.policy_value(t, policy)

    t0 = time.perf_counter()
    policies, nash_conv, values = jax.block_until_ready(
        jax.jit(jax.vmap(solve, in_axes=(axes,)))(batch))
    seconds = time.perf_counter() - t0
    names = list(tree.names.infosets)
    shape = (len(grid_m), len(grid_c))
    maneuver = {n: np.asarray(policies[:, i, 0]).reshape(shape) for i, n in enumerate(names)}
    return dict(tables=len(tables), seconds_incl_compile=seconds, iterations=iters,
                grid_m_high=list(map(float, grid_m)), grid_collision=list(map(float, grid_c)),
                p_maneuver={n: v.tolist() for n, v in maneuver.items()},
                nash_conv=np.asarray(nash_conv).reshape(shape).tolist(),
                expected_cost_alice=(-np.asarray(values[:, 0])).reshape(shape).tolist(),
                expected_cost_bob=(-np.asarray(values[:, 1])).reshape(shape).tolist())


# ------------------------------------------------------------ output

def print_strategies(title, run):
    print(f"\n== {title} ==  (vanilla CFR, {run['iterations']} iterations)")
    for info, row in run["strategy"].items():
        print(f"  {info:<24}" + "  ".join(f"{a} {p:.4f}" for a, p in row.items()))
    ec, g = run["expected_cost"], run["best_response_gain"]
    print(f"  expected cost: Alice {ec['alice']:.4f}, Bob {ec['bob']:.4f}; best-response gain: "
          f"Alice {g['alice']:.2e}, Bob {g['bob']:.2e}; exploitability {run['exploitability']:.2e}")


def plot_sweep(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m, c = np.array(res["grid_m_high"]), np.array(res["grid_collision"])
    panels = [(n, f"P(Maneuver | {n})") for n in res["p_maneuver"]]
    panels.append(("nash_conv", "NashConv (log10)"))
    fig, axes = plt.subplots(2, 4, figsize=(18, 8))
    for ax, (key, title) in zip(axes.flat, panels):
        data = (np.log10(np.maximum(np.array(res["nash_conv"]), 1e-12)) if key == "nash_conv"
                else np.array(res["p_maneuver"][key]))
        im = ax.imshow(data, origin="lower", aspect="auto", cmap="viridis",
                       extent=[c[0], c[-1], m[0], m[-1]],
                       **({} if key == "nash_conv" else dict(vmin=0, vmax=1)))
        ax.plot([10], [3], "r*", ms=12)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("collision cost c (both hold)")
        ax.set_ylabel("High-priority maneuver cost m")
        fig.colorbar(im, ax=ax)
    axes.flat[-1].axis("off")
    fig.suptitle(f"Conjunction: equilibrium (vanilla CFR, {res['iterations']} it.) over "
                 f"{res['tables']} cost tables, one vmapped call; red star: default costs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_convergence(traces, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    # dcfr and pcfr+ coincide here: both play the same pure strategy from iteration 2
    # on and weight the average by t^2. Widths shrink line by line so that a curve
    # drawn over an equal one leaves it visible, and the legend says which are equal.
    drawn = {}
    for i, (name, trace) in enumerate(traces.items()):
        t = np.arange(1, len(trace) + 1)
        same = [other for other, earlier in drawn.items() if np.array_equal(earlier, trace)]
        label = f"{name} (= {same[0]})" if same else name
        ax.loglog(t, np.maximum(trace, 1e-16), lw=max(4.0 - 1.0 * i, 1.0),
                  alpha=0.85, label=label)
        drawn[name] = np.asarray(trace)
    ax.axhline(THRESHOLD, color="k", ls="--", lw=0.8, label="0.001")
    ax.set_xlabel("iteration")
    ax.set_ylabel("exploitability (NashConv / 2)")
    ax.set_title("Conjunction: exploitability of the average strategy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--quick", action="store_true", help="32x32 sweep, 20,000-iteration cap")
    ap.add_argument("--cap", type=positive(int), default=200_000,
                    help="iteration cap of the iterations-to-0.001 comparison "
                         "(default 200,000)")
    ap.add_argument("--out", default=os.path.join(ROOT, "results"),
                    help="folder for the JSON and PNG files (default results/)")
    args = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # float64 from here on; importing sets nothing
    os.makedirs(args.out, exist_ok=True)
    n = 32 if args.quick else 50
    cap = min(args.cap, CFR_ITERS) if args.quick else args.cap
    out = dict(quick=args.quick)

    out["default_game"] = cfr_equilibrium({}, CFR_ITERS)
    print_strategies("the default game", out["default_game"])

    out["variants"] = {"alice_sees_bob_priority": cfr_equilibrium({"alice_sees_bob_priority": True}, CFR_ITERS),
                       "num_actions=3": cfr_equilibrium({"num_actions": 3}, CFR_ITERS)}
    print_strategies("alice_sees_bob_priority=True (Alice sees Bob's priority)", out["variants"]["alice_sees_bob_priority"])
    print_strategies("num_actions=3 (maneuver up, down or hold)", out["variants"]["num_actions=3"])
    print(f"\n{'variant':<28}{'Alice cost':>11}{'Bob cost':>10}{'total':>9}{'exploit.':>11}")
    for name, r in [("default", out["default_game"])] + list(out["variants"].items()):
        a, b = r["expected_cost"]["alice"], r["expected_cost"]["bob"]
        print(f"{name:<28}{a:>11.4f}{b:>10.4f}{a + b:>9.4f}{r['exploitability']:>11.2e}")

    tree = jaxsolve.compile_game(games.load("conjunction"))
    rows, traces = iterations_to_threshold(tree, cap)
    out["iterations_to_0.001"] = rows
    print(f"\nIterations to exploitability < {THRESHOLD} (cap {cap}):")
    print(f"{'solver':<18}{'first':>9}{'stays':>9}{'expl. @20k':>13}{'expl. @cap':>13}"
          f"{'costs @cap (Alice / Bob)':>27}{'P(Alice M) High / Low':>24}")
    for r in rows.values():
        cost, m = r["expected_cost_at_cap"], r["alice_maneuvers_at_cap"]
        print(f"{r['solver']:<18}{str(r['first']):>9}{str(r['stays']):>9}"
              f"{r['exploitability_at_20000']:>13.2e}{r['final']:>13.2e}"
              f"{cost['alice']:>18.4f} / {cost['bob']:.4f}"
              f"{m['alice p=H']:>15.4f} / {m['alice p=L']:.4f}")
    print("(vanilla CFR ends at the equilibrium where High Alice holds; the others "
          "where Alice always maneuvers, held there by Bob's threat to hold after a hold "
          "she never plays: a Nash equilibrium, not subgame perfect)")
    plot_convergence(traces, os.path.join(args.out, "conjunction_convergence.png"))

    grid_m = np.round(np.linspace(0.5, 8.0, n), 6)
    grid_c = np.round(np.linspace(1.0, 20.0, n), 6)
    grid_m[np.argmin(np.abs(grid_m - 3.0))] = 3.0      # include the default table
    grid_c[np.argmin(np.abs(grid_c - 10.0))] = 10.0
    res = sweep(grid_m, grid_c, CFR_ITERS)
    out["sweep"] = res
    nc = np.array(res["nash_conv"])
    print(f"\nSweep: {res['tables']} cost tables ({n} m x {n} c) in one vmapped call, "
          f"{res['seconds_incl_compile']:.1f} s incl. compile; NashConv median {np.median(nc):.1e}, "
          f"max {nc.max():.1e}, > 0.01 at {(nc > 0.01).sum()} tables")
    pm = {k: np.array(v) for k, v in res["p_maneuver"].items()}
    print("P(Maneuver) at each infoset:")
    print(f"{'m (High maneuver)':>18}{'c (collision)':>14}" + "".join(f"{k[:18]:>20}" for k in pm))
    for i in np.linspace(0, n - 1, 5).astype(int):
        for j in np.linspace(0, n - 1, 3).astype(int):
            print(f"{grid_m[i]:>18.2f}{grid_c[j]:>14.2f}" + "".join(f"{v[i, j]:>20.3f}" for v in pm.values()))
    plot_sweep(res, os.path.join(args.out, "conjunction_sweep.png"))

    with open(os.path.join(args.out, "conjunction.json"), "w") as f:
        json.dump(out, f, indent=1, default=float)
    print(f"\nwrote {args.out}/conjunction.json, conjunction_sweep.png, conjunction_convergence.png")


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
