"""AlphaZero for the pursuit-evasion game, in jitted JAX, graded by exact play.

Design, one concept per module:

* `jaxsolve.games.pursuit_evasion` - the rules as a pure pgx-style environment:
  `init(params, key)`, `step(params, state, action)`, a `State` pytree with
  `current_player`, `observation` (35 features on 5x5), `rewards`, `terminated`,
  `legal_action_mask`. `Params` is a frozen, hashable dataclass.
* `exact` - backward induction over the whole (turn, detections, cell, sensor, player)
  state space in NumPy array code: the value and optimal moves of every state,
  `root_value` (+1 = evader wins), and the best win rate reachable against random play.
  Verdicts: the default 5x5 game (`pe.Params()`) is a forced evader win - the
  centre-mounted sensor never sees the centre, so "stay" wins - and even random play
  wins it for the evader. `jaxsolve.games.pursuit_evasion.goal_variant(g)` (cross the
  grid from the top edge to the bottom edge in g+1 turns, seen at most once, the sensor
  turning 45 degrees per move) is also an evader win on 5x5, 7x7 and 11x11, but only
  with precise play: an evader moving at random wins 0.25% of games on 5x5 against the
  optimal defender.
* `network` - a Flax NNX policy/value MLP (3x128 by default) used functionally:
  `(graphdef, params) = init_params(...)`, `apply(graphdef, params, obs)`.
* the search is `jaxsolve.mcts` (game-agnostic, mctx's callback interface):
  `alphazero_policy` (PUCT, Dirichlet root noise) and `gumbel_policy` pick the moves
  of self-play and evaluation; `selfplay` supplies the callbacks.
* `checks` - the rules every config's settings must obey (the search's, plus named
  choices and whole configs), so that bad input is named at construction instead of
  failing inside a jitted function.
* `selfplay` - the env/network callbacks, B games in lockstep under `lax.scan` with a
  temperature on the first moves, and a replay buffer of device arrays. Optional
  exploring starts (`TrainConfig.explore_fraction`): part of the self-play games begin
  at random reachable positions (`pe.exploring_start`), which is what lets 11x11
  learn at all - from the initial position an untrained evader never wins, so every
  value target would be -1. Evaluation always starts from the initial position.
* `train` - one jitted function per iteration (self-play, buffer, `train_steps` optax
  AdamW steps on policy cross-entropy + value MSE); `.npz` checkpoints of the whole
  training state resume bit for bit, and record the config they were trained with,
  so that a run of another game or network refuses them; a tqdm bar shows the loss
  and win rates.
* `evaluate` - win rates as each side vs random (beside the exact best) and vs pure
  MCTS (uniform priors, rollout values), and the mistake rate against `exact`.

The command line's `jaxsolve pursuit solve|train|eval` is `jaxsolve.cli.pursuit`.

References: Silver et al., "Mastering the game of Go without human knowledge" (2017)
and "A general reinforcement learning algorithm..." (2018); Danihelka et al., "Policy
improvement by planning with Gumbel" (ICLR 2022); mctx (DeepMind) for the interface.
"""

import importlib

# Loaded on first use (PEP 562): `jaxsolve --help` and every CFR command build the
# `pursuit` parser (`jaxsolve.cli.pursuit`), which needs none of these; importing
# them eagerly (Flax, optax) would delay every command before it starts.
_SUBMODULES = ("checks", "evaluate", "exact", "network", "selfplay", "train")
_NAMES = {"ExactSolution": "exact", "best_vs_random": "exact", "solve": "exact",
          "TrainConfig": "train", "TrainState": "train"}

__all__ = ["ExactSolution", "TrainConfig", "TrainState", "best_vs_random", "checks", "evaluate",
           "exact", "network", "selfplay", "solve", "train"]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
