"""CFR+ against the CPU solvers a researcher can pick instead, in one process.

    make bench-peers                                  # the default games, ~15 min on 2 cores
    .venv-bench/bin/python experiments/bench_peers.py --games kuhn,leduc,goofspiel5
    .venv-bench/bin/python experiments/bench_peers.py --quick     # smoke run, < 1 min
    .venv-bench/bin/python experiments/bench_peers.py --big       # adds Goofspiel 7

Runs jaxsolve's CFR+ (float32, as users run it: a tree without its history arrays,
`run` with many iterations per compiled call), NoRegret's CFR+ (`noregret` on PyPI,
its NumPy/SciPy kernel `FPKer`, float64), LiteEFG's CFR+ (`liteefg`, C++, float64,
one thread) and OpenSpiel's C++ `CFRPlusSolver` (float64) on the same OpenSpiel game.
All use alternating updates, regrets floored at zero and linear averaging. A solver
whose package is missing, or that cannot load a game, is skipped with a one-line
note. NoRegret needs Python 3.12 or newer, hence the separate environment
`.venv-bench` that `make bench-peers` builds.

For each game and solver it measures

* setup s: building the solver's tables from the game (jaxsolve: the tree, by a
  builder where jaxsolve has one, else `compile_game` of the pyspiel game; the
  peers: their constructors, which walk the OpenSpiel game), and for jaxsolve the
  compile s of its loop apart;
* ms per iteration: the median over timed blocks, the solvers taking turns block by
  block (so a change in the machine's load falls on all of them; Python's cycle
  collector off within each timing), after a first
  untimed block that also sizes each solver's blocks to about `--block-seconds`;
* CPU time over wall time of those blocks (about 1 for one thread; up to the number
  of cores where a solver runs on several);
* exploitability evaluation ms: each solver's own evaluation of its own average
  policy, the median of `--eval-rounds` turns in a rotating order, each turn
  `--eval-repeats` calls back to back after one untimed call (OpenSpiel: one turn)
  (jaxsolve: jitted `exploitability`, after compilation; NoRegret:
  `game.exploitability`; LiteEFG: `env.exploitability`; OpenSpiel:
  `pyspiel.exploitability`), and the exploitability itself, as a check that the
  solvers solve one game (their trajectories part slightly where a regret ties at
  zero, so the values agree to a few per cent, not to the last digit);
* memory: the growth of the process's resident memory over each setup (solvers
  are set up one after another in one process, so this is each one's share; the
  peak is printed too) and jaxsolve's tree bytes;
* the memory-traffic bound of jaxsolve's figures: the bytes one CFR+ iteration (and
  one evaluation) must move, counted by `iteration_bytes` (`evaluation_bytes`) from
  the tree's sizes, over the memory bandwidth measured in the same run;
* the leaf-sum floor beside it: every iteration and every evaluation sums each
  player's leaf weights into that player's sequences (P segment sums of length Z),
  and XLA:CPU runs a segment sum as a serial scatter that is bound by its per-element
  work, not by memory traffic (about 1.5 ns per leaf against 0.4 ns for a gather of
  the same length). `leaf_sums_ms` times those P segment sums alone, with the tree's
  own indices; the floor is that time plus the rest of the bytes at the bandwidth.

Ratios are peer time / jaxsolve time (above 1: jaxsolve is faster). Results go to
results/local/bench_peers.json (`--publish`: results/bench_peers.json; `--out`
wins), written after every game.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

import jaxsolve
import machine
from bench_cfr_games import GAMES as GAME_TABLE

DEFAULT_GAMES = ("kuhn", "leduc", "goofspiel5", "liars", "goofspiel6", "battleship")
BIG_GAMES = ("goofspiel7",)
PEERS = ("noregret", "liteefg", "openspiel")
ONE_EVALUATION_TURN = ("openspiel",)  # it rebuilds its best-response trees every call


# ------------------------------------------------------------------ traffic bound
def legal_sequences(tree) -> int:
    """S: the tree's (infoset, legal action) pairs, every player's together."""
    return int(np.asarray(tree.legal).sum())


def iteration_bytes(tree) -> int:
    """Bytes one CFR+ iteration of the sequence-form kernels must move.

    Per player update (P of them), every leaf is read once: the last own sequence of
    each player (int32, P of them), the updating player's payoff and the leaf's
    chance probability (float32): Z * (4P + 8) bytes. And each legal sequence's
    float32 entries are passed over once an iteration, in its player's update:
    regrets, average and its compensation read and written (6), the policy written
    and read (2), the counterfactual values written and read (2), and the
    realization plan the other players' updates read, written and read (2): S * 4 *
    12 bytes. Padding to the widest infoset is not counted: an implementation that
    fused everything into one pass over the leaves and one over the legal sequences
    could not move less.
    """
    s = tree.sizes
    p, z = s.num_players, s.num_terminals
    return p * z * (4 * p + 8) + legal_sequences(tree) * 4 * 12


def evaluation_bytes(tree) -> int:
    """Bytes one exploitability evaluation must move: per player's best response the
    leaves as in `iteration_bytes`, and one more pass over the leaves for the
    policy's value; each legal sequence's realization plan and best-response value,
    each written and read once (S * 4 * 4)."""
    s = tree.sizes
    p, z = s.num_players, s.num_terminals
    return (p + 1) * z * (4 * p + 8) + legal_sequences(tree) * 4 * 4


def bandwidth(megabytes: int = 512, repeats: int = 5) -> float:
    """Bytes per second this machine copies (read + write counted): the best of
    `repeats` NumPy copies of a `megabytes` array, far beyond the caches."""
    a = np.ones(megabytes * 2**20 // 8)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - start)
    return 2 * a.nbytes / best


def leaf_sums_ms(tree, repeats: int = 15) -> float:
    """Median ms of the P segment sums an iteration (and an evaluation) cannot avoid:
    each player's [Z] float32 leaf weights summed into its [I*A + 1] sequences, at the
    tree's own `terminal_last` indices, jitted, after compilation."""
    s = tree.sizes
    weights = jax.device_put(np.random.default_rng(0).random(s.num_terminals, np.float32))
    last = tree.terminal_last
    sums = jax.jit(lambda w: [jax.ops.segment_sum(w, last[p], num_segments=s.empty_sequence + 1)
                              for p in range(s.num_players)])
    jax.block_until_ready(sums(weights))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(sums(weights))
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def floor_ms(total_bytes: int, tree, sums_ms: float, bytes_per_second: float) -> float:
    """The leaf sums as measured plus every other byte of `total_bytes` at the
    bandwidth (the sums' own reads, a [Z] index and weight per player, taken out)."""
    s = tree.sizes
    rest = max(0, total_bytes - s.num_players * s.num_terminals * 8)
    return sums_ms + 1e3 * rest / bytes_per_second


# ------------------------------------------------------------------ memory
def resident_bytes() -> tuple[int, int]:
    """(current, peak) resident memory of this process, from /proc (0, 0 elsewhere)."""
    values = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


# ------------------------------------------------------------------ the solvers
class Jaxsolve:
    """A jaxsolve full-width solver (`solver`, CFR+ by default), `run` jitted with the
    state donated. float32 as users run it; with `dtype` float64 the caller turns x64
    on around every call (`jax.enable_x64`), as a user switching precision does."""

    name = "jaxsolve"

    def __init__(self, key: str, pyspiel_game, solver=None, dtype=np.float32):
        game = GAME_TABLE[key]
        if game.builder is not None:
            build, args, kwargs = game.builder
            tree = getattr(jaxsolve.builders, build)(*args, **kwargs, dtype=dtype,
                                                     max_bytes=2**62, histories=False)
        else:
            tree = jaxsolve.compile_game(pyspiel_game).without_histories()
        self.tree = jax.device_put(tree)
        self.solver = solver or jaxsolve.cfr_plus()
        self.state = self.solver.init(self.tree)
        self._run = jax.jit(jaxsolve.run, static_argnums=0, donate_argnums=2)
        self._exploitability = jax.jit(jaxsolve.exploitability)
        self._average = jax.jit(jaxsolve.average_policy)
        self.threads = "XLA:CPU's own thread pool"

    def compile(self) -> float:
        start = time.perf_counter()
        self.state = jax.block_until_ready(self._run(self.solver, self.tree, self.state, 0))
        return time.perf_counter() - start

    def iterate(self, n: int) -> None:
        self.state = jax.block_until_ready(self._run(self.solver, self.tree, self.state, n))

    def average(self):
        return jax.block_until_ready(self._average(self.tree, self.state))

    def exploitability(self, average) -> float:
        return float(self._exploitability(self.tree, average))

    def tree_bytes(self) -> int:
        return jaxsolve.builders.tree_bytes(self.tree)


class NoRegret:
    """A NoRegret regret minimizer (`minimizer`, a name in `noregret`: CFR+ by default)
    per player on its sequence-form game, NumPy/SciPy kernel, float64; `prediction`
    plays the last utility as a prediction (PCFR+ is CFR_plus with it)."""

    name = "noregret"

    def __init__(self, key: str, pyspiel_game, minimizer: str = "CFR_plus",
                 prediction: bool = False, **settings):
        import noregret as nr

        kernel = nr.FPKer()
        self.game = nr.to_efg(kernel, nr.OpenSpielGame(kernel, str(pyspiel_game)))
        kind = getattr(nr, minimizer)
        self.minimizers = [kind(kernel, self.game.row_sequence_form_polytope, **settings),
                           kind(kernel, self.game.column_sequence_form_polytope, **settings)]
        self.prediction = prediction
        self.sigma = [m.output(prediction) for m in self.minimizers]
        self.threads = f"NumPy/SciPy ({_blas_threads()})"

    def iterate(self, n: int) -> None:
        for _ in range(n):  # alternating, as nr.regret_minimization(alternation=True)
            for i, m in enumerate(self.minimizers):
                m.observe(self.game.utility(i, *self.sigma[:i], *self.sigma[i + 1:]))
                self.sigma[i] = m.output(self.prediction)

    def average(self):
        return tuple(m.average_strategy for m in self.minimizers)

    def exploitability(self, average) -> float:
        return float(self.game.exploitability(*average))


class LiteEFG:
    """A LiteEFG baseline graph (`baseline`, a module of `LiteEFG.baselines`: CFR+ by
    default) on its OpenSpiel environment, one C++ thread. The environment keeps the
    policy `convergence` names (the average LiteEFG's own scripts evaluate, or the
    last iterate), of the graph's strategy node (`selector` picks one where the
    graph has several)."""

    name = "liteefg"

    def __init__(self, key: str, pyspiel_game, baseline: str = "CFRplus",
                 convergence: str = "linear-avg-iterate", selector: str | None = None,
                 **settings):
        import importlib

        import LiteEFG as leg

        leg.set_threads(1)
        module = importlib.import_module(f"LiteEFG.baselines.{baseline}")
        with contextlib.redirect_stdout(open(os.devnull, "w")):  # noqa: SIM115
            self.graph = module.graph(**settings)
            self.env = leg.OpenSpielEnv(pyspiel_game, traverse_type="Enumerate",
                                        regenerate=False)
            self.env.set_graph(self.graph)
        self.convergence = convergence
        self.selector = () if selector is None else (selector,)
        self.threads = f"{leg.get_threads()} thread"

    def iterate(self, n: int) -> None:
        for _ in range(n):
            self.graph.update_graph(self.env)
            self.env.update_strategy(self.graph.current_strategy(*self.selector),
                                     update_best=False)

    def average(self):
        return None  # the environment keeps it; its evaluation reads it

    def exploitability(self, average) -> float:
        # Per player's best-response gain; their mean is OpenSpiel's exploitability.
        gains = self.env.exploitability(self.graph.current_strategy(*self.selector),
                                        self.convergence)
        return float(sum(gains)) / len(gains)


class OpenSpielCFRPlus:
    """OpenSpiel's C++ CFRPlusSolver (float64, one thread)."""

    name = "openspiel"

    def __init__(self, key: str, pyspiel_game):
        import pyspiel

        self.pyspiel, self.game = pyspiel, pyspiel_game
        self.solver = pyspiel.CFRPlusSolver(pyspiel_game)
        self.threads = "1 thread"

    def iterate(self, n: int) -> None:
        for _ in range(n):
            self.solver.evaluate_and_update_policy()

    def average(self):
        return self.solver.average_policy()

    def exploitability(self, average) -> float:
        return float(self.pyspiel.exploitability(self.game, average))


SOLVERS = {"jaxsolve": Jaxsolve, "noregret": NoRegret, "liteefg": LiteEFG,
           "openspiel": OpenSpielCFRPlus}


def _blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS threads as set by the environment"
    counts = sorted({pool["num_threads"] for pool in threadpool_info()})
    return f"{'/'.join(map(str, counts)) or '?'} BLAS thread(s)"


# ------------------------------------------------------------------ measuring
@contextlib.contextmanager
def _no_collection():
    """Python's cycle collector off while a measurement runs (as `timeit` does): the
    peers' millions of Python objects would otherwise make a collection, triggered
    by whoever allocates next, land inside another solver's timing. (Collecting is
    left to the rounds: a JAX call right after `gc.collect()` takes 0.3 ms more.)"""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _timed_block(solver, n: int) -> tuple[float, float]:
    """(wall s, CPU s) of n iterations."""
    with _no_collection():
        wall, cpu = time.perf_counter(), time.process_time()
        solver.iterate(n)
        return time.perf_counter() - wall, time.process_time() - cpu


def evaluation_times(solvers: dict, averages: dict, rounds: int, repeats: int) -> dict:
    """Seconds of each solver's timed evaluations of its average, by label.

    The solvers take turns in `rounds` rounds, in an order that rotates, so that a
    change in the machine's speed falls on all of them. In each turn a solver
    evaluates `repeats` times back to back after one untimed call, as a user repeating
    an evaluation runs them: timing only calls that directly follow another solver's
    would time the caches and threads that solver left cold. OpenSpiel's evaluation,
    seconds to minutes on the larger games, takes one turn."""
    evals = {label: [] for label in solvers}
    order = list(solvers)
    for round_ in range(rounds):
        shift = round_ % len(order)
        for label in order[shift:] + order[:shift]:
            if label in ONE_EVALUATION_TURN and evals[label]:
                continue
            solver = solvers[label]
            gc.collect()
            solver.exploitability(averages[label])
            for _ in range(repeats):
                with _no_collection():
                    start = time.perf_counter()
                    solver.exploitability(averages[label])
                    evals[label].append(time.perf_counter() - start)
    return evals


def openspiel_game(key: str):
    """OpenSpiel's game of GAME_TABLE[key], turn-based (the game jaxsolve's builder
    builds, where OpenSpiel's is simultaneous)."""
    import pyspiel

    name, params = GAME_TABLE[key].pyspiel
    game = pyspiel.load_game(name, params)
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    return game


def bench_game(key: str, peers: list[str], args, bytes_per_second: float) -> dict:
    """Every solver of `peers` (and jaxsolve) on one game; see the module docstring."""
    game = openspiel_game(key)
    out = {"game": GAME_TABLE[key].label, "openspiel_game": str(game), "solvers": {},
           "skipped": {}}
    solvers = {}
    for label in ["jaxsolve", *peers]:
        before = resident_bytes()[0]
        start = time.perf_counter()
        try:
            solver = SOLVERS[label](key, game)
        except ImportError as e:
            out["skipped"][label] = f"not installed ({e.name or e})"
            print(f"  {label}: skipped, not installed ({e.name or e})")
            continue
        except Exception as e:  # a peer that cannot load this game: say so, go on
            out["skipped"][label] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            print(f"  {label}: skipped, {out['skipped'][label]}")
            continue
        entry = {"setup_s": time.perf_counter() - start, "threads": solver.threads}
        if label == "jaxsolve":
            entry["compile_s"] = solver.compile()
            entry["tree_bytes"] = solver.tree_bytes()
        current, peak = resident_bytes()
        entry["setup_resident_bytes"] = current - before
        entry["peak_resident_bytes"] = peak
        out["solvers"][label] = entry
        solvers[label] = solver

    # The same first iterations for every solver, untimed: the exploitability of the
    # average then checks that all solve one game (their trajectories part only where
    # a regret ties at zero), and their length sizes each solver's timed blocks.
    sizes = {}
    for label, solver in solvers.items():
        wall, _ = _timed_block(solver, args.check_iterations)
        out["solvers"][label]["check_exploitability"] = solver.exploitability(solver.average())
        per_iteration = wall / args.check_iterations
        sizes[label] = max(1, min(args.max_block, int(args.block_seconds / per_iteration)))
    times = {label: [] for label in solvers}
    budget_end = time.perf_counter() + args.game_seconds
    for round_ in range(args.rounds):
        gc.collect()
        for label, solver in solvers.items():
            wall, cpu = _timed_block(solver, sizes[label])
            times[label].append((wall / sizes[label], cpu / max(wall, 1e-12)))
        if round_ >= 2 and time.perf_counter() > budget_end:
            break
    averages = {}
    for label, solver in solvers.items():
        entry = out["solvers"][label]
        per_iter = [t for t, _ in times[label]]
        entry.update(block_iterations=sizes[label], blocks=len(per_iter),
                     ms_per_iter=1e3 * float(np.median(per_iter)),
                     block_ms_per_iter=[1e3 * t for t in per_iter],
                     cpu_over_wall=float(np.median([c for _, c in times[label]])),
                     iterations=args.check_iterations + sizes[label] * len(per_iter))
        # Evaluation of a fixed policy, the final average; the first call also
        # compiles jaxsolve's.
        averages[label] = solver.average()
        entry["exploitability"] = solver.exploitability(averages[label])
    evals = evaluation_times(solvers, averages, args.eval_rounds, args.eval_repeats)
    for label in solvers:
        out["solvers"][label]["eval_ms"] = 1e3 * float(np.median(evals[label]))
    if "jaxsolve" in solvers:
        tree = solvers["jaxsolve"].tree
        ours = out["solvers"]["jaxsolve"]
        bound_ms = 1e3 * iteration_bytes(tree) / bytes_per_second
        eval_bound_ms = 1e3 * evaluation_bytes(tree) / bytes_per_second
        out.update(histories=tree.sizes.num_nodes, terminals=tree.sizes.num_terminals,
                   infosets=tree.sizes.num_infosets, iteration_bytes=iteration_bytes(tree),
                   evaluation_bytes=evaluation_bytes(tree), bound_ms=bound_ms,
                   eval_bound_ms=eval_bound_ms, x_bound=ours["ms_per_iter"] / bound_ms,
                   eval_x_bound=ours["eval_ms"] / eval_bound_ms)
        sums_ms = leaf_sums_ms(tree)
        floor, eval_floor = (floor_ms(b, tree, sums_ms, bytes_per_second)
                             for b in (iteration_bytes(tree), evaluation_bytes(tree)))
        out.update(leaf_sums_ms=sums_ms, floor_ms=floor, eval_floor_ms=eval_floor,
                   x_floor=ours["ms_per_iter"] / floor,
                   eval_x_floor=ours["eval_ms"] / eval_floor)
        for label in solvers:
            if label != "jaxsolve":
                theirs = out["solvers"][label]
                theirs["ratio"] = theirs["ms_per_iter"] / ours["ms_per_iter"]
                theirs["eval_ratio"] = theirs["eval_ms"] / ours["eval_ms"]
                theirs["setup_ratio"] = theirs["setup_s"] / ours["setup_s"]
    return out


# ------------------------------------------------------------------ reporting
def print_game(result: dict) -> None:
    print(f"\n{result['game']}" + (f": {result['histories']:,} histories"
                                   if "histories" in result else ""))
    head = (f"  {'solver':10s} {'setup s':>8s} {'ms/iter':>10s} {'x ours':>7s} {'cpu/wall':>8s} "
            f"{'eval ms':>9s} {'x ours':>7s} {'expl. at check':>14s} {'RSS +MiB':>8s}")
    print(head)
    for label, e in result["solvers"].items():
        ratio = f"{e['ratio']:.2f}" if "ratio" in e else "-"
        eval_ratio = f"{e['eval_ratio']:.2f}" if "eval_ratio" in e else "-"
        print(f"  {label:10s} {e['setup_s']:8.2f} {e['ms_per_iter']:10.4f} {ratio:>7s} "
              f"{e['cpu_over_wall']:8.2f} {e['eval_ms']:9.3f} {eval_ratio:>7s} "
              f"{e['check_exploitability']:14.6g} {e['setup_resident_bytes'] / 2**20:8.1f}")
    if "bound_ms" in result:
        ours = result["solvers"]["jaxsolve"]
        print(f"  jaxsolve: compile {ours['compile_s']:.2f} s, tree {ours['tree_bytes'] / 2**20:.1f}"
              f" MiB; traffic bound {result['bound_ms']:.3f} ms/iter ({result['x_bound']:.2f}x "
              f"of it), evaluation {result['eval_bound_ms']:.3f} ms "
              f"({result['eval_x_bound']:.2f}x)")
    if "floor_ms" in result:
        print(f"  jaxsolve: leaf sums {result['leaf_sums_ms']:.3f} ms; floor "
              f"{result['floor_ms']:.3f} ms/iter ({result['x_floor']:.2f}x of it), evaluation "
              f"{result['eval_floor_ms']:.3f} ms ({result['eval_x_floor']:.2f}x)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", default=",".join(DEFAULT_GAMES),
                        help=f"comma-separated, of {', '.join(GAME_TABLE)}")
    parser.add_argument("--big", action="store_true", help="also Goofspiel 7 (4.8e7 histories)")
    parser.add_argument("--skip", default="", help=f"peers to leave out, of {', '.join(PEERS)}")
    parser.add_argument("--quick", action="store_true", help="smoke run: Kuhn and Leduc, short")
    parser.add_argument("--rounds", type=machine.positive(int), default=7,
                        help="timed blocks per solver (default 7)")
    parser.add_argument("--block-seconds", type=machine.positive(), default=0.5,
                        help="target length of one timed block (default 0.5 s)")
    parser.add_argument("--max-block", type=machine.positive(int), default=10000,
                        help="most iterations in one block (default 10000)")
    parser.add_argument("--game-seconds", type=machine.positive(), default=120.0,
                        help="after 3 rounds, stop timing a game past this (default 120 s)")
    parser.add_argument("--eval-rounds", type=machine.positive(int), default=5,
                        help="turns each solver takes at evaluating (default 5; "
                             "OpenSpiel's evaluation takes one)")
    parser.add_argument("--eval-repeats", type=machine.positive(int), default=3,
                        help="timed evaluations per turn, after one untimed (default 3)")
    parser.add_argument("--check-iterations", type=machine.positive(int), default=3,
                        help="iterations every solver runs before the exploitability "
                             "that checks they solve one game (default 3)")
    parser.add_argument("--out", help="report path (default results/local/bench_peers.json)")
    machine.add_publish_option(parser)
    args = parser.parse_args(argv)
    machine.refuse_published_smoke_run(parser, args)
    keys = [k.strip() for k in args.games.split(",")]
    if args.quick:
        keys, args.rounds, args.block_seconds = ["kuhn", "leduc"], 3, 0.1
        args.eval_rounds, args.eval_repeats = 2, 2
    keys += [k for k in BIG_GAMES if args.big and k not in keys]
    if not all(keys):
        parser.error("--games: unknown empty entry (a stray comma?)")
    unknown = [k for k in keys if k not in GAME_TABLE]
    if unknown:
        parser.error(f"--games: unknown {', '.join(map(repr, unknown))}; "
                     f"known: {', '.join(GAME_TABLE)}")
    skip = {p.strip() for p in args.skip.split(",") if p.strip()}
    if skip - set(PEERS):
        parser.error(f"--skip: unknown {', '.join(sorted(skip - set(PEERS)))}; "
                     f"known: {', '.join(PEERS)}")
    peers = [p for p in PEERS if p not in skip]
    path = machine.report_path("bench_peers.json", args.out, args.publish,
                               Path(tempfile.gettempdir()) / "bench_peers_quick.json"
                               if args.quick else None)

    bytes_per_second = bandwidth()
    report = {"command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine.machine_info(),
              "versions": {d: machine.version(d) for d in ("noregret", "liteefg", "open_spiel")},
              "bandwidth_bytes_per_s": bytes_per_second, "games": []}
    print(f"memory bandwidth (NumPy copy, read + write): {bytes_per_second / 1e9:.1f} GB/s")
    # LiteEFG writes a cache file of each game into the working folder: keep it apart.
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):
        for key in keys:
            print(f"\n== {GAME_TABLE[key].label}")
            result = bench_game(key, peers, args, bytes_per_second)
            print_game(result)
            report["games"].append(result)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(report, indent=1))
    print(f"\nwritten to {machine.where_written(path)}")
    return 0


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    sys.exit(main())
