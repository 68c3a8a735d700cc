"""`jaxsolve pursuit solve|train|eval`: the pursuit-evasion AlphaZero from the shell.

    jaxsolve pursuit solve [--variant goal] [--grid 7] [--turns 8] [--threshold 0] [--start 3 0]
    jaxsolve pursuit train --variant goal --iterations 100 --checkpoint az.npz [--resume]
    jaxsolve pursuit train --variant goal --grid 11 --minutes 1 [--explore 0.5]
    jaxsolve pursuit eval  --checkpoint az.npz [--mcts] [--simulations 32]

`eval` and `train --resume` take every setting left out from the checkpoint (its game,
network, search, ...); one given must match the checkpoint's game and network. Each
command has its own `--help`. Hook into the main parser with
`add_subparser(subparsers)`; the subcommands call `main`. The AlphaZero code itself is
`jaxsolve.alphazero`.
Bad input (an even or too small grid, a threshold outside [0, 1), a start off the
board, a negative budget, a missing, damaged or mismatched checkpoint - one trained for
another game or network, or no pursuit checkpoint at all) is reported as one line,
`jaxsolve: error: ...`, with exit code 2: the numbers are checked as they are parsed
(`number_arg`), the rest raises its `CLIError`; so is running out of
memory, naming the options to reduce.
Ctrl-C in `train` saves the last completed iteration and prints the command that
resumes it (exit code 130); `train` without --resume says which run it replaces.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys

import jax

from jaxsolve._deprecated import renamed
from jaxsolve.alphazero import exact
from jaxsolve.cli._base import CLIError, number_arg
from jaxsolve.cli._output import check_writable
from jaxsolve.cli._run import stop
from jaxsolve.errors import one_line
from jaxsolve.games import pursuit_evasion as pe


_at_least_one = number_arg(int, "must be at least 1", lambda v: v >= 1)
_non_negative = number_arg(int, "must be at least 0", lambda v: v >= 0)
_grid = number_arg(int, "must be odd and at least 3", lambda v: v >= 3 and v % 2 == 1)
_minutes = number_arg(float, "must be a positive number of minutes",
                      lambda v: math.isfinite(v) and v > 0)
_fraction = number_arg(float, "must lie in [0, 1]", lambda v: 0.0 <= v <= 1.0)
# Params.threshold: at 1 or above the detection rate never exceeds it (NaN fails too).
_threshold = number_arg(float, "must lie in [0, 1)", lambda v: 0.0 <= v < 1.0)
_seed = number_arg(int, "must lie in [0, 2^31)", lambda v: 0 <= v < 2 ** 31)


def _variant(text: str) -> str:
    """--variant's value as given; "seed", the old name of "base", warns and is "base"."""
    if text == "seed":
        renamed("--variant seed", "--variant base", "pursuit")
        return "base"
    return text


# Defaults of the options a checkpoint also records. They are applied late
# (`_setting`), so that `eval` and `train --resume` can tell an option the user gave
# from one left out, and take the left-out ones from the checkpoint instead.
# turns, threshold and start default to None: the variant's own (`_variant_defaults`).
DEFAULTS = {"variant": "goal", "grid": 5, "sensor": "ray", "turns": None, "threshold": None,
            "start": None, "games": 64, "simulations": 16, "search": "gumbel",
            "hidden": (128, 128, 128), "explore": 0.5, "seed": 0}
_GAME_OPTIONS = ("variant", "grid", "sensor", "turns", "threshold", "start")
EVAL_EVERY = 10  # train's --eval-every default


def _setting(args, name, recorded=None):
    """The option `name` as given, else the checkpoint's value (`recorded`), else its
    default."""
    given = getattr(args, name, None)
    if given is not None:
        return given
    return DEFAULTS[name] if recorded is None else recorded


def _variant_defaults(variant: str, grid: int, turns: int | None = None) -> dict:
    """turns, threshold and start of `variant` on a `grid` board when left out: goal
    (`pe.goal_variant`) grid + 1 turns, one detection allowed (threshold 1 / turns, of
    the `turns` given if any), the middle of the top row; base (`pe.Params`) 20 turns,
    0.5, the centre."""
    if variant == "goal":
        t = grid + 1
        return {"turns": t, "threshold": 1 / (t if turns is None else turns),
                "start": (grid // 2, 0)}
    return {"turns": 20, "threshold": 0.5, "start": (grid // 2, grid // 2)}


def _recorded_game_options(env: pe.Params) -> dict:
    """The game options that give a recorded game (variant, grid, sensor, turns,
    threshold, start), for the options not given: the goal variant is the one with a
    goal row; turns, threshold and start are None where they are the variant's defaults
    (so they follow a --grid or --turns given, as a left-out option does)."""
    variant = "base" if env.goal_row is None else "goal"
    default = _variant_defaults(variant, env.grid_size, env.max_turns)
    values = {"turns": env.max_turns, "threshold": env.threshold, "start": env.start}
    return {"variant": variant, "grid": env.grid_size, "sensor": env.sensor,
            **{k: None if v == default[k] else v for k, v in values.items()}}


def _describe_game(options: dict) -> str:
    """`_recorded_game_options` as "variant=goal, grid=5, sensor=ray[, turns=...]",
    without the options left at the variant's defaults."""
    return ", ".join(f"{k}={v}" for k, v in options.items() if v is not None)


def env_from_args(args, recorded: pe.Params | None = None) -> pe.Params:
    """The game of the options; with `recorded` (a checkpoint's game), that game itself
    when no game option is given, else the options given over its own. --turns,
    --threshold and --start override the variant's defaults (`_variant_defaults`)."""
    if recorded is not None and all(getattr(args, k, None) is None for k in _GAME_OPTIONS):
        return recorded
    base = _recorded_game_options(recorded) if recorded is not None else {}
    variant, grid, sensor, turns, threshold, start = (
        _setting(args, k, base.get(k)) for k in _GAME_OPTIONS)
    default = _variant_defaults(variant, grid, turns)
    if start is not None and not all(0 <= c < grid for c in start):
        whose = "" if getattr(args, "start", None) is not None else " (the checkpoint's)"
        raise CLIError(f"--start {start[0]} {start[1]}{whose} is off the {grid}x{grid} board: "
                       f"x (column) and y (row) must lie in 0..{grid - 1}")
    if threshold is None and not default["threshold"] < 1:
        raise CLIError(f"--turns {turns} with --variant goal: the default threshold 1 / turns "
                       "is 1, which no detection rate exceeds; give --threshold in [0, 1)")
    game = {"sensor": sensor, "max_turns": default["turns"] if turns is None else turns,
            "threshold": default["threshold"] if threshold is None else threshold}
    if start is not None and tuple(start) != default["start"]:
        game["evader_start"] = tuple(start)  # the centre stays None, as in Params()
    try:
        if variant == "goal":
            return pe.goal_variant(grid, **game)
        return pe.Params(grid_size=grid, **game)
    except ValueError as e:
        raise CLIError(f"pursuit: {e}") from None


# How a game or network setting is given on the command line, to name it in errors;
# the Params fields without an option keep their own names.
_AS_OPTION = {
    "grid_size": lambda v: f"--grid {v}", "max_turns": lambda v: f"--turns {v}",
    "threshold": lambda v: f"--threshold {v!r}", "sensor": lambda v: f"--sensor {v}",
    "evader_start": lambda v: f"--start {v[0]} {v[1]}",
    "goal_row": lambda v: f"--variant {'base' if v is None else 'goal'}",
    "hidden": lambda v: "--hidden " + " ".join(map(str, v))}


def _refuse_contradicting_options(path, recorded, cfg) -> None:
    """Refuses options that give another game or network than the checkpoint at `path`
    was trained for (`recorded`), naming them as options ("--turns 3"): a left-out
    option takes the checkpoint's value, so only a given one can contradict it. The
    game is compared by its rules (`Params.rules`): --threshold 0.34 over a checkpoint
    of 1/3 on 3 turns is the same game (both allow one detection)."""
    from jaxsolve.alphazero import train  # noqa: PLC0415 - Flax and optax load on use
    # The settings train.load compares too, so that the two checks cannot drift apart.
    old = train.game_and_network(recorded.env, recorded.hidden)
    new = train.game_and_network(cfg.env, cfg.hidden)
    keys = [k for k in new if old.get(k) != new[k]]
    if keys:
        show = lambda d: ", ".join(_AS_OPTION[k](d[k]) if k in _AS_OPTION else f"{k}={d[k]!r}"
                                   for k in keys)
        raise CLIError(f"--checkpoint {path} was trained with {show(old)}; the options give "
                       f"{show(new)} (leave them out to use the checkpoint's)")
    if recorded.env.threshold != cfg.env.threshold:
        print(f"pursuit: note: --threshold {cfg.env.threshold!r} allows as many detections "
              f"({cfg.env.max_detections}) as the checkpoint's {recorded.env.threshold!r}: "
              "the same game", file=sys.stderr)


def _load_checkpoint(path, fresh, cfg):
    """The checkpoint at `path`, refused with a one-line error if it is unreadable or of
    another game or network than `cfg` (the checkpoint records its own)."""
    from jaxsolve.alphazero import train  # noqa: PLC0415 - Flax and optax load on use
    try:
        return train.load(path, fresh, config=cfg)
    except (OSError, ValueError) as e:
        raise CLIError(f"--checkpoint {e}") from None


def _can_save(path, folder):
    """Refuses a --checkpoint that `train` could not write: a folder, or a file in a
    folder that is missing or not writable, or no name at all."""
    if not str(path).strip():
        raise CLIError("--checkpoint is empty; give a file name, e.g. pursuit_az.npz")
    if os.path.isdir(path):
        raise CLIError(f"--checkpoint {path} is a folder; give a file name, e.g. "
                       f"{os.path.join(path, 'pursuit_az.npz')}")
    if not os.path.isdir(folder):
        raise CLIError(f"--checkpoint {path}: the folder {folder} does not exist")
    check_writable(folder, "--checkpoint folder")


def _solve_exactly(env):
    """`exact.solve(env)`; a game too large for it (the solver refuses it before
    allocating) is a one-line error, which says where the limit can be raised: only
    from Python, the command line has no option for it."""
    try:
        return exact.solve(env)
    except exact.TooLarge as e:
        raise CLIError(f"pursuit: {e.problem} The command line keeps that limit: choose a "
                       "smaller --grid or fewer --turns, or solve it from Python with the "
                       f"API's exact.solve(params, max_bytes={e.need:_}) if that much memory "
                       "fits") from None
    except ValueError as e:
        raise CLIError(f"pursuit: {e}") from None


# What an out-of-memory error in each command can be cured by (item by item, the
# options that size its arrays).
_MEMORY_OPTIONS = {
    "solve": "a smaller --grid or fewer --turns",
    "train": "smaller --games, --hidden or --simulations (or --grid, --turns)",
    "eval": "fewer --simulations, or leave out --mcts (the network is the checkpoint's)",
}


def _out_of_memory(command: str, error: BaseException) -> CLIError:
    """The one-line error for JAX's RESOURCE_EXHAUSTED (or NumPy's MemoryError) in
    `command`, naming the options that would shrink it."""
    detail = one_line(error).split(" Traceback")[0][:200]
    return CLIError(f"pursuit {command} ran out of memory ({detail}); try "
                    f"{_MEMORY_OPTIONS[command]}")


def _note_replaced_run(path: str) -> None:
    """Says on stderr that `train` without --resume will replace the checkpoint at
    `path` (when the first iteration completes: an interrupt before leaves it)."""
    from jaxsolve.alphazero import train  # noqa: PLC0415 - Flax and optax load on use
    if not os.path.exists(path):
        return
    print(f"pursuit: note: replacing the run in {path} (at iteration "
          f"{train.saved_iteration(path)}); --resume would continue it instead",
          file=sys.stderr)


def _refuse_overwriting_other_files(path: str) -> None:
    """Refuses a --checkpoint that exists but holds no readable pursuit checkpoint: a
    slip such as `--checkpoint notes.txt` would otherwise destroy that file when the
    first iteration is saved. (A checkpoint there is replaced, and `train` says so.)"""
    from jaxsolve.alphazero import train  # noqa: PLC0415 - Flax and optax load on use
    try:
        train.saved_iteration(path)
    except (OSError, ValueError) as e:
        raise CLIError(f"--checkpoint {path} exists and is not a readable pursuit checkpoint "
                       f"({one_line(e)}); train would overwrite it: give another path, or "
                       "delete the file first") from None


def _resume_words(args, iterations, budget, done: int, start: int, seconds: float) -> list:
    """The command that continues an interrupted `train` (the checkpoint records the
    game, network and search, so only the budget left and --eval-every are given)."""
    words = ["jaxsolve", "pursuit", "train", "--checkpoint", args.checkpoint, "--resume"]
    if iterations is not None:
        words += ["--iterations", str(iterations - (done - start))]
    if budget is not None:
        words += ["--minutes", f"{max(budget - seconds, 1.0) / 60:.2f}"]
    if args.eval_every != EVAL_EVERY:
        words += ["--eval-every", str(args.eval_every)]
    return words


def _save_interrupted(args, cfg, interrupted, iterations, budget, start: int) -> int:
    """Saves the last completed iteration of an interrupted `train` (with its config,
    as the normal end does) and says how to resume; exit code 130."""
    from jaxsolve.alphazero import train  # noqa: PLC0415 - Flax and optax load on use
    done = start if interrupted.state is None else int(interrupted.state.step)
    if done == start:
        return stop("pursuit", "before an iteration completed")
    save = lambda: train.save(args.checkpoint, interrupted.state, config=cfg)
    if iterations is not None and done - start >= iterations:  # during the last evaluation
        return stop("pursuit", f"after the last iteration ({done})", path=args.checkpoint,
                    save=save)
    return stop("pursuit", f"at iteration {done}", path=args.checkpoint, save=save,
                resume=_resume_words(args, iterations, budget, done, start,
                                     interrupted.train_seconds))


def _recorded(path):
    """The TrainConfig recorded in the checkpoint at `path` (None if it has none)."""
    from jaxsolve.alphazero import train  # noqa: PLC0415 - Flax and optax load on use
    try:
        return train.recorded_config(path)
    except (OSError, ValueError) as e:
        raise CLIError(f"--checkpoint {e}") from None


def config_from_args(args, recorded=None):
    """The TrainConfig of the options. With `recorded` (the TrainConfig a checkpoint was
    saved with), every setting not given on the command line is the checkpoint's,
    including those the command line has no option for (learning rate, buffer, ...)."""
    from jaxsolve.alphazero import selfplay, train  # noqa: PLC0415 - Flax and optax load on use
    if recorded is None:
        base, search, rec = train.TrainConfig(), selfplay.SearchConfig(), {}
    else:
        base, search = recorded, recorded.search
        rec = {"simulations": search.num_simulations, "search": search.kind,
               "hidden": recorded.hidden, "games": recorded.games_per_iter,
               "explore": recorded.explore_fraction, "seed": recorded.seed}
    setting = lambda name: _setting(args, name, rec.get(name))
    games, explore = setting("games"), setting("explore")
    if explore > 0 and round(explore * games) == 0:  # TrainConfig's rule, in option names
        enough = next(g for g in range(games, 2 * math.ceil(1 / explore) + 2)
                      if round(explore * g) >= 1)
        raise CLIError(f"--explore {explore:g} of --games {games} rounds to no game from an "
                       f"exploring start; give --games {enough} or more, or --explore 0")
    return dataclasses.replace(
        base, env=env_from_args(args, None if recorded is None else recorded.env),
        hidden=tuple(setting("hidden")), games_per_iter=setting("games"),
        search=dataclasses.replace(search, num_simulations=setting("simulations"),
                                   kind=setting("search")),
        explore_fraction=setting("explore"), seed=setting("seed"))


def _taken_from_checkpoint(args, cfg) -> str:
    """The settings of `cfg` that came from the checkpoint (options this command has but
    the user left out), as "name=value, ..."."""
    shown = {"hidden": cfg.hidden, "games": cfg.games_per_iter,
             "simulations": cfg.search.num_simulations, "search": cfg.search.kind,
             "explore": cfg.explore_fraction, "seed": cfg.seed}
    taken = [f"{k}={v}" for k, v in shown.items()
             if hasattr(args, k) and getattr(args, k) is None]
    if all(getattr(args, k, None) is None for k in _GAME_OPTIONS):
        taken.insert(0, _describe_game(_recorded_game_options(cfg.env)))
    return ", ".join(taken)


def _with_counts(rates) -> dict:
    """`evaluate.evaluate`'s rates with the counts behind them (`Rates.counts`) as
    JSON fields of their own."""
    return {**rates, **getattr(rates, "counts", {})}


def _print_summary(result: dict) -> None:
    """Each win rate with the games behind it, beside the best any policy reaches
    against random play, and the mistake rate with its counts, on stderr (stdout keeps
    the JSON)."""
    games = result.get("games_per_side")
    for key, rate in result.items():
        if not key.startswith("win_vs_"):
            continue
        wins = result.get("wins_" + key[len("win_"):])
        line = f"pursuit: {key}: {rate}"  # k / 256 prints exactly, e.g. 0.984375
        if wins is not None and games:
            line += f" ({wins}/{games})"
        best = result.get("best_" + key[len("win_"):])
        if best is not None:
            line += f"; best possible {round(best, 6)}"
        print(line, file=sys.stderr)
    if "mistake_rate" in result:
        counts = (f" ({result['mistakes']} mistakes in {result['won_positions']} won positions)"
                  if "mistakes" in result else "")
        print(f"pursuit: mistake_rate: {round(result['mistake_rate'], 6)}{counts}; only "
              "moves in positions the exact solver calls won for the agent count",
              file=sys.stderr)


def _note_assumed_settings(path, cfg) -> None:
    """Says on stderr which settings a checkpoint without a recorded configuration is
    read with (the options given, else the defaults): nothing in it says its game."""
    game = _describe_game(_recorded_game_options(cfg.env))
    print(f"pursuit: note: {path} records no configuration (saved without config=); "
          f"assuming {game}, hidden={cfg.hidden}, simulations={cfg.search.num_simulations}, "
          f"search={cfg.search.kind} (give --variant, --grid, --sensor, --turns, --threshold, "
          "--start or --hidden if it was trained otherwise)", file=sys.stderr)


def _game_options(parser, left_out: str | None = None):
    """The game's options; `left_out` says what an option left out is where that is
    the checkpoint's setting rather than the default its help names."""
    p = parser.add_argument_group(
        "the game" + (f" (an option left out is {left_out}, not the default named)"
                      if left_out else ""))
    p.add_argument("--variant", type=_variant, choices=["base", "goal"], default=None,
                   help="base: the game's base rules (20 turns from the centre, no goal "
                        "row: a forced evader win); goal (default): cross the grid")
    p.add_argument("--grid", type=_grid, default=None, help="board side, odd (default 5)")
    p.add_argument("--sensor", choices=["ray", "wedge"], default=None,
                   help="ray (default): the cells along the sensor's direction; wedge: the "
                        "3-cell cone next to the sensor")
    p.add_argument("--turns", type=_at_least_one, default=None, metavar="T",
                   help="defender moves in a game (default: grid + 1 with --variant goal, "
                        "20 with base)")
    p.add_argument("--threshold", type=_threshold, default=None, metavar="X",
                   help="the defender wins if detections / turns exceed X, in [0, 1); 0: "
                        "a single detection wins (default: with --variant goal 1 / turns, "
                        "one detection allowed, so 1/T with --turns T, and --turns 1 needs "
                        "--threshold; 0.5 with base)")
    p.add_argument("--start", type=_non_negative, nargs=2, default=None, metavar=("X", "Y"),
                   help="the evader's starting cell, x the column and y the row, (0, 0) the "
                        "top-left corner (default: the middle of the top row, grid//2 0, "
                        "with --variant goal; the centre with base)")


def _agent_options(p, *, from_checkpoint: str):
    p.add_argument("--simulations", type=_at_least_one, default=None,
                   help=f"MCTS simulations per move (default 16{from_checkpoint})")
    p.add_argument("--search", choices=["gumbel", "puct"], default=None,
                   help=f"Gumbel AlphaZero or PUCT with Dirichlet noise (default gumbel{from_checkpoint})")
    p.add_argument("--hidden", type=_at_least_one, nargs="+", default=None,
                   help=f"hidden layer widths of the MLP (default 128 128 128{from_checkpoint})")
    p.add_argument("--seed", type=_seed, default=None,
                   help=f"PRNG seed (default 0{from_checkpoint}" + (
                       ", and no other: the run goes on from the checkpoint's random state)"
                       if "--resume" in from_checkpoint else ")"))
    p.add_argument("--checkpoint", default="pursuit_az.npz",
                   help="file train writes and eval reads (default pursuit_az.npz in the "
                        "working directory)")


_FROM_CHECKPOINT = (" (game, network, search, ...); a game or network option given must "
                    "match the checkpoint's")


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Adds `pursuit` with the `solve`, `train` and `eval` commands, each with its own
    options and `--help`."""
    p = subparsers.add_parser(
        "pursuit", help="AlphaZero on the pursuit-evasion game",
        description="AlphaZero on the pursuit-evasion game: `solve` gives the "
                    "exact verdict, `train` trains an agent by self-play, `eval` grades a "
                    "trained one. `jaxsolve pursuit COMMAND --help` lists each one's options.")
    commands = p.add_subparsers(dest="pursuit_command", metavar="{solve,train,eval}",
                                required=True)
    solve = commands.add_parser(
        "solve", help="the exact value and the best win rates against random play",
        description="Backward induction over every state: prints the game's value (+1: "
                    "the evader wins with best play), the winner, each side's best win rate "
                    "against a random opponent, and the evader's win rate when both play at "
                    "random, as JSON.")
    _game_options(solve)
    train_p = commands.add_parser(
        "train", help="train an agent by self-play and save a checkpoint",
        description="Self-play training with our jitted MCTS; saves --checkpoint (also on "
                    "Ctrl-C: the last completed iteration, then prints how to resume) and "
                    "prints the last iteration's metrics as JSON, with the last evaluation "
                    "(see `eval --help` for how to read the mistake rate). "
                    "selfplay_evader_wins and explore_evader_wins are the evader's win rates "
                    "in that iteration's self-play games from the initial position and from "
                    "exploring starts; train_seconds counts this run only. With --resume, "
                    "settings left out are the checkpoint's" + _FROM_CHECKPOINT + "; "
                    "without it an existing --checkpoint is replaced.")
    _game_options(train_p, "the checkpoint's with --resume")
    _agent_options(train_p, from_checkpoint=", or the checkpoint's with --resume")
    train_p.add_argument("--iterations", type=_at_least_one, default=None,
                         help="iterations (default 60, or unbounded with --minutes; whichever "
                              "limit comes first stops training)")
    train_p.add_argument("--minutes", type=_minutes, default=None,
                         help="training time budget (compilation included, evaluation excluded)")
    train_p.add_argument("--explore", type=_fraction, default=None,
                         help="share of self-play games started from random reachable "
                              "positions (default 0.5: exploring starts; evaluation always "
                              "starts from the initial one)")
    train_p.add_argument("--games", type=_at_least_one, default=None,
                         help="self-play games per iteration (default 64)")
    train_p.add_argument("--resume", action="store_true",
                         help="train on from --checkpoint; --iterations then counts the "
                              "iterations to add")
    train_p.add_argument("--eval-every", type=_non_negative, default=EVAL_EVERY,
                         help="evaluate every N iterations and after the last (default "
                              f"{EVAL_EVERY}); 0: never, and the JSON printed at the end then "
                              "has the training metrics and the best achievable rates but "
                              "no win rates or mistake rate of the agent (run `jaxsolve "
                              "pursuit eval` for them)")
    evaluate_p = commands.add_parser(
        "eval", help="grade a trained agent: win rates, mistake rate",
        description="Plays the checkpoint's agent as each side against random play (and "
                    "pure MCTS with --mcts), 256 games each, and counts its mistakes against "
                    "the exact solver; prints JSON, with the counts behind each rate. The "
                    "mistake rate counts only the agent's moves in positions the exact "
                    "solver calls won for the agent (a mistake turns one into a lost "
                    "position): an agent that never reaches such a position scores 0, so "
                    "read it beside the win rates. Settings left out are the checkpoint's"
                    + _FROM_CHECKPOINT + ", while --simulations and --search may differ "
                    "from training.")
    _game_options(evaluate_p, "the checkpoint's")
    _agent_options(evaluate_p, from_checkpoint=", or the checkpoint's")
    evaluate_p.add_argument("--mcts", action="store_true", help="also against pure MCTS")
    for cmd in (solve, train_p, evaluate_p):
        cmd.set_defaults(func=main)
    return p


def main(args) -> int:
    """Runs `pursuit solve|train|eval`; running out of memory (JAX's RESOURCE_EXHAUSTED)
    is a one-line error naming the options to reduce."""
    try:
        return _run(args)
    except MemoryError as e:
        raise _out_of_memory(args.pursuit_command, e) from None
    except jax.errors.JaxRuntimeError as e:
        if "RESOURCE_EXHAUSTED" not in str(e):
            raise
        raise _out_of_memory(args.pursuit_command, e) from None


def _run(args) -> int:
    from jaxsolve.alphazero import evaluate, train  # noqa: PLC0415 - Flax and optax load on use

    if args.pursuit_command == "solve":
        env = env_from_args(args)
        sol = _solve_exactly(env)
        out = {"params": dataclasses.asdict(env),  # as JSON, not a repr string
               "detections_allowed": env.max_detections,  # what the threshold allows
               "root_value": float(sol.root_value),  # the evader's: +1 a forced win
               "root_value_meaning": "+1: the evader wins with best play by both sides; "
                                     "-1: the defender does",
               "winner": "evader" if float(sol.root_value) > 0 else "defender",
               **evaluate.best_rates_vs_random(env),  # each side's best win rate
               "random_vs_random_evader_wins": exact.random_vs_random(env)}
        print(json.dumps(out, indent=2))
        return 0
    folder = os.path.dirname(os.path.abspath(args.checkpoint))
    training = args.pursuit_command == "train"
    if training:  # checked before training, not when saving minutes later
        _can_save(args.checkpoint, folder)
    exists = os.path.exists(args.checkpoint)
    if not training and not exists:
        raise CLIError(f"--checkpoint {args.checkpoint}: no checkpoint there (train one with "
                         f"`jaxsolve pursuit train --checkpoint {args.checkpoint}`)")
    if training and exists and not args.resume:
        _refuse_overwriting_other_files(args.checkpoint)
    if training and args.resume and not exists:  # as `jaxsolve solve --resume`: a typo in
        # the path must not start a new run silently
        raise CLIError(f"cannot --resume: --checkpoint {args.checkpoint}: no checkpoint "
                       "there (drop --resume to start a new run)")
    loading = exists and (args.resume if training else True)
    recorded = _recorded(args.checkpoint) if loading else None
    cfg = config_from_args(args, recorded)
    if recorded is not None:
        _refuse_contradicting_options(args.checkpoint, recorded, cfg)
    if (training and recorded is not None and args.seed is not None
            and args.seed != recorded.seed):
        # The resumed run draws from the checkpoint's own key: a new seed would be
        # recorded but change nothing of the training.
        raise CLIError(f"--seed {args.seed} with --resume: the run goes on from the random "
                       f"state saved in {args.checkpoint} (seed {recorded.seed}), so a seed "
                       "cannot change it; leave --seed out, or start a new run without "
                       "--resume")
    env = cfg.env
    graphdef, fresh = train.init(cfg)
    if loading and recorded is None:  # before loading: a refusal then says what was assumed
        _note_assumed_settings(args.checkpoint, cfg)
    state = _load_checkpoint(args.checkpoint, fresh, cfg) if loading else None
    if recorded is not None and _taken_from_checkpoint(args, cfg):
        print(f"pursuit: from {args.checkpoint}: {_taken_from_checkpoint(args, cfg)}",
              file=sys.stderr)
    sol = _solve_exactly(env)
    if training:
        return _train(args, cfg, graphdef, state, sol, replacing=exists and not args.resume)
    opponents = ("random", "mcts") if args.mcts else ("random",)
    res = evaluate.evaluate(env, cfg.search, graphdef, state.params, sol,
                            jax.random.PRNGKey(cfg.seed + 1), opponents=opponents,
                            progress=True)
    result = {**_with_counts(res), **evaluate.best_rates_vs_random(env)}
    _print_summary(result)
    print(json.dumps(result, indent=2))
    return 0


def _train(args, cfg, graphdef, state, sol, *, replacing: bool) -> int:
    """`pursuit train` once the checkpoint, configuration and exact solution are in
    hand: trains, saves (on Ctrl-C too), prints the summary and the JSON."""
    from jaxsolve.alphazero import evaluate, train  # noqa: PLC0415 - Flax and optax load on use

    if replacing:
        _note_replaced_run(args.checkpoint)
    env, matches = cfg.env, {}
    eval_fn = lambda params: _with_counts(evaluate.evaluate(
        env, cfg.search, graphdef, params, sol, jax.random.PRNGKey(cfg.seed + 1),
        matches=matches))
    budget = None if args.minutes is None else 60.0 * args.minutes
    iterations = args.iterations if args.iterations is not None else (60 if budget is None else None)
    start = 0 if state is None else int(state.step)
    try:
        _, state, history = train.train(cfg, iterations, state=state, max_seconds=budget,
                                        eval_every=args.eval_every, eval_fn=eval_fn)
    except train.Interrupted as interrupted:
        return _save_interrupted(args, cfg, interrupted, iterations, budget, start)
    train.save(args.checkpoint, state, config=cfg)
    print(f"pursuit: wrote {args.checkpoint} (iteration {int(state.step)})", file=sys.stderr)
    result = {**history[-1], **evaluate.best_rates_vs_random(env)}
    _print_summary(result)
    print(json.dumps(result, indent=2))
    return 0


__all__ = ["add_subparser", "main"]
