"""A CFR rule of your own against the built-in: time per iteration, side by side.

    python experiments/bench_rules.py [--games goofspiel6,liars,battleship,leduc]
                                      [--rounds 9] [--block-seconds 0.2] [--publish]

Every full-width solver runs one kernel (`jaxsolve.kernel`); this measures that a
researcher's own variant pays nothing for being their own. Per game, in one process,
float32, each solver's `run` jitted with its state donated:

* `cfr_plus()`, the built-in;
* `cfr_variant("cfr+ settings", floor=True)`: the built-in's settings given by hand;
* `cfr_variant("own regret matching", rule, floor=True)`: regret matching written here,
  on the kernel's rows, as a user would write it;
* `cfr_variant("hedge", ...)`: Hedge (exponential weights), a different rule, for
  scale;
* `dcfr(alpha)` with alpha traced under `jax.vmap` over 4 settings, per setting:
  one compiled call for all four.

The solvers take turns: in each of `--rounds` rounds every solver runs one block of
iterations (about `--block-seconds` long), in an order that rotates round by round,
so that drift of the machine's speed falls on all alike. Reported: compile seconds,
the median ms per iteration with CPU time over wall time, and the ratio to
`cfr_plus()`'s median; and, from XLA's cost analysis of each solver's compiled
iteration, its bytes accessed and flops over the built-in's. On a shared machine the
timings of two identical programs differ by tens of percent from block to block (the
CFR+ settings given by hand run the built-in's program: their ratio is the
measurement's own spread, printed beside the verdict), so the verdict reads the
compiled program, which is the same on every run: the own regret matching within 10%
of the built-in's bytes accessed and flops on every game. The timing ratio is
reported beside it.

Games: the builders' Goofspiel 6, liar's dice 1x6 and Battleship 3x2 (`bench_cfr_games`
has them) and Leduc poker as compiled from OpenSpiel (`pyspiel`; its infosets are
numbered in the order OpenSpiel's walk meets them, and run packed all the same).

Results go to results/local/bench_rules.json (`--publish`: results/bench_rules.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import jax
import jax.numpy as jnp

import machine
import jaxsolve
from bench_cfr_games import GAMES

DEFAULT_GAMES = "goofspiel6,liars,battleship,leduc"
WITHIN = 1.10  # an own rule's time per iteration, at most this times the built-in's
SWEEP = (1.0, 1.5, 2.0, 3.0)  # DCFR alphas of the vmapped sweep


def own_regret_matching(regrets, rows):
    """Regret matching as a user writes it on `jaxsolve.Rows`."""
    positive = jnp.maximum(regrets, 0.0)
    total = rows.total(positive)
    return jnp.where(total > 0, positive / jnp.where(total > 0, total, 1.0),
                     rows.uniform(regrets.dtype))


def hedge(regrets, rows, eta=0.1):
    """Hedge: the policy proportional to exp(eta * regret)."""
    z = jnp.exp(eta * (regrets - rows.max(regrets)))
    return z / rows.total(z)


def tree_of(key: str):
    game = GAMES[key]
    if game.builder is not None and key != "leduc":
        build, args, kwargs = game.builder
        return getattr(jaxsolve.builders, build)(*args, **kwargs, histories=False)
    import pyspiel  # noqa: PLC0415

    name, params = game.pyspiel
    return jaxsolve.compile_game(pyspiel.load_game(name, params)).without_histories()


def compiled_cost(fn, tree, state) -> dict[str, float]:
    """XLA's cost analysis of `fn(tree, state)` compiled, the tree an argument as in a
    solve: bytes accessed and flops (a loop's body counted once, so of one iteration)."""
    cost = jax.jit(fn).lower(tree, state).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return {"bytes": float(cost.get("bytes accessed", 0.0)), "flops": float(cost.get("flops", 0.0))}


class Contender:
    """One solver on one tree: its jitted loop, its state, its timings."""

    def __init__(self, label: str, tree, solver=None, sweep=None):
        self.label, self.tree, self.times, self.cpu = label, tree, [], []
        if sweep is None:
            self.state = solver.init(tree)
            loop = jax.jit(jaxsolve.run, static_argnums=0, donate_argnums=2)
            self._call = lambda state, n: loop(solver, tree, state, n)
            self.per_call = 1
            self.cost = compiled_cost(lambda t, state: jaxsolve.run(solver, t, state, 1),
                                      tree, self.state)
        else:  # DCFR's alpha traced: every setting in one call
            alphas = jnp.asarray(sweep, jnp.float32)

            def swept(t, state, n):
                return jax.vmap(lambda a, s: jaxsolve.run(jaxsolve.dcfr(a, 0.0, 2.0), t,
                                                          s, n))(alphas, state)

            one = jaxsolve.dcfr().init(tree)
            self.state = jax.tree_util.tree_map(lambda x: jnp.stack([x] * len(sweep)), one)
            loop = jax.jit(swept, donate_argnums=1)
            self._call = lambda state, n: loop(tree, state, n)
            self.per_call = len(sweep)
            cost = compiled_cost(lambda t, state: swept(t, state, 1), tree, self.state)
            self.cost = {k: v / len(sweep) for k, v in cost.items()}
        start = time.perf_counter()
        self.state = jax.block_until_ready(self._call(self.state, 0))
        self.compile_s = time.perf_counter() - start

    def block(self, n: int) -> float:
        wall, cpu = time.perf_counter(), time.process_time()
        self.state = jax.block_until_ready(self._call(self.state, n))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        self.times.append(wall / n / self.per_call * 1e3)
        self.cpu.append(cpu / wall)
        return wall


def measure(key: str, rounds: int, block_seconds: float) -> dict:
    tree = tree_of(key)
    contenders = [
        Contender("cfr_plus()", tree, jaxsolve.cfr_plus()),
        Contender("cfr_variant, CFR+'s settings", tree,
                  jaxsolve.cfr_variant("cfr+ settings", floor=True)),
        Contender("cfr_variant, own regret matching", tree,
                  jaxsolve.cfr_variant("own regret matching", own_regret_matching, floor=True)),
        Contender("cfr_variant, Hedge", tree,
                  jaxsolve.cfr_variant("hedge", hedge, floor=False, gamma=1.0)),
        Contender(f"dcfr(alpha) vmapped over {len(SWEEP)} alphas, per alpha", tree,
                  sweep=SWEEP),
    ]
    blocks = []
    for c in contenders:  # one untimed block sizes each solver's blocks
        seconds = max(c.block(8), 1e-6)
        c.times.clear(), c.cpu.clear()
        blocks.append(max(1, int(8 * block_seconds / seconds)))
    for r in range(rounds):
        for k in range(len(contenders)):
            i = (k + r) % len(contenders)
            contenders[i].block(blocks[i])
    base = statistics.median(contenders[0].times)
    cost = contenders[0].cost
    rows = []
    for c, n in zip(contenders, blocks):
        median = statistics.median(c.times)
        rows.append({"solver": c.label, "compile_s": round(c.compile_s, 3), "block": n,
                     "ms_per_iteration": median, "ratio_to_builtin": median / base,
                     "cpu_over_wall": statistics.median(c.cpu),
                     "bytes_ratio": c.cost["bytes"] / cost["bytes"],
                     "flops_ratio": c.cost["flops"] / cost["flops"]})
    own = rows[2]
    return {"game": GAMES[key].label, "infosets": tree.sizes.num_infosets,
            "terminals": tree.sizes.num_terminals,
            "packed": bool(jaxsolve.packing.available(tree)), "rows": rows,
            "timing_spread": abs(rows[1]["ratio_to_builtin"] - 1.0),
            "own_rule_within": max(own["bytes_ratio"], own["flops_ratio"]) <= WITHIN}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=DEFAULT_GAMES)
    parser.add_argument("--rounds", type=machine.positive(int), default=9)
    parser.add_argument("--block-seconds", type=machine.positive(float), default=0.2)
    parser.add_argument("--out", default=None)
    machine.add_publish_option(parser)
    args = parser.parse_args()
    keys = [k.strip() for k in args.games.split(",") if k.strip()]
    unknown = [k for k in keys if k not in GAMES]
    if unknown:
        parser.error(f"unknown games {unknown}; known: {', '.join(GAMES)}")
    results = []
    for key in keys:
        result = measure(key, args.rounds, args.block_seconds)
        results.append(result)
        print(f"\n{result['game']} ({result['infosets']} infosets, {result['terminals']} "
              f"leaves, {'packed' if result['packed'] else 'padded'})")
        print(f"  {'solver':<52} {'compile s':>9} {'ms/iter':>9} {'ratio':>6} {'cpu/wall':>8} "
              f"{'bytes':>6} {'flops':>6}")
        for row in result["rows"]:
            print(f"  {row['solver']:<52} {row['compile_s']:>9.2f} "
                  f"{row['ms_per_iteration']:>9.4f} "
                  f"{machine.figure_beside(row['ratio_to_builtin'], WITHIN, 2):>6} "
                  f"{row['cpu_over_wall']:>8.2f} {row['bytes_ratio']:>6.2f} "
                  f"{row['flops_ratio']:>6.2f}")
        print(f"  timing spread (identical programs): {result['timing_spread']:.0%}")
    passed = all(r["own_rule_within"] for r in results)
    print(f"\nown regret matching's compiled iteration within {WITHIN:.2f}x of cfr_plus()'s "
          f"bytes accessed and flops on every game: {'PASS' if passed else 'FAIL'}")
    report = {"command": " ".join(["python experiments/bench_rules.py", *sys.argv[1:]]),
              "date": time.strftime("%Y-%m-%d"), "machine": machine.machine_info(),
              "rounds": args.rounds, "within": WITHIN, "passed": passed, "games": results}
    path = machine.report_path("bench_rules.json", args.out, args.publish)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"written: {machine.where_written(path)}")


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
