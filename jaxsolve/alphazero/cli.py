"""`jaxsolve pursuit solve|train|eval`: the pursuit-evasion AlphaZero from the shell.

    jaxsolve pursuit solve [--variant goal] [--grid 7]
    jaxsolve pursuit train --variant goal --iterations 100 --checkpoint az.npz [--resume]
    jaxsolve pursuit train --variant goal --grid 11 --minutes 1 [--explore 0.5]
    jaxsolve pursuit eval  --variant goal --checkpoint az.npz [--mcts]

Hook into the main parser with `add_subparser(subparsers)`; the subcommand calls `main`.
"""

from __future__ import annotations

import argparse
import json
import os

from games import pursuit_evasion as pe


def env_from_args(args) -> pe.Params:
    if args.variant == "goal":
        return pe.goal_variant(args.grid)
    return pe.Params(grid_size=args.grid, sensor=args.sensor)


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
                   help="seed: the seed's rules (a forced evader win); goal: cross the grid")
    p.add_argument("--grid", type=int, default=5)
    p.add_argument("--sensor", choices=["ray", "wedge"], default="ray")
    p.add_argument("--iterations", type=int, default=None,
                   help="iterations (default 60, or unbounded with --minutes; whichever "
                        "limit comes first stops training)")
    p.add_argument("--minutes", type=float, default=None,
                   help="training time budget (compilation included, evaluation excluded)")
    p.add_argument("--explore", type=float, default=0.5,
                   help="share of self-play games started from random reachable positions "
                        "(exploring starts; evaluation always starts from the initial one)")
    p.add_argument("--games", type=int, default=64, help="self-play games per iteration")
    p.add_argument("--simulations", type=int, default=16)
    p.add_argument("--search", choices=["gumbel", "puct"], default="gumbel")
    p.add_argument("--hidden", type=int, nargs="+", default=[128, 128, 128])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint", default="pursuit_az.npz")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--mcts", action="store_true", help="eval also against pure MCTS")
    p.add_argument("--eval-every", type=int, default=10)
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
    cfg = config_from_args(args)
    sol = exact.solve(env)
    graphdef, fresh = train.init(cfg)
    matches = {}
    eval_fn = lambda params: evaluate.evaluate(env, cfg.search, graphdef, params, sol,
                                               jax.random.PRNGKey(args.seed + 1), matches=matches)
    if args.pursuit_command == "train":
        state = train.load(args.checkpoint, fresh) if args.resume and os.path.exists(args.checkpoint) else None
        budget = None if args.minutes is None else 60.0 * args.minutes
        iterations = args.iterations if args.iterations is not None else (60 if budget is None else None)
        _, state, history = train.train(cfg, iterations, state=state, max_seconds=budget,
                                        eval_every=args.eval_every, eval_fn=eval_fn)
        train.save(args.checkpoint, state)
        print(json.dumps({**history[-1], **evaluate.best_rates_vs_random(env)}, indent=2))
        return 0
    state = train.load(args.checkpoint, fresh)
    opponents = ("random", "mcts") if args.mcts else ("random",)
    res = evaluate.evaluate(env, cfg.search, graphdef, state.params, sol,
                            jax.random.PRNGKey(args.seed + 1), opponents=opponents)
    print(json.dumps({**res, **evaluate.best_rates_vs_random(env)}, indent=2))
    return 0


__all__ = ["add_subparser", "main"]
