"""`jaxsolve pursuit solve|train|eval`: the pursuit-evasion AlphaZero from the shell.

    jaxsolve pursuit solve [--variant goal] [--grid 7]
    jaxsolve pursuit train --variant goal --iterations 100 --checkpoint az.npz [--resume]
    jaxsolve pursuit train --variant goal --grid 11 --minutes 1 [--explore 0.5]
    jaxsolve pursuit eval  --variant goal --checkpoint az.npz [--mcts]

Hook into the main parser with `add_subparser(subparsers)`; the subcommand calls `main`.
Bad input (an even or too small grid, a negative budget, a missing, damaged or
mismatched checkpoint - one trained for another game or network) is reported as one
line, `jaxsolve: error: ...`, with exit code 2: the numbers are checked as they are
parsed (the main CLI's `number_arg`), the rest raises its `CLIError`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from games import pursuit_evasion as pe
from jaxsolve.cli import CLIError, number_arg


_at_least_one = number_arg(int, "must be at least 1", lambda v: v >= 1)
_non_negative = number_arg(int, "must be at least 0", lambda v: v >= 0)
_grid = number_arg(int, "must be odd and at least 3", lambda v: v >= 3 and v % 2 == 1)
_minutes = number_arg(float, "must be a positive number of minutes",
                      lambda v: math.isfinite(v) and v > 0)
_fraction = number_arg(float, "must lie in [0, 1]", lambda v: 0.0 <= v <= 1.0)
_seed = number_arg(int, "must lie in [0, 2^31)", lambda v: 0 <= v < 2 ** 31)


def env_from_args(args) -> pe.Params:
    try:
        if args.variant == "goal":
            return pe.goal_variant(args.grid, sensor=args.sensor)
        return pe.Params(grid_size=args.grid, sensor=args.sensor)
    except ValueError as e:
        raise CLIError(f"pursuit: {e}") from None


def _load_checkpoint(path, fresh, cfg):
    """The checkpoint at `path`, refused with a one-line error if it is unreadable or of
    another game or network than `cfg` (the checkpoint records its own)."""
    from jaxsolve.alphazero import train  # noqa: PLC0415
    try:
        return train.load(path, fresh, config=cfg)
    except (OSError, ValueError) as e:
        raise CLIError(f"--checkpoint {e}") from None


def config_from_args(args):
    from jaxsolve.alphazero import selfplay, train
    return train.TrainConfig(
        env=env_from_args(args), hidden=tuple(args.hidden), games_per_iter=args.games,
        search=selfplay.SearchConfig(num_simulations=args.simulations, kind=args.search),
        explore_fraction=args.explore, seed=args.seed)


def add_subparser(subparsers) -> argparse.ArgumentParser:
    """Adds `pursuit` with the `solve`, `train` and `eval` commands."""
    p = subparsers.add_parser("pursuit", help="AlphaZero on the pursuit-evasion game")
    p.add_argument("pursuit_command", choices=["solve", "train", "eval"], metavar="{solve,train,eval}")
    p.add_argument("--variant", choices=["seed", "goal"], default="goal",
                   help="seed: the seed's rules (a forced evader win); goal (default): cross the grid")
    p.add_argument("--grid", type=_grid, default=5, help="board side, odd (default 5)")
    p.add_argument("--sensor", choices=["ray", "wedge"], default="ray",
                   help="ray (default): the cells along the sensor's direction; wedge: the "
                        "seed prose's 3-cell cone")
    p.add_argument("--iterations", type=_at_least_one, default=None,
                   help="iterations (default 60, or unbounded with --minutes; whichever "
                        "limit comes first stops training)")
    p.add_argument("--minutes", type=_minutes, default=None,
                   help="training time budget (compilation included, evaluation excluded)")
    p.add_argument("--explore", type=_fraction, default=0.5,
                   help="share of self-play games started from random reachable positions "
                        "(default 0.5: exploring starts; evaluation always starts from the initial one)")
    p.add_argument("--games", type=_at_least_one, default=64, help="self-play games per iteration (default 64)")
    p.add_argument("--simulations", type=_at_least_one, default=16,
                   help="MCTS simulations per move (default 16)")
    p.add_argument("--search", choices=["gumbel", "puct"], default="gumbel",
                   help="Gumbel AlphaZero (default) or PUCT with Dirichlet noise")
    p.add_argument("--hidden", type=_at_least_one, nargs="+", default=[128, 128, 128],
                   help="hidden layer widths of the MLP (default 128 128 128)")
    p.add_argument("--seed", type=_seed, default=0, help="PRNG seed (default 0)")
    p.add_argument("--checkpoint", default="pursuit_az.npz",
                   help="file train writes and eval reads (default pursuit_az.npz in the "
                        "working directory)")
    p.add_argument("--resume", action="store_true",
                   help="train on from --checkpoint; --iterations then counts the "
                        "iterations to add")
    p.add_argument("--mcts", action="store_true", help="eval also against pure MCTS")
    p.add_argument("--eval-every", type=_non_negative, default=10,
                   help="evaluate every N iterations during training (0: never)")
    p.set_defaults(func=main)
    return p


def main(args) -> int:
    import jax

    from jaxsolve.alphazero import evaluate, exact, train

    env = env_from_args(args)
    if args.pursuit_command == "solve":
        sol = exact.solve(env)
        out = {"params": repr(env), "root_value": float(sol.root_value),
               "winner": "evader" if float(sol.root_value) > 0 else "defender",
               **evaluate.best_rates_vs_random(env),
               "random_vs_random_evader_wins": exact.random_vs_random(env)}
        print(json.dumps(out, indent=2))
        return 0
    folder = os.path.dirname(os.path.abspath(args.checkpoint))
    if args.pursuit_command == "train" and not os.path.isdir(folder):
        # Checked before training, not when saving minutes later.
        raise CLIError(f"--checkpoint {args.checkpoint}: the folder {folder} does not exist")
    if args.pursuit_command == "eval" and not os.path.exists(args.checkpoint):
        raise CLIError(f"--checkpoint {args.checkpoint}: no checkpoint there (train one with "
                         f"`jaxsolve pursuit train --checkpoint {args.checkpoint}`)")
    cfg = config_from_args(args)
    sol = exact.solve(env)
    graphdef, fresh = train.init(cfg)
    matches = {}
    eval_fn = lambda params: evaluate.evaluate(env, cfg.search, graphdef, params, sol,
                                               jax.random.PRNGKey(args.seed + 1), matches=matches)
    if args.pursuit_command == "train":
        state = None
        if args.resume and os.path.exists(args.checkpoint):
            state = _load_checkpoint(args.checkpoint, fresh, cfg)
        elif args.resume:
            print(f"pursuit: no checkpoint at {args.checkpoint} yet; training from scratch",
                  file=sys.stderr)
        budget = None if args.minutes is None else 60.0 * args.minutes
        iterations = args.iterations if args.iterations is not None else (60 if budget is None else None)
        _, state, history = train.train(cfg, iterations, state=state, max_seconds=budget,
                                        eval_every=args.eval_every, eval_fn=eval_fn)
        train.save(args.checkpoint, state, config=cfg)
        print(json.dumps({**history[-1], **evaluate.best_rates_vs_random(env)}, indent=2))
        return 0
    state = _load_checkpoint(args.checkpoint, fresh, cfg)
    opponents = ("random", "mcts") if args.mcts else ("random",)
    res = evaluate.evaluate(env, cfg.search, graphdef, state.params, sol,
                            jax.random.PRNGKey(args.seed + 1), opponents=opponents)
    print(json.dumps({**res, **evaluate.best_rates_vs_random(env)}, indent=2))
    return 0


__all__ = ["add_subparser", "main"]
