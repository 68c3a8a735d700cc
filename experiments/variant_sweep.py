"""Which settings of a discounted CFR variant win where: a grid of hyperparameters per
game, each grid solved in one compiled call.

    python experiments/variant_sweep.py                 # 4 games, 2 grids of 64, ~10 min on 2 cores
    python experiments/variant_sweep.py --quick         # Kuhn and Leduc, 4x4 grids: a smoke run
    python experiments/variant_sweep.py --games leduc --iterations 100,1000,3000

For each game and each grid (PDCFR+'s alpha x gamma, DCFR's alpha x gamma with
beta = 0), the grid's settings are traced knobs of one solver: `jax.vmap` over the
flattened grid runs every setting inside one compiled call per checkpoint, and
evaluates each setting's average policy there (`jaxsolve.exploitability`, NashConv /
2). The built-in solvers at their published defaults (CFR+, PCFR+, DCFR, DCFR+,
PDCFR+, SAPCFR+) run beside them to the same checkpoints, so every heat map cell reads
against the defaults.

Exploitability is reported relative to the game's payoff range (max - min terminal
utility of player 0), so games compare. float64 (`jax_enable_x64`): a grid's best
settings reach 1e-9 and below, where float32's round-off would decide the ranking.

Writes results/local/variant_sweep.json (`--publish`: results/variant_sweep.json, read
by the docs' "Choosing a solver" page) and the heat maps beside it,
variant_sweep.png.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing jaxsolve
    sys.path.insert(0, str(ROOT))

import jax  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxsolve  # noqa: E402
from experiments import machine  # noqa: E402
from jaxsolve import builders, games  # noqa: E402

GAMES = {
    "kuhn": ("Kuhn poker", lambda: jaxsolve.compile_game(games.load("kuhn_poker"))),
    "leduc": ("Leduc poker", lambda: jaxsolve.compile_game(games.load("leduc_poker"))),
    "goofspiel5": ("Goofspiel 5", lambda: builders.goofspiel(5)),
    "liars": ("liar's dice 1x6", lambda: builders.liars_dice((1, 1), 6)),
}

# name -> (solver of (alpha, gamma), the authors' default (alpha, gamma))
GRIDS = {
    "pdcfr+": (jaxsolve.pdcfr_plus, (2.3, 5.0)),
    "dcfr": (lambda alpha, gamma: jaxsolve.dcfr(alpha, 0.0, gamma), (1.5, 2.0)),
}
ALPHAS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0)
GAMMAS = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)

DEFAULTS = {
    "cfr+": jaxsolve.cfr_plus, "pcfr+": jaxsolve.pcfr_plus, "dcfr": jaxsolve.dcfr,
    "dcfr+": jaxsolve.dcfr_plus, "pdcfr+": jaxsolve.pdcfr_plus,
    "sapcfr+": jaxsolve.sapcfr_plus,
}


def payoff_range(tree) -> float:
    u = np.asarray(tree.utilities)[:, 0]
    return float(u.max() - u.min())


def grid_curve(make, tree, alphas, gammas, checkpoints):
    """Exploitability [K, len(alphas), len(gammas)] of every setting at each checkpoint,
    every setting run by one compiled call per checkpoint; and the seconds spent."""
    a, g = np.meshgrid(np.asarray(alphas, float), np.asarray(gammas, float), indexing="ij")
    a, g = jnp.asarray(a.ravel()), jnp.asarray(g.ravel())
    init = make(1.5, 2.0).init(tree)  # the state's shapes do not depend on the knobs
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (a.size,) + x.shape), init)

    @jax.jit  # the tree is an argument: captured, XLA would fold its arrays as constants
    def advance(tree, states, count):
        def one(alpha, gamma, state):
            solver = make(alpha, gamma)
            state = jaxsolve.run(solver, tree, state, count)
            return state, jaxsolve.exploitability(tree, jaxsolve.average_policy(tree, state))
        return jax.vmap(one)(a, g, states)

    return _checkpoints(advance, tree, states, checkpoints, (len(alphas), len(gammas)))


def default_curve(solver, tree, checkpoints):
    """Exploitability [K] of one built-in at its defaults, and the seconds spent."""
    @jax.jit
    def advance(tree, state, count):
        state = jaxsolve.run(solver, tree, state, count)
        return state, jaxsolve.exploitability(tree, jaxsolve.average_policy(tree, state))

    return _checkpoints(advance, tree, solver.init(tree), checkpoints, ())


def _checkpoints(advance, tree, state, checkpoints, shape):
    start = time.perf_counter()
    values, done = [], 0
    for k in checkpoints:
        state, value = advance(tree, state, jnp.asarray(k - done, jnp.int32))
        values.append(np.asarray(jax.block_until_ready(value)).reshape(shape))
        done = k
    return np.stack(values), time.perf_counter() - start


def plot(report: dict, path: Path) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    game_keys = list(report["games"])
    grids = list(GRIDS)
    fig, axes = plt.subplots(len(grids), len(game_keys), squeeze=False,
                             figsize=(3.2 * len(game_keys), 3.0 * len(grids)))
    alphas, gammas = report["alphas"], report["gammas"]
    for col, key in enumerate(game_keys):
        entry = report["games"][key]
        for row, name in enumerate(grids):
            ax = axes[row][col]
            grid = entry["grids"][name]
            values = np.log10(np.maximum(np.asarray(grid["relative"][-1]), 1e-16))
            image = ax.imshow(values.T, origin="lower", cmap="viridis_r", aspect="auto")
            ax.set_xticks(range(len(alphas)), [f"{x:g}" for x in alphas], fontsize=7)
            ax.set_yticks(range(len(gammas)), [f"{x:g}" for x in gammas], fontsize=7)
            default = GRIDS[name][1]
            if default[0] in alphas and default[1] in gammas:
                ax.plot(alphas.index(default[0]), gammas.index(default[1]), "o",
                        mfc="none", mec="white", ms=10)
            best = grid["best"]  # of the unclipped values, as the report names it
            ax.plot(alphas.index(best["alpha"]), gammas.index(best["gamma"]), "*",
                    color="red", ms=9)
            ax.set_title(f"{entry['label']}: {name}", fontsize=9)
            ax.set_xlabel("alpha", fontsize=8)
            ax.set_ylabel("gamma", fontsize=8)
            fig.colorbar(image, ax=ax, shrink=0.8).ax.tick_params(labelsize=7)
    fig.suptitle(f"log10 exploitability / payoff range after {report['checkpoints'][-1]:,} "
                 "iterations (o: the authors' default, *: the best)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default="kuhn,leduc,goofspiel5,liars",
                        help=f"comma-separated, of {', '.join(GAMES)}")
    parser.add_argument("--iterations", default="100,300,1000",
                        help="checkpoints: iteration counts at which every setting is "
                             "evaluated (default 100,300,1000)")
    parser.add_argument("--quick", action="store_true",
                        help="Kuhn and Leduc, 4x4 grids, checkpoints 10,30: a smoke run")
    parser.add_argument("--out", help="the report's path (default: see --publish)")
    machine.add_publish_option(parser)
    args = parser.parse_args(argv)
    machine.refuse_published_smoke_run(parser, args)
    keys = ["kuhn", "leduc"] if args.quick else args.games.split(",")
    unknown = [k for k in keys if k not in GAMES]
    if unknown:
        parser.error(f"unknown game(s) {', '.join(unknown)}; choose from {', '.join(GAMES)}")
    checkpoints = [10, 30] if args.quick else [int(x) for x in args.iterations.split(",")]
    if checkpoints != sorted(set(checkpoints)) or checkpoints[0] < 1:
        parser.error("--iterations: increasing positive counts, e.g. 100,300,1000")
    alphas = ALPHAS[1::2] if args.quick else ALPHAS
    gammas = GAMMAS[::2] if args.quick else GAMMAS
    path = machine.report_path("variant_sweep.json", args.out, args.publish,
                               ROOT / "results/local/variant_sweep_quick.json" if args.quick
                               else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_enable_x64", True)  # float64 from here on; importing sets nothing

    report = {"command": "python experiments/variant_sweep.py " + " ".join(argv or sys.argv[1:]),
              "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "machine": machine.machine_info(), "dtype": "float64",
              "alphas": list(alphas), "gammas": list(gammas), "checkpoints": checkpoints,
              "grids": {name: {"default": list(d)} for name, (_, d) in GRIDS.items()},
              "games": {}}
    for key in keys:
        label, build = GAMES[key]
        tree = build()
        scale = payoff_range(tree)
        entry = {"label": label, "histories": int(tree.sizes.num_nodes),
                 "payoff_range": scale, "grids": {}, "defaults": {}}
        print(f"== {label}: {tree.sizes.num_nodes:,} histories, payoff range {scale:g}")
        for name, (make, _) in GRIDS.items():
            values, seconds = grid_curve(make, tree, alphas, gammas, checkpoints)
            relative = values / scale
            best = np.unravel_index(np.argmin(relative[-1]), relative[-1].shape)
            entry["grids"][name] = {
                "exploitability": values.tolist(), "relative": relative.tolist(),
                "seconds": seconds, "settings": len(alphas) * len(gammas),
                "best": {"alpha": alphas[best[0]], "gamma": gammas[best[1]],
                         "relative": float(relative[-1][best])}}
            print(f"  {name} grid ({len(alphas)}x{len(gammas)}, compile included): "
                  f"{seconds:.1f} s; best after {checkpoints[-1]}: alpha "
                  f"{alphas[best[0]]:g}, gamma {gammas[best[1]]:g}, "
                  f"{float(relative[-1][best]):.3g}")
        for name, factory in DEFAULTS.items():
            values, seconds = default_curve(factory(), tree, checkpoints)
            entry["defaults"][name] = {"exploitability": values.tolist(),
                                       "relative": (values / scale).tolist(),
                                       "seconds": seconds}
            print(f"  {name:8s} defaults: {float(values[-1]) / scale:.3g}")
        report["games"][key] = entry
        path.write_text(json.dumps(report, indent=1))
    png = path.with_suffix(".png")
    plot(report, png)
    print(f"wrote {machine.where_written(path)} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
