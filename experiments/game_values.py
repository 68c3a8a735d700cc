"""Mini Maneuver and Orbital Pursuit-Evasion (both detection modes) solved and checked.

    python experiments/game_values.py            # 1,000 CFR+ iterations, OpenSpiel on all
    python experiments/game_values.py --quick    # OpenSpiel only on Mini Maneuver

For each game: jaxsolve's CFR+ (float64) for `--iters` iterations; the average
strategy (full table in the JSON, the decisions that matter printed), its value and
exploitability (NashConv / 2); the game value from the independent sequence-form LP
(tests/reference/sequence_form_lp.py, HiGHS); and OpenSpiel's own Python
`CFRPlusSolver` run on the *same* plain-Python game.

OpenSpiel's Python CFR needs a pyspiel-like game, not a registered pyspiel game: it
calls `get_type()`, `num_distinct_actions()`, `new_initial_state()` and, on states,
`history_str()`, `legal_actions_mask()`, `is_simultaneous_node()`, `child()` and the
usual protocol methods. `jaxsolve.openspiel.as_openspiel_game` supplies those few on top of our
protocol game (a thin adapter; no game logic), so OpenSpiel walks the same tree with
its own code. OpenSpiel's CFR+ uses the same conventions as ours (alternating
updates, RM+, linear averaging), so in float64 the average policies agree to about
1e-9 after every iteration until a regret ties at zero, where round-off parts the
trajectories (docs/correctness.md, "Ties"); the JSON records the largest difference. OpenSpiel's Python CFR is a
recursive tree walk, about 1 s per iteration on Orbital Pursuit-Evasion (47k-62k
terminals), so there it runs `--os-iters` iterations (default 100) and is compared
with ours after the same number.

Writes results/game_values.json and results/game_values.png.
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
from jaxsolve.openspiel import as_openspiel_game  # noqa: E402

RUN = jax.jit(jaxsolve.run, static_argnums=(0,))
AVERAGE = jax.jit(jaxsolve.average_policy)
EXPLOIT = jax.jit(jaxsolve.exploitability)
VALUE = jax.jit(jaxsolve.policy_value)

CASES = [("mini_maneuver", {}, "Mini Maneuver"),
         ("orbital_pursuit_evasion", {"detection": "deterministic"}, "Orbital P-E (deterministic)"),
         ("orbital_pursuit_evasion", {"detection": "stochastic"}, "Orbital P-E (stochastic)")]


def openspiel_cfr_plus(game, tree, iterations):
    """OpenSpiel's CFRPlusSolver on `game`; its average policy as an [I, A] array."""
    from open_spiel.python.algorithms import cfr as os_cfr
    solver = os_cfr.CFRPlusSolver(as_openspiel_game(game))
    t0 = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    seconds = time.perf_counter() - t0
    avg = solver.average_policy()
    out = np.zeros(np.shape(tree.legal))
    for i, name in enumerate(tree.names.infosets):
        out[i] = avg.action_probability_array[avg.state_lookup[name]]
    return out, seconds


# ------------------------------------------------------------ the experiment

def shown_infosets(name, tree):
    """The decisions printed: all of Mini Maneuver; Orbital P-E's first Attacker move
    per entry and the Defender's first two sensor choices."""
    infosets = tree.names.infosets
    if name == "mini_maneuver":
        return list(infosets)
    return [s for s in infosets if s == "no_history" or "turn=0" in s
            or (s.startswith("s") and "," not in s)]


def solve_case(name, params, iters, os_iters, with_openspiel):
    from reference.sequence_form_lp import solve_zero_sum

    game = games.load(name, **params)
    tree = jaxsolve.compile_game(game)
    solver = jaxsolve.cfr_plus()
    t0 = time.perf_counter()
    state = jax.block_until_ready(RUN(solver, tree, solver.init(tree), iters))
    seconds = time.perf_counter() - t0
    policy = AVERAGE(tree, state)
    lp = solve_zero_sum(game)
    row = dict(game=name, params=params, iterations=iters, seconds_incl_compile=seconds,
               value=float(VALUE(tree, policy)[0]), exploitability=float(EXPLOIT(tree, policy)),
               lp_value=lp.value, infosets=tree.sizes.num_infosets,
               terminals=tree.sizes.num_terminals,
               strategy=jaxsolve.table(tree, policy, digits=6),
               shown=shown_infosets(name, tree))
    if with_openspiel:
        try:
            n = iters if name == "mini_maneuver" else min(os_iters, iters)
            theirs, os_seconds = openspiel_cfr_plus(game, tree, n)
            ours = AVERAGE(tree, RUN(solver, tree, solver.init(tree), n))
            row["openspiel"] = dict(
                iterations=n, seconds=os_seconds,
                max_abs_policy_diff=float(np.max(np.abs(np.asarray(ours) - theirs))),
                exploitability=float(EXPLOIT(tree, theirs)),
                jaxsolve_exploitability_same_iters=float(EXPLOIT(tree, ours)))
        except ImportError as err:
            row["openspiel"] = f"skipped: {err}"
    return row, tree, policy


def plot(rows, trees, policies, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(6 * len(rows), 6))
    for ax, row, tree, policy in zip(axes, rows, trees, policies):
        names = row["shown"]
        idx = [tree.names.infosets.index(s) for s in names]
        legal = np.asarray(tree.legal)
        left = np.zeros(len(idx))
        pol = np.asarray(policy)
        for a in range(tree.sizes.num_actions):
            widths = np.array([pol[i, a] if legal[i, a] else 0.0 for i in idx])
            labels = {tree.names.actions[i][a] for i in idx if legal[i, a]}
            ax.barh(range(len(idx)), widths, left=left, label="/".join(sorted(labels)))
            left += widths
        ax.set_yticks(range(len(idx)), [s[:38] for s in names], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("probability")
        ax.set_title(f"{row['title']}\nvalue {row['value']:+.4f} (LP {row['lp_value']:+.4f}), "
                     f"expl {row['exploitability']:.1e}", fontsize=9)
        # Below the bars, not over them; an action's label lists each player's name
        # for that action id ("N/Sensor NW": the evader's N, the defender's NW).
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08),
                  ncol=min(3, tree.sizes.num_actions), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--iters", type=positive(int), default=1000)
    ap.add_argument("--os-iters", type=positive(int), default=100,
                    help="OpenSpiel CFR+ iterations on Orbital P-E (slow Python walk)")
    ap.add_argument("--quick", action="store_true",
                    help="OpenSpiel comparison on Mini Maneuver only")
    ap.add_argument("--out", default=os.path.join(ROOT, "results"),
                    help="folder for the JSON and PNG files (default results/)")
    args = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # float64 from here on; importing sets nothing
    os.makedirs(args.out, exist_ok=True)
    try:
        import pyspiel  # noqa: F401
        have_openspiel = True
    except ImportError:
        have_openspiel = False

    rows, trees, policies = [], [], []
    for name, params, title in CASES:
        use_os = have_openspiel and (not args.quick or name == "mini_maneuver")
        row, tree, policy = solve_case(name, params, args.iters, args.os_iters, use_os)
        row["title"] = title
        rows.append(row), trees.append(tree), policies.append(policy)

        print(f"\n== {title}: {row['infosets']} infosets, {row['terminals']} terminals ==")
        for s in row["shown"]:
            probs = ", ".join(f"{a} {p:.3f}" for a, p in row["strategy"][s].items() if p > 5e-4)
            print(f"  {s:<40} {probs}")

    print(f"\n{'game':<30}{'iters':>6}{'value':>11}{'LP value':>11}{'exploit.':>11}"
          f"{'OpenSpiel CFR+ (iters, max|dpolicy|, expl.)':>46}")
    for row in rows:
        o = row.get("openspiel")
        os_txt = (f"{o['iterations']}, {o['max_abs_policy_diff']:.1e}, {o['exploitability']:.1e}"
                  if isinstance(o, dict) else (o or "not run"))
        print(f"{row['title']:<30}{row['iterations']:>6}{row['value']:>+11.6f}"
              f"{row['lp_value']:>+11.6f}{row['exploitability']:>11.2e}{os_txt:>46}")

    with open(os.path.join(args.out, "game_values.json"), "w") as f:
        json.dump(dict(solver="cfr+", dtype="float64", quick=args.quick, games=rows), f, indent=1)
    plot(rows, trees, policies, os.path.join(args.out, "game_values.png"))
    print(f"\nwrote {args.out}/game_values.json and game_values.png")


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
