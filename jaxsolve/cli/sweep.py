"""`jaxsolve sweep`: one game parameter varied, every point solved, from the shell.

    jaxsolve sweep maneuver_detection --vary "situation_probs=[(0.1, 0.9), (0.5, 0.5)]"
    jaxsolve sweep spoof --vary max_rounds=1:4:4 --algo dcfr --iters 2000
    jaxsolve sweep kuhn_poker --vary players=2:4:3 --target 1e-3 --iters 100000

Each value of the varied parameter is a game of its own, compiled once. Points whose
trees share a structure (the parameter moves only payoffs or chance probabilities,
as most do) are stacked and solved together by ONE vmapped, jitted program
(`jaxsolve.stack`), called in about 20 chunks so that a progress bar moves; a
parameter that changes the tree (a number of rounds) gives one batch per structure.
Prints each point's values and exploitability, and writes `sweep.json` (every point,
with its strategy) and `sweep.png` (each player's value against the parameter) to
--out. With `--target EPS` each point stops at the first check at which its
exploitability is at most EPS (`jaxsolve.run_until`; the batched loop freezes the
points that are done), and the table, record and plot give the iterations each
needed. The checks come every 10 iterations, or every 10% of the iterations done
where that is more (as `solve --target` checks: at most a tenth of the run, and a
stop at most 10% past the check that first could have made it), or every
`--eval-every` iterations. Full-width solvers only (their settings with
`--solver-param`, as for `solve`): a sampled run per point is `jaxsolve solve`'s job.
Ctrl-C keeps what is solved: the finished points and those of the batch under way,
as of its last completed call, go to the table, sweep.json (marked "interrupted", with
each point's iterations) and the plot, and the exit code is 130.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsolve import progress
from jaxsolve.batch import STRUCTURE_ARRAYS, stack
from jaxsolve.cli import _solver_args
from jaxsolve.cli._base import (EXIT_INTERRUPTED, CLIError, device_text, nonnegative_real,
                                positive_int)
from jaxsolve.cli._checks import SCHEDULE_HELP, Schedule, schedule
from jaxsolve.cli._game_spec import (
    PYTHON_GAME_HELP, add_max_depth, add_max_nodes, default_out, is_tree_file, load_game,
    parse_params, parse_value)
from jaxsolve.cli._output import writable_folder
from jaxsolve.cli._run import Run, stop
from jaxsolve.compile import compile_game
from jaxsolve.errors import GameError, one_line
from jaxsolve.evaluate import exploitability, policy_value
from jaxsolve.plot import plot_sweep
from jaxsolve.policy import final_policy, table
from jaxsolve.solvers import SOLVERS, run
from jaxsolve.stopping import run_until
from jaxsolve.sampling import SAMPLING_SOLVERS

CHUNKS = 20  # calls per group: the progress bar's steps
FULL_WIDTH = [name for name in SOLVERS if name not in SAMPLING_SOLVERS]


def parse_vary(text: str) -> tuple[str, list[Any]]:
    """KEY=[v1, v2, ...] (a list or tuple, JSON or Python) or KEY=START:STOP:COUNT
    (COUNT evenly spaced numbers, both ends included) -> (KEY, values)."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key or not raw:
        raise CLIError(f"--vary {text!r}: expected KEY=[v1, v2, ...] or KEY=START:STOP:COUNT")
    if raw.count(":") == 2 and raw[:1] not in "[(":
        start, stop, count = raw.split(":")
        try:
            start, stop, count = float(start), float(stop), int(count)
        except ValueError:
            raise CLIError(f"--vary {text!r}: START:STOP:COUNT takes two numbers and an "
                           "integer") from None
        if count < 2:
            raise CLIError(f"--vary {text!r}: COUNT must be at least 2, got {count}")
        values = np.linspace(start, stop, count)
        whole = all(float(x).is_integer() for x in (start, stop)) and np.all(
            values == np.round(values))
        return key, [int(round(v)) if whole else float(v) for v in values]
    values = parse_value(raw, "--vary")
    if not isinstance(values, (list, tuple)) or len(values) < 2:
        raise CLIError(f"--vary {text!r}: expected a list of at least two values, "
                       f"{key}=[a, b, ...], or {key}=START:STOP:COUNT")
    return key, list(values)


def _steps_hint(text: str, values: list) -> str:
    """For START:STOP:COUNT with whole ends but fractional steps (players=2:3:3 gives
    2.0, 2.5, 3.0): the refusal names the whole-looking 2.0, so say why it is a float."""
    raw = text.partition("=")[2].strip()
    if raw.count(":") != 2 or not all(isinstance(v, float) for v in values):
        return ""
    start, stop = values[0], values[-1]
    if not (start.is_integer() and stop.is_integer()):
        return ""
    return (f" ({raw} steps by {abs(values[1] - values[0]):g}, so every value is a float; "
            f"for whole numbers (STOP - START) / (COUNT - 1) must be whole, e.g. "
            f"{int(start)}:{int(stop)}:{int(abs(stop - start)) + 1})")


def _structure(tree) -> tuple:
    """What trees must share to be stacked into one batch (see `jaxsolve.stack`), but
    the game's name: an OpenSpiel game's name lists its parameters, the swept one
    too, so each point's differs even where only its payoffs do."""
    arrays = (np.asarray(getattr(tree, f)).tobytes() for f in STRUCTURE_ARRAYS)
    return (tree.sizes, tree.names.infosets, tree.names.actions, *arrays)


# The batch's jitted steps, one compilation each per solver and tree shape. A
# group is solved in chunks of these calls so that its progress bar moves; the
# iteration counts are traced, so chunks of any size share one program.
@functools.partial(jax.jit, static_argnums=0)
def _init(solver, batch):
    return jax.vmap(solver.init)(batch)


@functools.partial(jax.jit, static_argnums=0)
def _run(solver, batch, states, iterations):
    """`iterations` more for every game of the batch."""
    return jax.vmap(lambda t, s: run(solver, t, s, iterations))(batch, states)


@functools.partial(jax.jit, static_argnums=0)
def _run_until(solver, batch, states, target, iterations, check_every, growth_percent):
    """At most `iterations` more for every game, each stopping at its first check
    (`jaxsolve.stopping.check_gap` apart) at most `target` exploitable; a game already
    there runs none. Returns the states, the iterations each ran [B] and its
    exploitability [B]."""
    return jax.vmap(lambda t, s: run_until(solver, t, s, target, iterations, check_every,
                                           growth_percent))(batch, states)


@functools.partial(jax.jit, static_argnums=0)
def _results(solver, batch, states):
    """Every game's policy that converges (the average; the current one for `mmd`)
    [B, I, A], values [B, P] and exploitability [B]."""
    def one(tree, state):
        policy = final_policy(tree, state, solver=solver)
        return policy, policy_value(tree, policy), exploitability(tree, policy)
    return jax.vmap(one)(batch, states)


def _solve_group(solver, batch, args, plan: Schedule | None, bar) -> tuple:
    """One group's games solved in about CHUNKS calls (with a target, each ending at a
    check of `plan`, so the checks fall where one call's would). Returns the results
    of `_results`, the iterations each game ran [B], and whether Ctrl-C stopped the
    group (its results are then those of the last completed call)."""
    chunk = -(-args.iters // CHUNKS)
    games = len(batch.utilities)
    # The run's state: the games' states, the iterations each ran, the iterations done.
    run = Run((_init(solver, batch), np.zeros(games, np.int64), 0))
    with run:
        while run.state[2] < args.iters:
            states, ran, done = run.state
            if args.target is None:
                n = min(chunk, args.iters - done)
                new_states, new_ran = jax.block_until_ready(_run(solver, batch, states, n)), ran + n
            else:
                # The games still going are at iteration `done`, a check of the plan.
                n = min(plan.end_after(done, chunk), args.iters) - done
                new_states, more, gaps = jax.block_until_ready(_run_until(
                    solver, batch, states, args.target, n, plan.every, plan.growth_percent))
                new_ran = ran + np.asarray(more)
                reached = int(np.sum(np.asarray(gaps) <= args.target))
                bar.set_postfix_str(f"{reached}/{games} at the target", refresh=False)
            run.complete((new_states, new_ran, done + n))
            # With a target the bar counts the iterations of the game that ran longest:
            # a call of n iterations may stop every game well before its end.
            bar.update((done + n if args.target is None else int(new_ran.max())) - bar.n)
            if args.target is not None and reached == games:
                bar.total = bar.n  # the bar ends where the games stopped, not at the cap
                bar.refresh()
                break
    states, ran, _ = run.state
    return (*jax.device_get(_results(solver, batch, states)), ran, run.interrupted)


def _label(value) -> str:
    return json.dumps(value, separators=(", ", ": ")) if isinstance(value, (list, tuple)) \
        else str(value)


def cmd_sweep(args) -> int:
    if args.eval_every is not None and args.target is None:
        raise CLIError("--eval-every applies with --target only (a sweep without a target "
                       "evaluates once, at the end)")
    plan = schedule(args, args.iters) if args.target is not None else None
    params = parse_params(args.param)
    key, values = parse_vary(args.vary)
    settings = _solver_args.parse(args.algo, args.solver_param)
    solver = _solver_args.make(args.algo, settings)
    algo = _solver_args.label(args.algo, settings)
    if key in params:
        raise CLIError(f"--vary {key} and --param {key} name the same parameter")
    if is_tree_file(args.game):
        raise CLIError(f"{args.game}: sweep varies a game parameter, so GAME must be a game "
                       "(a built-in name, openspiel:NAME or FILE.py:NAME), not a saved tree")
    out = Path(args.out) if args.out else default_out(args.game, params, f"sweep-{key}")
    games_ = []
    for value in values:  # every value checked by its game before any compile starts
        try:
            games_.append(load_game(args.game, {**params, key: value}))
        except CLIError as e:
            raise CLIError(f"{key}={_label(value)}: {one_line(e)}{_steps_hint(args.vary, values)}"
                           ) from None
    writable_folder(out, out / "sweep.json")  # before the work, not after the last point
    trees = []
    for value, game in zip(progress.bar(values, desc=f"compiling {args.game}", unit="game",
                                        disable=args.quiet), games_):
        try:
            trees.append(compile_game(game, max_nodes=args.max_nodes,
                                      max_depth=args.max_depth))
        except GameError as e:
            raise CLIError(f"{args.game} at {key}={_label(value)}: {one_line(e)}") from None
    groups: dict[tuple, list[int]] = {}
    for k, tree in enumerate(trees):
        groups.setdefault(_structure(tree), []).append(k)

    points: list[dict | None] = [None] * len(values)
    interrupted = False
    t0 = time.perf_counter()
    device = None
    for g, members in enumerate(groups.values()):
        try:
            batch = stack([trees[k].renamed(f"{args.game} sweep of {key}") for k in members])
        except GameError as e:  # _structure groups what stack takes; this is a safeguard
            raise CLIError(f"cannot batch the points: {one_line(e)}") from None
        described = f"{len(members)} game{'s' * (len(members) > 1)}" + (
            f", batch {g + 1}/{len(groups)}" if len(groups) > 1 else "")
        try:
            with progress.bar(total=args.iters, desc=f"solving {described} ({algo})",
                              unit="it", disable=args.quiet) as bar:
                batch = jax.device_put(batch)
                device = next(iter(batch.utilities.devices()))
                policies, game_values, expl, ran, interrupted = _solve_group(
                    solver, batch, args, plan, bar)
        except KeyboardInterrupt:  # while compiling: the finished batches are kept
            interrupted = True
            break
        for j, k in enumerate(members):
            if ran[j] > 0 or not interrupted:
                points[k] = {"value": values[k], "values": [float(v) for v in game_values[j]],
                             "exploitability": float(expl[j]), "iterations": int(ran[j]),
                             "strategy": table(trees[k], policies[j])}
        if interrupted:
            break
    seconds = time.perf_counter() - t0
    solved = [p for p in points if p is not None]
    if not solved:
        return stop("", "before any point completed an iteration")
    targeted = args.target is not None
    _print_table(solved, key, args.target, show_iterations=targeted or interrupted)
    each = (f"until exploitability <= {args.target:g} (checked {plan.describe()}, at most "
            f"{args.iters})" if targeted else f"{args.iters} iterations each")
    if interrupted:
        print(f"Interrupted: {len(solved)} of {len(points)} points solved (the iterations "
              f"column says how far), {seconds:.1f} s; a new run starts over", file=sys.stderr)
    else:
        print(f"{len(points)} games in {len(groups)} vmapped batch{'es' * (len(groups) > 1)} "
              f"of {algo}, {each}: {seconds:.1f} s with compilation")
    if device is not None:
        print(f"Solved on device {device_text(device)} with JAX {jax.__version__}")
    try:
        out.mkdir(parents=True, exist_ok=True)
        record = {"game": args.game, "params": params, "vary": key, "algo": args.algo,
                  **({"solver_params": settings} if settings else {}),
                  "iterations": args.iters, "batches": len(groups), "seconds": seconds,
                  **({"target": args.target, **plan.record()} if targeted else {}),
                  **({"device": device_text(device), "jax": jax.__version__}
                     if device is not None else {}),
                  **({"interrupted": True} if interrupted else {}), "points": solved}
        (out / "sweep.json").write_text(json.dumps(record, indent=1) + "\n")
        plot_sweep(solved, key, out / "sweep.png", [_label(p["value"]) for p in solved],
                   f"{args.game}{''.join(f' {k}={v}' for k, v in params.items())}: {algo}, " + (
                       f"until exploitability <= {args.target:g}" if targeted
                       else f"{args.iters} iterations per point")
                   + (" (interrupted)" if interrupted else ""),
                   target=args.target)
    except OSError as e:
        raise CLIError(f"cannot write the results to {out}: {one_line(e)}") from None
    print(f"Wrote sweep.json and sweep.png to {out}")
    return EXIT_INTERRUPTED if interrupted else 0


def _print_table(points: list[dict], key: str, target: float | None,
                 show_iterations: bool) -> None:
    """One row per point: its value of KEY, each player's value, the exploitability
    and (with a target, or after Ctrl-C) the iterations it ran."""
    players = max(len(p["values"]) for p in points)  # a sweep may vary the player count
    width = max(len(key), *(len(_label(p["value"])) for p in points))
    print(f"{key:>{width}}  " + "".join(f"{'player ' + str(q):>12}" for q in range(players))
          + f"{'exploitability':>16}" + (f"{'iterations':>12}" if show_iterations else ""))
    for p in points:
        short = target is not None and p["exploitability"] > target
        cells = [f"{v:>12.6f}" for v in p["values"]] + [" " * 12] * (players - len(p["values"]))
        print(f"{_label(p['value']):>{width}}  " + "".join(cells)
              + f"{p['exploitability']:>16.3e}"
              + (f"{p['iterations']:>12}" + (" (cap, target not reached)" if short else "")
                 if show_iterations else ""))


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Adds `sweep`, with the same GAME, --param, --iters, --target, --eval-every and
    --x64 as `solve`."""
    p = subparsers.add_parser("sweep", help="vary one game parameter and solve every point "
                              "in one vmapped program", description=__doc__.split("\n\n", 1)[1],
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("game", metavar="GAME", nargs="?", help="a built-in game (see `jaxsolve "
                   "games`), openspiel:NAME, or " + PYTHON_GAME_HELP)
    p.add_argument("--vary", required=True, metavar="KEY=VALUES",
                   help="the parameter and its values: KEY=[v1, v2, ...] (JSON or Python; "
                        "tuples as `jaxsolve games` prints them) or KEY=START:STOP:COUNT")
    p.add_argument("--param", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="a parameter held fixed (repeatable)")
    p.add_argument("--algo", choices=FULL_WIDTH, default="cfr+", help="solver (default: cfr+)")
    _solver_args.add_argument(p, FULL_WIDTH)
    p.add_argument("--iters", "--iter", dest="iters", type=positive_int, default=1000,
                   metavar="N", help="iterations per point (default: 1000); with "
                   "--target, the most a point may take")
    p.add_argument("--target", type=nonnegative_real, default=None, metavar="EPS",
                   help="stop each point at its first check with exploitability (NashConv "
                   "/ number of players) at most EPS and report the iterations it needed")
    p.add_argument("--eval-every", type=positive_int, default=None, metavar="K",
                   help=f"with --target: check every K iterations, at most --iters "
                   f"(default: {SCHEDULE_HELP})")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory (default: runs/<game>-sweep-<KEY>)")
    p.add_argument("--x64", action="store_true", help="solve in float64")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_max_nodes(p)
    add_max_depth(p)
    p.set_defaults(func=cmd_sweep)
    return p
