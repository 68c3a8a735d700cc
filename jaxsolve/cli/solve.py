"""`jaxsolve solve GAME`: one game solved, checkpointed and reported.

    jaxsolve solve kuhn_poker --algo cfr+ --iters 2000
    jaxsolve solve kuhn_poker --param players=3 --algo dcfr --solver-param gamma=3
    jaxsolve solve openspiel:liars_dice --param dice_sides=4 --iters 500
    jaxsolve solve saved_tree.npz --out runs/mine    # again with --resume: continue it
    jaxsolve solve leduc_poker --algo es-mccfr --batch 256 --seed 1 --iter 5000
    jaxsolve solve kuhn_poker --final threshold --tau 0.05
    jaxsolve solve leduc_poker --target 1e-3 --iters 100000 --eval-every 50
    jaxsolve games

`solve` compiles the game once, puts the tree on the default device and runs the
solver in chunks through one jitted `jaxsolve.run` (the iteration count is traced,
so chunks of any size share one compilation), evaluating the exact exploitability of
the average policy (of the current policy for mmd, whose last iterate converges)
after each chunk and checkpointing. A chunk is `--eval-every`
iterations (default: about 50 per run). With `--target EPS` the run stops after the
first chunk whose exploitability is at most EPS (--iters is then the cap), and the
chunks grow with the run: every 10 iterations, or every 10% of the iterations done
where that is more, so the checks cost at most a tenth of the run and the stop comes
at most 10% past the check that first could have made it; the summary lists the last
checks. The device the solve ran on is printed with the summary. The sampling solvers
(os-mccfr, es-mccfr) take `--batch` samples per player per iteration from the PRNG
key `--seed`; their state carries the key, so a resumed run is bit for bit the
uninterrupted one. `--final` chooses the strategy
written to strategy.json and evaluated at the end (average, current, threshold or
purify; see `jaxsolve.policy.final_policy`; by default the policy that converges). Bad input ends in one line on stderr
and exit code 2; Ctrl-C saves the last completed chunk and exits with 130.

Across processes (started by `python -m jaxsolve.launch`, or by a job script that
sets `JAXSOLVE_NUM_PROCESSES`; see `jaxsolve.processes`), `solve` joins the run's
processes and splits the tree's terminals over every device of every process
(`jaxsolve.distributed.shard_tree`; full-width solvers only). Process 0 prints and
writes the results and checkpoints; the others print only the error that ends them.
`--resume` reads the checkpoint in every process, so on several hosts --out is a
folder they share. A checkpoint resumes alone or across processes alike.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

import jax
import numpy as np

from jaxsolve import base, processes, progress
from jaxsolve.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from jaxsolve.cli import _solver_args
from jaxsolve.cli._base import (EXIT_OK, CLIError, nonnegative_real, number_arg, positive_int,
                                silence_native)
from jaxsolve.cli._checks import SCHEDULE_HELP, Schedule, last_checks, schedule
from jaxsolve.cli._game_spec import (
    PYTHON_GAME_HELP, add_max_depth, add_max_nodes, default_out, is_file_game, load_tree,
    parse_params)
from jaxsolve.cli._output import writable_folder
from jaxsolve.cli._placement import AcrossProcesses, OneDevice, run_jit
from jaxsolve.cli._run import Run, stop
from jaxsolve.distributed import gather
from jaxsolve.errors import ArgumentError, GameError, one_line
from jaxsolve.evaluate import best_response_values, exploitability, policy_value
from jaxsolve.plot import plot_convergence
from jaxsolve.policy import FINAL_KINDS, final_policy, table
from jaxsolve.sampling import DEFAULT_BATCH_SIZE, SAMPLING_SOLVERS, histories_touched
from jaxsolve.solvers import (SOLVERS, CFRState, Solver, average_policy, current_policy,
                              reported_kind)
from jaxsolve.tree import GameTree
from jaxsolve.validate import is_int, is_real

CHECKPOINT, STRATEGY, CONVERGENCE, PLOT = (
    "checkpoint.npz", "strategy.json", "convergence.json", "convergence.png")
EVALUATIONS_PER_RUN = 50  # default --eval-every gives about this many evaluations
DEFAULT_TAU = 0.05  # --tau of --final threshold
FINAL_NAMES = {"average": "average policy", "current": "current policy (last iterate)",
               "threshold": "average policy thresholded at tau={tau:g}",
               "purify": "purified average policy"}

_run_jit = run_jit  # the one jitted `run` of every chunk (shared by the process)
Placement = OneDevice | AcrossProcesses


@functools.lru_cache(maxsize=None)
def _current_of(solver: Solver):
    """`current_policy` of `solver` as a function of (tree, state), one per solver, so
    that `Placement.apply` compiles it once."""
    return lambda tree, state: current_policy(tree, state, solver)


def _run_chunk(where: Placement, solver: Solver, state: CFRState, n: int) -> CFRState:
    """`n` iterations where the solve runs; blocks until they are done. `state` is any
    solver state (a CFRState, or an MCCFRState for sampling solvers)."""
    return where.run(solver, state, n)


def _evaluate(where: Placement, state: CFRState, solver: Solver) -> float:
    """The exploitability of the policy that converges: the average, or the current
    policy of a last-iterate solver (`mmd`)."""
    policy = where.apply(_current_of(solver) if solver.last_iterate else average_policy, state)
    return float(where.apply(exploitability, policy))


def _check_resume(meta: dict, expect: dict, path: Path, iters: int) -> None:
    problems = []
    for key in ("game", "params", "algo", "solver_params", "batch", "seed"):
        if key not in expect:  # batch and seed: sampling solvers only
            continue
        if key == "game" and is_file_game(expect["game"]):
            continue  # a saved tree may have moved; its content digest is checked below
        # (a checkpoint of the older format, without solver_params, ran the defaults: {})
        theirs = meta.get(key, {} if key == "solver_params" else None)
        if json.dumps(theirs, sort_keys=True) != json.dumps(expect[key], sort_keys=True):
            problems.append(f"{key} {theirs!r}, not {expect[key]!r}")
    if not problems and meta.get("tree") != expect["tree"]:
        problems.append("its game tree differs from this one")
    if not problems and meta.get("payoffs", expect["payoffs"]) != expect["payoffs"]:
        # (checkpoints before this field have none: not checked)
        problems.append("its payoffs or chance probabilities differ from this game's (was "
                        "the game's code or file changed?)")
    if problems:
        raise CLIError(f"{path} belongs to another run ({'; '.join(problems)}); "
                       "choose another --out or drop --resume to start over")
    if meta.get("dtype") != expect["dtype"]:
        hint = "with --x64" if meta.get("dtype") == "float64" else "without --x64"
        raise CLIError(f"{path} holds {meta.get('dtype')} arrays; resume {hint}")
    done, convergence = meta.get("iteration", 0), meta.get("convergence", [])
    if (not is_int(done) or not isinstance(convergence, list)
            or not all(isinstance(r, dict) and is_real(r.get("seconds")) for r in convergence)):
        raise CLIError(f"{path}: its run record is damaged (iteration {done!r}, or a "
                       "convergence entry without seconds); drop --resume to start over")
    if done > iters:
        raise CLIError(f"{path} is already at iteration {done}, beyond "
                       f"--iters {iters}; pass --iters {done} or more")


def _payoff_digest(tree: GameTree) -> str:
    """A hash of the utilities and chance probabilities: `tree.names.digest` covers
    the names only, so a game whose payoffs were edited between a run and its
    --resume would otherwise continue the old regrets on the new game."""
    digest = hashlib.sha256()
    for array in (tree.utilities, tree.chance_probs):
        digest.update(np.ascontiguousarray(np.asarray(array, np.float64)).tobytes())
    return digest.hexdigest()[:16]


def _check_state(saved, template, path: Path) -> None:
    """The loaded state must be what this solver's init gives, up to its values:
    same type, and every array of the same shape and dtype (e.g. the frontier)."""
    if type(saved) is not type(template):
        raise CLIError(f"{path} holds a {type(saved).__name__}, but --algo needs a "
                       f"{type(template).__name__}; choose another --out or drop --resume")
    for field, a, b in zip(template._fields, saved, template):
        if np.shape(a) != np.shape(b) or np.asarray(a).dtype != np.dtype(b.dtype):
            raise CLIError(f"{path}: its {field} is {np.asarray(a).dtype}{list(np.shape(a))}, "
                           f"this run's is {np.dtype(b.dtype)}{list(np.shape(b))}; choose "
                           "another --out or drop --resume")


def _resume_words(args, out: Path) -> list[str]:
    """The command that continues this run (its settings, --out and --resume)."""
    words = ["jaxsolve", "solve", args.game, "--algo", args.algo, "--iters", str(args.iters)]
    if args.algo in SAMPLING_SOLVERS:
        words += ["--batch", str(args.batch or DEFAULT_BATCH_SIZE), "--seed", str(args.seed or 0)]
    if args.param:
        words += ["--param", *args.param]
    words += _solver_args.words(args.solver_param)
    if args.final is not None:
        words += ["--final", args.final]
    if args.tau is not None:
        words += ["--tau", repr(args.tau)]
    if args.eval_every:
        words += ["--eval-every", str(args.eval_every)]
    if args.target is not None:
        words += ["--target", repr(args.target)]
    words += ["--out", str(out), "--resume"]
    if args.x64:
        words.append("--x64")
    return words


def _on_one_line(text: str) -> str:
    """A name with line breaks (OpenSpiel's goofspiel writes an infoset as five lines)
    as one line, its lines joined by " | ", so that each infoset stays one row."""
    if "\n" not in text and "\r" not in text:
        return text
    return " | ".join(part.strip() for part in text.splitlines() if part.strip())


def format_table(strategy: dict[str, dict[str, float]], max_rows: int = 0) -> str:
    """Aligned text: one infoset per line, then `action: probability` columns (names
    with line breaks joined into one line; strategy.json keeps them as they are)."""
    rows = [(_on_one_line(name), {_on_one_line(label): p for label, p in row.items()})
            for name, row in strategy.items()]
    shown = rows if max_rows <= 0 else rows[:max_rows]
    if not shown:
        return "(no infosets)"
    name_width = max(len(name) for name, _ in shown)
    columns = max(len(row) for _, row in shown)
    label_width = [max((len(list(row)[j]) for _, row in shown if len(row) > j), default=0)
                   for j in range(columns)]
    lines = []
    for name, row in shown:
        cells = [f"{(label + ':').ljust(label_width[j] + 1)} {p:.4f}"
                 for j, (label, p) in enumerate(row.items())]
        lines.append(f"  {name.ljust(name_width)}  " + "  ".join(cells))
    if len(rows) > len(shown):
        lines.append(f"  ... {len(rows) - len(shown)} more infosets (all in {STRATEGY})")
    return "\n".join(lines)


def _write_results(out: Path, where: Placement, tree: GameTree, state: CFRState,
                   history: list, args, params: dict, settings: dict, run_info: dict,
                   solver: Solver) -> None:
    """Prints and writes (where `where.lead`) the final policy (`--final`), its value and
    exploitability, the convergence record and its plot. `tree`: the game's tree,
    unsplit; `run_info`: batch and seed of a sampling run."""
    iterations = int(state.iteration)
    kind, tau = _final_kind(args, solver), _final_tau(args)
    # The final policy is infoset-sized work: each process computes it on its own.
    policy = np.asarray(final_policy(tree, gather(state), kind, tau, solver))
    values = np.asarray(where.apply(policy_value, policy), np.float64)
    expl = float(where.apply(exploitability, policy))
    strategy = table(tree, policy)
    players = tree.sizes.num_players
    algo = _solver_args.label(args.algo, settings)
    result = {"game": args.game, "params": params, "algo": args.algo,
              **({"solver_params": settings} if settings else {}), **run_info,
              "iterations": iterations, "players": players, "final": kind,
              **({"tau": tau} if tau is not None else {}), "exploitability": expl,
              "value": values.tolist()}

    described = FINAL_NAMES[kind].format(tau=tau)
    print(f"Strategy ({described} of {algo} after {iterations} iterations):")
    print(format_table(strategy, args.max_rows))
    # The expected payoffs when every player follows the strategy above: the game's
    # value only where that strategy is an equilibrium (exploitability 0).
    print("Value of this strategy: " + ", ".join(f"player {p} = {v:+.6f}"
                                                  for p, v in enumerate(values)))
    print(f"Exploitability: {expl:.6g}")
    if kind != reported_kind(solver):  # here: of the average, what the record tracks
        average_expl = _evaluate(where, state, solver)
        result["average_exploitability"] = average_expl
        print(f"Exploitability of the average policy: {average_expl:.6g} (for comparison)")
    if run_info:  # a sampling solver: how much of the tree its samples visited
        touched = float(histories_touched(state))
        result["histories_touched"] = touched
        full = tree.sizes.num_players * tree.sizes.num_nodes
        print(f"Histories touched: {touched:,.0f}, {touched / max(iterations, 1):,.0f} per "
              f"iteration of {run_info['batch']} samples per player (seed {run_info['seed']}; "
              f"a full-width iteration touches {full:,}: {tree.sizes.num_nodes:,} histories "
              "for each player; every sample counts the histories it visits, so samples "
              "that share histories count them again)")
    forgetful = [p for p, ok in enumerate(tree.sizes.perfect_recall) if not ok]
    if forgetful:  # best response on the recorded infoset tree is then only approximate
        result["imperfect_recall_players"] = forgetful
        print(f"Note: imperfect recall for player(s) {forgetful}: the best response and "
              "exploitability above are NOT exact for them.")
    if tree.sizes.utility_sum is None:  # general-sum: show each player's gain
        gains = np.asarray(where.apply(best_response_values, policy), np.float64) - values
        result["nash_conv"] = float(gains.sum())
        result["best_response_gains"] = gains.tolist()
        print(f"NashConv: {gains.sum():.6g} (best-response gains: "
              + ", ".join(f"player {p} = {g:.6g}" for p, g in enumerate(gains)) + ")")
    result.update(_report_target(args.target, history, iterations, _schedule(args),
                                 reported_kind(solver)))
    device = where.describe()
    result["device"], result["jax"] = device, jax.__version__
    print(f"Solved on {'device ' * isinstance(where, OneDevice)}{device} with JAX "
          f"{jax.__version__}")
    result["strategy"] = strategy
    if not where.lead:
        return
    (out / STRATEGY).write_text(json.dumps(result, indent=1) + "\n")
    (out / CONVERGENCE).write_text(json.dumps(history, indent=1) + "\n")
    # The game's parameters in the title too: 3-player Kuhn's plot read as 2-player's.
    given = "".join(f" {k}={v}" for k, v in params.items())
    plot_convergence(history, out / PLOT, title=f"{args.game}{given} - {algo}",
                     target=args.target)
    print(f"Wrote {STRATEGY}, {CONVERGENCE}, {PLOT} and {CHECKPOINT} to {out}")


def _schedule(args) -> Schedule:
    """When the run checks: every --eval-every iterations; without it, the growing
    schedule of --target, or about EVALUATIONS_PER_RUN checks over --iters."""
    return schedule(args, max(1, math.ceil(args.iters / EVALUATIONS_PER_RUN)))


def _target_reached(target: float | None, history: list) -> bool:
    """Whether `--target` is given and the last evaluation (the exploitability of the
    policy that converges) is at most it."""
    return (target is not None and bool(history)
            and history[-1]["exploitability"] <= target)


def _report_target(target: float | None, history: list, iterations: int,
                   plan: Schedule, kind: str) -> dict:
    """Prints whether `--target` was reached, when the run checked and its last
    checks; returns its part of strategy.json. `kind`: the policy the checks
    evaluate, "average" or "current"."""
    if target is None:
        return {}
    reached = _target_reached(target, history)
    last = history[-1]["exploitability"] if history else float("nan")
    if reached:
        # A resumed run can be past the target already: name where the record first met it.
        first = next(r["iteration"] for r in history if r["exploitability"] <= target)
        since = "" if first == iterations else f" (first met at iteration {first})"
        print(f"Target reached: the {kind} policy's exploitability {last:.6g} <= {target:g} "
              f"at iteration {iterations}{since}")
    else:
        print(f"Target NOT reached: the {kind} policy's exploitability is {last:.6g} > "
              f"{target:g} after {iterations} iterations (the --iters cap); raise --iters "
              "and --resume to go on")
    if history:
        print(f"Checked {plan.describe()}; the last checks (iteration: exploitability): "
              f"{last_checks(history)} (every check is in {CONVERGENCE})")
    return {"target": target, "target_reached": reached, **plan.record()}


def _final_kind(args, solver: Solver) -> str:
    """--final as it applies: the policy that converges unless given; a kind derived
    from the average is refused for a solver that keeps none (`mmd`)."""
    if args.final is None:
        return reported_kind(solver)
    if solver.last_iterate and args.final != "current":
        raise CLIError(f"--final {args.final} needs an average policy; --algo {args.algo} "
                       "keeps none: its current policy converges (--final current, the "
                       "default)")
    return args.final


def _final_tau(args) -> float | None:
    """--tau as it applies: DEFAULT_TAU for --final threshold unless given; None for
    the other kinds (where giving --tau is an error)."""
    if args.final != "threshold":
        if args.tau is not None:
            given = f", not --final {args.final}" if args.final else ""
            raise CLIError(f"--tau applies to --final threshold only{given}")
        return None
    return DEFAULT_TAU if args.tau is None else args.tau


def _note_replaced_run(ckpt: Path, args, out: Path, params: dict, settings: dict) -> None:
    """Says on stderr that a run without --resume replaces the one already in `out`."""
    if not ckpt.exists():
        return
    try:
        meta = load_checkpoint(ckpt)[1]
        done = int(meta["iteration"])
    except (CheckpointError, KeyError, TypeError, ValueError) as e:
        print(f"jaxsolve: note: replacing the unreadable checkpoint in {out} ({one_line(e)})",
              file=sys.stderr)
        return
    theirs = (meta.get("game"), meta.get("algo"), meta.get("params", {}),
              meta.get("solver_params", {}))
    ours = (args.game, args.algo, params, settings)
    if theirs != ours:  # --resume could not continue it
        print(f"jaxsolve: note: replacing the run in {out} ({theirs[0]}, "
              f"{_solver_args.label(theirs[1], theirs[3])}"
              f"{', ' + str(theirs[2]) if theirs[2] else ''}, at iteration {done})",
              file=sys.stderr)
        return
    more = f" with --iters above {done}" if done >= args.iters else ""
    print(f"jaxsolve: note: replacing the run in {out} (at iteration {done}); --resume{more} "
          "would continue it instead", file=sys.stderr)


def _join(args, stack: contextlib.ExitStack) -> type[Placement]:
    """Where the solve runs: `AcrossProcesses` once joined to the run's processes, where
    `JAXSOLVE_NUM_PROCESSES` says there are several (`jaxsolve.processes`), else
    `OneDevice`. Every process but process 0 then writes nothing to stdout or stderr
    until the command ends (the error that ends a process is still printed)."""
    try:
        settings = processes.from_environment()
    except ArgumentError as e:
        raise CLIError(one_line(e)) from None
    if settings is None:
        return OneDevice
    if args.algo in SAMPLING_SOLVERS:
        raise CLIError(f"--algo {args.algo} samples terminals by their ids in the whole tree, "
                       f"so it runs in one process (unset {processes.NUM_PROCESSES})")
    with silence_native(1):  # gloo's note when the processes first connect
        processes.initialize(**settings._asdict())
    if not processes.is_lead():
        null = stack.enter_context(open(os.devnull, "w"))
        stack.enter_context(contextlib.redirect_stdout(null))
        stack.enter_context(contextlib.redirect_stderr(null))
        args.quiet = True
    return AcrossProcesses


def cmd_solve(args) -> int:
    with contextlib.ExitStack() as stack:
        return _solve(args, stack)


def _solve(args, stack: contextlib.ExitStack) -> int:
    params = parse_params(args.param)
    settings = _solver_args.parse(args.algo, args.solver_param)
    _final_tau(args)  # bad --final/--tau combinations fail before any work
    plan = _schedule(args)  # and --eval-every past --iters
    sampling = args.algo in SAMPLING_SOLVERS
    batch = args.batch if args.batch is not None else DEFAULT_BATCH_SIZE
    seed = args.seed if args.seed is not None else 0
    run_info = {"batch": batch, "seed": seed} if sampling else {}
    solver = _solver_args.make(args.algo, settings, batch)  # bad values fail before the walk
    placement = _join(args, stack)  # before the walk: it fixes the devices JAX sees
    if not sampling and (args.batch is not None or args.seed is not None):
        given = [f for f, v in (("--batch", args.batch), ("--seed", args.seed)) if v is not None]
        print(f"jaxsolve: note: {' and '.join(given)} only appl{'y' if len(given) > 1 else 'ies'}"
              " to the sampling solvers "
              f"({', '.join(SAMPLING_SOLVERS)}); ignored for {args.algo}", file=sys.stderr)
    _final_kind(args, solver)  # and a --final the solver cannot give
    tree = load_tree(args.game, params, progress=not args.quiet, max_nodes=args.max_nodes,
                     max_depth=args.max_depth)
    out = Path(args.out) if args.out else default_out(args.game, params, args.algo)
    ckpt = out / CHECKPOINT
    identity = {"game": args.game, "params": params, "algo": args.algo,
                "solver_params": settings, **run_info,
                "tree": tree.names.digest, "payoffs": _payoff_digest(tree),
                "dtype": str(base.float_dtype())}

    where = placement(tree)
    try:
        fresh = solver.init(tree, jax.random.PRNGKey(seed)) if sampling else solver.init(tree)
    except GameError as e:
        raise CLIError(f"{args.game}: {one_line(e)}") from None
    if args.resume:
        try:
            saved, meta = load_checkpoint(ckpt)
        except CheckpointError as e:
            raise CLIError(f"cannot --resume: {one_line(e)}") from None
        _check_resume(meta, identity, ckpt, args.iters)
        _check_state(saved, fresh, ckpt)
        state = jax.device_put(saved)
        history = list(meta.get("convergence", []))
    else:
        state, history = fresh, []
    if where.lead:  # the one process that writes
        writable_folder(out, ckpt)
        if not args.resume:
            _note_replaced_run(ckpt, args, out, params, settings)

    def save(done: tuple) -> None:  # (state, convergence record, iteration)
        state, history, it = done
        save_checkpoint(ckpt, state, {**identity, "iteration": it, **plan.record(),
                                      "convergence": history})

    start = int(state.iteration)
    seconds0, t0 = (history[-1]["seconds"] if history else 0.0), time.perf_counter()
    bar = progress.bar(total=args.iters, initial=start, unit="it",
                       desc=f"{args.game} {_solver_args.label(args.algo, settings)}",
                       disable=args.quiet)
    run = Run((state, history, start), save if where.lead else None, bar=bar)
    try:
        with run:
            # A resumed run may be at the target already.
            while run.state[2] < args.iters and not _target_reached(args.target, run.state[1]):
                state, history, it = run.state
                n = min(args.iters, it + plan.gap(it)) - it
                new_state = _run_chunk(where, solver, state, n)
                expl = _evaluate(where, new_state, solver)
                record = {"iteration": it + n, "exploitability": expl,
                          "seconds": round(seconds0 + time.perf_counter() - t0, 6)}
                if sampling:
                    record["touched"] = float(histories_touched(new_state))
                bar.set_postfix_str(f"exploitability={expl:.3e}", refresh=False)
                run.complete((new_state, [*history, record], it + n), advance=n)
            if _target_reached(args.target, run.state[1]):
                bar.total = bar.n  # the bar ends where the run stopped, not at the cap
                bar.refresh()
    except OSError as e:  # the disk filled up, the folder went away, ...
        raise CLIError(f"cannot write the checkpoint {ckpt}: {one_line(e)}") from None
    state, history, it = run.state
    if run.interrupted:  # every completed chunk is in the checkpoint already
        if it == start and not args.resume:
            return stop("", "before the first chunk completed")
        return stop("", f"at iteration {it}", path=ckpt, resume=_resume_words(args, out))
    try:
        _write_results(out, where, tree, state, history, args, params, settings, run_info,
                       solver)
    except OSError as e:
        raise CLIError(f"cannot write the results to {out}: {one_line(e)}") from None
    return EXIT_OK


_seed = number_arg(int, "must lie in [0, 2^32)", lambda v: 0 <= v < 2**32)
_probability = number_arg(float, "must lie in [0, 1)", lambda v: 0.0 <= v < 1.0)


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Adds `solve` to the command line's subcommands."""
    solve = subparsers.add_parser("solve", help="solve a game and report strategy, value "
                                  "and exploitability", description=__doc__.split("\n\n", 1)[1],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    solve.add_argument("game", metavar="GAME", nargs="?", help="a built-in game (see "
                       "`jaxsolve games`), openspiel:NAME, a saved tree FILE.npz, or "
                       + PYTHON_GAME_HELP)
    solve.add_argument("--algo", choices=list(SOLVERS), default="cfr+",
                       help="solver (default: cfr+): cfr updates both players each "
                       "iteration, cfr-alt alternates them (OpenSpiel's CFRSolver); cfr+, "
                       "lcfr, dcfr (1.5, 0, 2), pcfr+, dcfr+, pdcfr+ and sapcfr+ alternate; "
                       "mmd (magnetic mirror descent) updates both at once and its current "
                       "policy converges; os-mccfr and es-mccfr sample (outcome and "
                       "external sampling)")
    solve.add_argument("--iters", "--iter", dest="iters", type=positive_int, default=1000,
                       metavar="N", help="total iterations (default: 1000); for the "
                       "sampling solvers one iteration is --batch samples per player")
    solve.add_argument("--batch", type=positive_int, default=None, metavar="B",
                       help=f"samples per player per iteration of the sampling solvers "
                       f"({', '.join(SAMPLING_SOLVERS)}; default: {DEFAULT_BATCH_SIZE}); "
                       "ignored, with a note, for the full-width solvers")
    solve.add_argument("--seed", type=_seed, default=None, metavar="S",
                       help="PRNG seed of the sampling solvers, used as "
                       "jax.random.PRNGKey(S) (default: 0); ignored, with a note, for the "
                       "full-width solvers")
    solve.add_argument("--final", choices=FINAL_KINDS, default=None,
                       help="strategy written to strategy.json and evaluated at the end: "
                       "the average policy (default; for mmd the current one, its only "
                       "choice), the current one (last iterate), the average thresholded "
                       "at --tau, or the average purified to its most likely actions; the "
                       "convergence record tracks the average (mmd: the current policy)")
    solve.add_argument("--tau", type=_probability, default=None, metavar="TAU",
                       help=f"--final threshold drops probabilities below TAU and "
                       f"renormalises (default: {DEFAULT_TAU}); an error with other --final")
    solve.add_argument("--eval-every", type=positive_int, default=None, metavar="K",
                       help=f"evaluate exploitability and checkpoint every K iterations, at "
                       f"most --iters (default: about {EVALUATIONS_PER_RUN} evaluations per "
                       f"run; with --target, {SCHEDULE_HELP})")
    solve.add_argument("--target", type=nonnegative_real, default=None, metavar="EPS",
                       help="stop at the first evaluation at which the average policy's "
                       "(mmd: the current policy's) "
                       "exploitability (NashConv / number of players, OpenSpiel's) is at "
                       f"most EPS; --iters is then the cap. Checked {SCHEDULE_HELP} (the "
                       "checks cost at most a tenth of the run), unless --eval-every is given")
    solve.add_argument("--param", action="extend", nargs="+", default=[],
                       metavar="KEY=VALUE", help="game parameter (repeatable)")
    _solver_args.add_argument(solve, list(SOLVERS))
    solve.add_argument("--out", default=None, metavar="DIR",
                       help="output directory (default: runs/<game>-<algo>)")
    solve.add_argument("--resume", action="store_true",
                       help=f"continue from DIR/{CHECKPOINT} up to --iters")
    solve.add_argument("--x64", action="store_true", help="solve in float64")
    add_max_nodes(solve)
    add_max_depth(solve)
    solve.add_argument("--max-rows", type=number_arg(int, "must be at least 0", lambda v: v >= 0),
                       default=100, metavar="N",
                       help="strategy rows printed (default 100, 0 = all; the JSON has all)")
    solve.add_argument("--quiet", action="store_true", help="no progress bar")
    solve.set_defaults(func=cmd_solve)
    return solve
