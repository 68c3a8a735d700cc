"""AlphaZero on pursuit-evasion: what it learns, graded by the exact solver.

Writes to results/local/pursuit/ (ignored by git, so a trial run replaces nothing),
or with --publish to the tracked results/pursuit/ that the README cites, or to --out DIR:
  loss.png          policy / value / total loss over training: does the network learn?
  win_rates.png     win rate vs random as each side over training, with the exact best
                    rates and the self-play evader win rate: are the self-play games
                    balanced, and is that optimal play?
  value_heatmap.png the value network's prediction per evader cell beside the exact
                    value, in a reachable position whose exact values differ from
                    cell to cell: what has the value network learned?
  simulations.png   strength and mistake rate against the number of simulations
  scaling.png       5x5 / 7x7 / 11x11: win rate vs random (worse side) and mistake rate
                    against training seconds, with 11x11 without exploring starts
  summary.json      all figures, including the wall time to >= 95% vs random

Recipe (every run, every size): a 3x128 MLP, Gumbel search with 16
simulations, 64 self-play games and 32 AdamW steps per iteration, and half of the
self-play games started from random reachable positions ("exploring starts",
`TrainConfig.explore_fraction`; evaluation always starts from the initial position).
Without them an 11x11 evader never reaches the goal row in self-play, every value
target is -1 and nothing is learned; the scaling section reruns that baseline.

    python experiments/pursuit_alphazero.py [--iterations 60] [--scale-seconds 45]
        [--sizes 5 7 11] [--explore 0.5] [--skip-scaling] [--skip-baseline]
        [--out DIR | --publish]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxsolve.alphazero import evaluate, exact, network, selfplay, train  # noqa: E402
from jaxsolve.games import pursuit_evasion as pe  # noqa: E402
from machine import cores, report_path, where_written  # noqa: E402  (experiments/machine.py)

DIRECTIONS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")  # pe's sensor directions 0..7


EXPLORE = 0.5  # the recipe's share of self-play games from exploring starts


def run(env, iterations, sims=16, eval_every=5, seed=0, hidden=(128, 128, 128),
        explore=EXPLORE, max_seconds=None):
    """Trains with evaluations every `eval_every` iterations. Returns (cfg, graphdef,
    state, history, solution, seconds to >= 95% vs random as each side or None); the
    seconds are training wall time from the start, compilation included, evaluation
    excluded (`train.train`'s `train_seconds`)."""
    cfg = train.TrainConfig(env=env, hidden=hidden, seed=seed, explore_fraction=explore,
                            search=selfplay.SearchConfig(num_simulations=sims))
    sol = exact.solve(env)
    graphdef, _ = train.init(cfg)
    matches = {}

    def eval_fn(params):
        return evaluate.evaluate(env, cfg.search, graphdef, params, sol,
                                 jax.random.PRNGKey(seed + 1), matches=matches)

    _, state, history = train.train(cfg, iterations, eval_every=eval_every, eval_fn=eval_fn,
                                    max_seconds=max_seconds)
    hit = next((h["train_seconds"] for h in history if "mistake_rate" in h
                and min(h["win_vs_random_as_evader"], h["win_vs_random_as_defender"]) >= 0.95), None)
    return cfg, graphdef, state, history, sol, hit


def scaling(sizes, seconds, sims, explore, out_dir, baseline=True):
    """Each goal-variant size for `seconds` of training with the recipe (and 11x11, or
    the largest size, without exploring starts); writes scaling.png into `out_dir`,
    returns the rows."""
    runs = [(g, explore) for g in sizes] + ([(max(sizes), 0.0)] if baseline else [])
    out, curves = {}, {}
    for g, frac in runs:
        name = f"{g}" if frac == explore else f"{g}_no_exploring_starts"
        load = os.getloadavg()[0]
        t = time.perf_counter()
        _, _, _, hist, _, hit = run(pe.goal_variant(g), None, sims, eval_every=10,
                                    explore=frac, max_seconds=seconds)
        ev = [h for h in hist if "mistake_rate" in h]
        at_hit = next((h for h in ev if h["train_seconds"] == hit), None)
        out[name] = {"explore_fraction": frac, "final": hist[-1],
                     "seconds_to_95pct_vs_random": hit,
                     "iterations_to_95pct_vs_random": at_hit and at_hit["iteration"],
                     "mistake_rate_at_95pct": at_hit and at_hit["mistake_rate"],
                     "max_mistake_rate_after_95pct": at_hit and max(
                         h["mistake_rate"] for h in ev if h["train_seconds"] >= hit),
                     "total_seconds": time.perf_counter() - t,
                     "load_average_1min": [load, os.getloadavg()[0]]}
        curves[name] = ev
        out[name]["curve"] = {k: [h[k] for h in ev] for k in (
            "train_seconds", "iteration", "win_vs_random_as_evader",
            "win_vs_random_as_defender", "mistake_rate")}
        print(name, {k: v for k, v in out[name].items() if k not in ("final", "curve")}, flush=True)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (name, ev) in enumerate(curves.items()):
        ls, c = ("--", "k") if name.endswith("starts") else ("-", f"C{i}")
        label = (f"{name.split('_')[0]}x{name.split('_')[0]}"
                 + (" no exploring starts" if name.endswith("starts") else ""))
        x = [h["train_seconds"] for h in ev]
        ax[0].plot(x, [min(h["win_vs_random_as_evader"], h["win_vs_random_as_defender"])
                       for h in ev], ls, color=c, label=label, marker="o", ms=2)
        ax[1].plot(x, [h["mistake_rate"] for h in ev], ls, color=c, label=label, marker="o",
                   ms=2)
        if out[name]["seconds_to_95pct_vs_random"] is not None:
            ax[0].axvline(out[name]["seconds_to_95pct_vs_random"], color=c, ls=":", lw=0.8)
    ax[0].axhline(0.95, color="grey", lw=0.8)
    ax[0].set_ylabel("win rate vs random, worse side"), ax[0].set_ylim(-0.02, 1.02)
    ax[1].axhline(0.01, color="grey", lw=0.8)
    ax[1].set_ylabel("mistake rate vs exact play"), ax[1].set_yscale("symlog", linthresh=1e-3)
    ax[1].set_ylim(0, 0.3)
    for a in ax:
        a.set_xlabel("training seconds (compilation included)"), a.legend(fontsize=7)
    load = np.mean([r["load_average_1min"][0] for r in out.values()])
    fig.suptitle(f"goal variant, exploring starts {explore:.0%}, {sims} simulations, "
                 f"{cores()}-core {jax.default_backend().upper()} (load ~{load:.1f})",
                 fontsize=9)
    fig.tight_layout(), fig.savefig(f"{out_dir}/scaling.png"), plt.close(fig)
    return out


def plot_training(history, best, path_loss, path_win):
    it = [h["iteration"] for h in history]
    plt.figure(figsize=(6, 4))
    marker = dict(marker="o", ms=3) if len(it) < 20 else {}  # a lone point shows too
    for k in ("loss", "policy_loss", "value_loss"):
        plt.plot(it, [h[k] for h in history], label=k, **marker)
    plt.title("training loss (policy cross-entropy + value MSE)", fontsize=9)
    plt.xlabel("iteration"), plt.ylabel("loss"), plt.legend(), plt.tight_layout()
    plt.savefig(path_loss), plt.close()
    ev = [h for h in history if "win_vs_random_as_evader" in h]
    plt.figure(figsize=(6, 4))
    for side, c in (("evader", "C0"), ("defender", "C1")):
        plt.plot([h["iteration"] for h in ev], [h[f"win_vs_random_as_{side}"] for h in ev], c,
                 label=f"vs random, as {side}", marker="o", ms=3)
        plt.axhline(best[f"best_vs_random_as_{side}"], color=c, ls=":", label=f"exact best as {side}")
    plt.plot(it, [h.get("selfplay_evader_wins", np.nan) for h in history], "C2", alpha=0.5,
             label="self-play: evader's wins", **marker)
    plt.title("win rates over training (dotted: the best any policy reaches vs random)",
              fontsize=9)
    plt.ylim(-0.02, 1.02), plt.xlabel("iteration"), plt.ylabel("win rate"), plt.legend(fontsize=7)
    plt.tight_layout(), plt.savefig(path_win), plt.close()


def heatmap_position(env, sol) -> tuple[int, int, int]:
    """(turn, detections, sensor) for the value heatmap: a position the evader can be in
    (`pe.reachable`: legal play reaches it with the evader to move), on enough cells
    that the exact values differ from cell to cell - the slice whose reachable cells
    split most evenly into won and lost, the earliest on ties. (At the first turns the
    goal variant's evader wins from every cell, and a map of one colour shows nothing.)"""
    reach = pe.reachable(env)  # [T, T+1, C, 8]
    exact_v = np.asarray(sol.value_evader)[:env.max_turns]  # [T, K, C, 8], K >= T+1
    won = ((exact_v[:, :reach.shape[1]] > 0) & reach).sum(axis=2)  # [T, T+1, 8]
    lost = ((exact_v[:, :reach.shape[1]] < 0) & reach).sum(axis=2)
    balance = np.minimum(won, lost)
    t, k, s = np.unravel_index(np.argmax(balance), balance.shape)  # first maximum
    return int(t), int(k), int(s)


def value_heatmap(env, graphdef, params, sol, path):
    """Network value (evader's side) with the evader to move at each cell, in the
    position `heatmap_position` picks; cells no play reaches in that position are
    greyed out. Returns the share of reachable cells where the network's sign is the
    exact value's."""
    g = env.grid_size
    turn, detections, sensor = heatmap_position(env, sol)
    states = jax.vmap(lambda c: pe._make(
        env, jnp.int32(0), c, jnp.int32(sensor), jnp.int32(turn), jnp.int32(detections),
        jnp.asarray(False), jnp.zeros(2)))(jnp.arange(g * g))
    _, v = network.apply(graphdef, params, states.observation)
    reach = pe.reachable(env)[turn, detections, :, sensor]
    ex = np.asarray(sol.value_evader)[turn, detections, :, sensor]
    fig, ax = plt.subplots(1, 2, figsize=(8, 3.9))
    cmap = plt.get_cmap("RdBu").copy()
    cmap.set_bad("lightgrey")
    for a, data, title in ((ax[0], np.asarray(v), "value network"), (ax[1], ex, "exact value")):
        im = a.imshow(np.ma.masked_where(~reach, data).reshape(g, g), vmin=-1, vmax=1,
                      cmap=cmap)
        a.set_title(title), a.plot(g // 2, g // 2, "k*")
    # The position each cell stands for: the heatmap fixes everything but the cell.
    fig.suptitle(f"evader's value (+1: evader wins) with the evader to move on each cell "
                 f"(star: the sensor; grey: no play reaches the cell in this position)\n"
                 f"{turn} of {env.max_turns} defender moves made, sensor pointing "
                 f"{DIRECTIONS[sensor]}, {detections} detection{'s' * (detections != 1)} "
                 f"so far ({env.max_detections} allowed)", fontsize=8)
    fig.colorbar(im, ax=ax), plt.savefig(path), plt.close()
    return float(np.mean(np.sign(np.asarray(v))[reach] == ex[reach]))


def strength_vs_sims(env, graphdef, params, sol, sims_list):
    rows = []
    for n in sims_list:
        cfg = selfplay.SearchConfig(num_simulations=n)
        res = evaluate.evaluate(env, cfg, graphdef, params, sol, jax.random.PRNGKey(5))
        rows.append({"simulations": n, **res})
        print("sims", n, res, flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="AlphaZero on the pursuit-evasion goal variant: trains a 5x5 agent, "
        "plots what it learns and grades it against the exact solver; "
        "then the 5x5 / 7x7 / 11x11 scaling runs. The module docstring lists the files.")
    ap.add_argument("--iterations", type=int, default=60,
                    help="self-play-and-train iterations of the 5x5 main run (default 60)")
    ap.add_argument("--scale-seconds", type=float, default=45.0,
                    help="training budget per size in the scaling section (default 45)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 7, 11],
                    help="board sizes of the scaling section (default 5 7 11; the main run "
                         "is always 5x5)")
    ap.add_argument("--sims", type=int, default=16,
                    help="search simulations per move in training (default 16)")
    ap.add_argument("--explore", type=float, default=EXPLORE,
                    help=f"share of self-play games from exploring starts (default {EXPLORE})")
    ap.add_argument("--skip-scaling", action="store_true", help="no scaling section")
    ap.add_argument("--skip-baseline", action="store_true",
                    help="scaling without the no-exploring-starts run")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="folder for the plots and summary.json (default results/local/"
                         "pursuit/, or results/pursuit/ with --publish)")
    ap.add_argument("--publish", action="store_true",
                    help="write the tracked results/pursuit/ that the README cites (default: "
                         "results/local/pursuit/, ignored by git, so a trial run replaces "
                         "nothing; --out wins over both)")
    args = ap.parse_args(argv)
    # Every setting is checked before minutes of training, by the objects that use it.
    if args.iterations < 1:
        ap.error(f"--iterations must be at least 1, got {args.iterations}")
    if not (math.isfinite(args.scale_seconds) and args.scale_seconds > 0):
        ap.error(f"--scale-seconds must be a positive number, got {args.scale_seconds}")
    try:
        for n in args.sizes:
            env = pe.goal_variant(n)
            # The exact solver grades every size: one too large for it would fail
            # only after the main run, losing summary.json.
            if exact.estimate_bytes(env) > exact.DEFAULT_MAX_BYTES:
                raise ValueError(f"--sizes {n}: the exact solver that grades the scaling "
                                 f"runs needs about {exact.estimate_bytes(env) / 2**30:.1f} "
                                 f"GiB for a {n}x{n} board, more than its limit of "
                                 f"{exact.DEFAULT_MAX_BYTES / 2**30:g} GiB")
        train.TrainConfig(explore_fraction=args.explore,
                          search=selfplay.SearchConfig(num_simulations=args.sims))
    except ValueError as e:
        ap.error(str(e))
    # Beside the other experiments' results, whatever the working directory.
    out = report_path("pursuit", args.out, args.publish)
    try:  # before minutes of training, not at the first figure
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        ap.error(f"--out {out}: {e}")
    print(f"writing to {where_written(out)}", flush=True)
    summary = {"exact": {}}

    def save_summary():
        """summary.json as far as it goes: rewritten after each section, so that a
        section that fails keeps the figures of the ones before it."""
        with open(f"{out}/summary.json", "w") as f:
            json.dump(summary, f, indent=2, default=float)

    for name, env in (("base_5x5", pe.Params()), ("goal_5x5", pe.goal_variant(5)),
                      ("goal_7x7", pe.goal_variant(7)), ("goal_11x11", pe.goal_variant(11))):
        summary["exact"][name] = {"root_value": float(exact.solve(env).root_value),
                                  **evaluate.best_rates_vs_random(env)}
    env = pe.goal_variant(5)
    t0 = time.perf_counter()
    cfg, graphdef, state, history, sol, hit = run(env, args.iterations, args.sims,
                                                  explore=args.explore)
    best = evaluate.best_rates_vs_random(env)
    plot_training(history, best, f"{out}/loss.png", f"{out}/win_rates.png")
    summary["goal_5x5"] = {"final": history[-1], "seconds_to_95pct_vs_random": hit,
                           "total_seconds": time.perf_counter() - t0}
    summary["goal_5x5"]["heatmap_sign_agreement"] = value_heatmap(
        env, graphdef, state.params, sol, f"{out}/value_heatmap.png")
    mcts = evaluate.evaluate(env, cfg.search, graphdef, state.params, sol, jax.random.PRNGKey(9),
                             batch=128, opponents=("mcts",))
    summary["goal_5x5"]["vs_pure_mcts"] = mcts
    save_summary()
    rows = strength_vs_sims(env, graphdef, state.params, sol, [1, 2, 4, 8, 16, 32, 64])
    summary["simulations"] = rows
    plt.figure(figsize=(6, 4))
    for k in ("win_vs_random_as_evader", "win_vs_random_as_defender", "mistake_rate"):
        plt.plot([r["simulations"] for r in rows], [r[k] for r in rows], "o-", label=k)
    plt.xscale("log", base=2), plt.xlabel("simulations per move (at evaluation)")
    plt.ylabel("rate"), plt.ylim(-0.02, 1.02), plt.legend()
    plt.title("the trained 5x5 agent against the search budget it plays with", fontsize=9)
    plt.tight_layout()
    plt.savefig(f"{out}/simulations.png"), plt.close()
    save_summary()
    if not args.skip_scaling:
        summary["scaling"] = scaling(args.sizes, args.scale_seconds, args.sims, args.explore,
                                     out, baseline=not args.skip_baseline)
    save_summary()
    print(json.dumps(summary, indent=2, default=float))


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
