"""AlphaZero training: one jitted function per self-play-and-train iteration.

Each iteration plays `games_per_iter` self-play games in parallel (`selfplay.play`),
appends every ply to the device replay buffer, and takes `train_steps` AdamW steps
(optax) on uniform minibatches of the loss

    L = CE(search policy, softmax(logits)) + (z - v)^2,

where z is the game's outcome from the mover's side (Silver et al., 2017). The whole
training state (network params, optimizer state, buffer, PRNG key, counter) is one
pytree, so a checkpoint is its leaves in a NumPy `.npz`, and resuming from a
checkpoint reproduces an uninterrupted run bit for bit.

`explore_fraction` starts that fraction of the self-play games from random reachable
positions ("exploring starts", `selfplay.play`), which large boards need to see any
win at all; `train(..., max_seconds=...)` stops at a wall-clock training budget.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, NamedTuple, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from games import pursuit_evasion as pe
from jaxsolve.alphazero import checks, network, selfplay


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Static training settings (hashable)."""

    env: pe.Params = pe.Params()
    search: selfplay.SearchConfig = selfplay.SearchConfig()
    hidden: Tuple[int, ...] = (128, 128, 128)
    games_per_iter: int = 64
    train_steps: int = 32
    batch_size: int = 256
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    buffer_size: int = 20_000
    temperature_moves: int = 4
    explore_fraction: float = 0.0  # self-play games started from pe.exploring_start
    seed: int = 0

    def __post_init__(self):
        checks.config_fields("TrainConfig", [
            ("hidden", len(self.hidden) >= 1 and all(int(h) >= 1 for h in self.hidden),
             "must be one or more layer widths, each at least 1"),
            ("games_per_iter", self.games_per_iter >= 1, "must be at least 1"),
            ("train_steps", self.train_steps >= 1, "must be at least 1"),
            ("batch_size", self.batch_size >= 1, "must be at least 1"),
            ("learning_rate", self.learning_rate > 0, "must be positive"),
            ("weight_decay", self.weight_decay >= 0, "must be at least 0"),
            ("buffer_size", self.buffer_size >= 1, "must be at least 1"),
            ("temperature_moves", self.temperature_moves >= 0, "must be at least 0"),
            ("explore_fraction", 0.0 <= self.explore_fraction <= 1.0, "must lie in [0, 1]"),
            ("seed", 0 <= self.seed < 2 ** 31, "must lie in [0, 2^31)")], self)


class TrainState(NamedTuple):
    params: Any  # network parameters (nnx.State pytree)
    opt_state: Any  # optax state
    buffer: selfplay.Buffer
    key: jax.Array  # [2] uint32 raw PRNG key
    step: jax.Array  # [] int32 iterations done


def optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    return optax.adamw(cfg.learning_rate, weight_decay=cfg.weight_decay)


def init(cfg: TrainConfig):
    """Returns (graphdef, TrainState) for `cfg`."""
    graphdef, params = network.init_params(cfg.env.obs_size, pe.NUM_ACTIONS, cfg.hidden, cfg.seed)
    state = TrainState(params, optimizer(cfg).init(params),
                       selfplay.buffer_init(cfg.buffer_size, cfg.env.obs_size),
                       jax.random.PRNGKey(cfg.seed), jnp.int32(0))
    return graphdef, state


def loss_fn(graphdef, params, obs, policy, value):
    """obs [b, F], policy [b, A], value [b] -> (loss, (policy CE, value MSE))."""
    logits, v = network.apply(graphdef, params, obs)
    ce = -jnp.mean(jnp.sum(policy * jax.nn.log_softmax(logits), -1))
    mse = jnp.mean((v - value) ** 2)
    return ce + mse, (ce, mse)


def make_iteration(cfg: TrainConfig, graphdef):
    """The un-jitted iteration `TrainState -> (TrainState, metrics)`; jit it once."""
    opt = optimizer(cfg)
    grad = jax.value_and_grad(functools.partial(loss_fn, graphdef), has_aux=True)

    def iteration(state: TrainState):
        key, k_play, k_train = jax.random.split(state.key, 3)
        traj = selfplay.play(graphdef, cfg.env, cfg.search, state.params, k_play,
                             cfg.games_per_iter, cfg.temperature_moves, cfg.explore_fraction)
        buf = selfplay.buffer_add(state.buffer, traj)

        def sgd(carry, k):
            params, opt_state = carry
            (loss, (ce, mse)), g = grad(params, *selfplay.buffer_sample(buf, k, cfg.batch_size))
            updates, opt_state = opt.update(g, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), jnp.stack([loss, ce, mse])

        (params, opt_state), losses = jax.lax.scan(
            sgd, (state.params, state.opt_state), jax.random.split(k_train, cfg.train_steps))
        losses = jnp.mean(losses, 0)
        wins = traj.outcome > 0
        if traj.from_start is None:
            start_wins = jnp.mean(wins)
        else:  # games from the initial position only
            start_wins = jnp.sum(wins & traj.from_start) / jnp.maximum(jnp.sum(traj.from_start), 1)
        metrics = dict(loss=losses[0], policy_loss=losses[1], value_loss=losses[2],
                       selfplay_evader_wins=start_wins)
        if traj.from_start is not None:
            metrics["explore_evader_wins"] = (jnp.sum(wins & ~traj.from_start)
                                              / jnp.maximum(jnp.sum(~traj.from_start), 1))
        return TrainState(params, opt_state, buf, key, state.step + 1), metrics

    return iteration


# ------------------------------------------------------------------------ checkpoints
def save(path: str, state: TrainState) -> None:
    """Writes the state's leaves to `path` (an .npz archive, at exactly that path),
    through a temporary file, so that an interrupted save leaves the old one intact."""
    leaves = jax.tree.leaves(state)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        np.savez(f, **{f"leaf_{i:04d}": np.asarray(x) for i, x in enumerate(leaves)})
    os.replace(tmp, path)


def load(path: str, like: TrainState) -> TrainState:
    """Reads a checkpoint into the structure of `like` (e.g. `init(cfg)[1]`). Raises
    FileNotFoundError if there is none, ValueError naming the problem if the file is
    not a checkpoint or was written for another configuration (network sizes, batch)."""
    leaves, treedef = jax.tree.flatten(like)
    with open(path, "rb") as f:  # FileNotFoundError names the path
        if f.read(4) != b"PK\x03\x04":  # .npz archives are zip files
            raise ValueError(f"{path}: not a checkpoint (not an .npz archive)")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable checkpoint ({e})") from None
    with data:
        names = sorted(data.files)
        want = [f"leaf_{i:04d}" for i in range(len(leaves))]
        if names != want:
            raise ValueError(f"{path}: not a checkpoint of this training state: it holds {len(names)} "
                             f"arrays, the state has {len(leaves)} leaves")
        new = [data[name] for name in want]
    for i, (x, y) in enumerate(zip(leaves, new)):
        if x.shape != y.shape:
            raise ValueError(f"{path}: written for another configuration: leaf {i} has shape {y.shape}, "
                             f"this configuration's {x.shape} (network sizes, games per "
                             f"iteration and buffer size must match)")
    return jax.tree.unflatten(treedef, [jnp.asarray(y, dtype=x.dtype) for x, y in zip(leaves, new)])


def train(cfg: TrainConfig, iterations: int | None, *, state: TrainState | None = None,
          eval_every: int = 0, eval_fn=None, progress: bool = True, callback=None,
          max_seconds: float | None = None, stop_fn=None):
    """Runs up to `iterations` iterations (None: until `max_seconds` or `stop_fn`) with
    a tqdm bar showing the loss and win rates.

    `eval_fn(params) -> dict` (e.g. win rates vs random) runs every `eval_every`
    iterations and after the last one; `callback(i, state, metrics)` sees every
    iteration. `max_seconds` stops after the iteration during which the training
    time - wall clock from the call, compilation included, `eval_fn` excluded -
    reaches it; `stop_fn(metrics) -> bool` stops after an evaluation it accepts.
    Every metric dict carries `train_seconds`. Returns (graphdef, state, history).
    """
    import itertools
    import time

    from tqdm.auto import tqdm

    start, eval_time = time.perf_counter(), 0.0
    graphdef, fresh = init(cfg)
    state = fresh if state is None else state
    step = jax.jit(make_iteration(cfg, graphdef), donate_argnums=0)
    history, shown = [], {}
    if iterations is None and max_seconds is None and stop_fn is None:
        raise ValueError("train: give iterations, max_seconds or stop_fn")
    counter = itertools.count() if iterations is None else range(iterations)
    bar = tqdm(total=iterations, disable=not progress, desc="alphazero")
    for i in counter:
        state, metrics = step(state)
        metrics = {k: float(v) for k, v in metrics.items()}  # (waits for the step)
        seconds = time.perf_counter() - start - eval_time
        last = i + 1 == iterations or (max_seconds is not None and seconds >= max_seconds)
        evaluated = eval_fn is not None and eval_every and ((i + 1) % eval_every == 0 or last)
        if evaluated:
            t_eval = time.perf_counter()
            metrics.update(eval_fn(state.params))
            eval_time += time.perf_counter() - t_eval
            shown = {k: f"{v:.2f}" for k, v in metrics.items() if k.startswith("win")}
        metrics["iteration"] = int(state.step)
        metrics["train_seconds"] = seconds
        history.append(metrics)
        bar.update(1)
        bar.set_postfix(loss=f"{metrics['loss']:.3f}", **shown)
        if callback is not None:
            callback(i, state, metrics)
        if last or (evaluated and stop_fn is not None and stop_fn(metrics)):
            break
    bar.close()
    return graphdef, state, history


__all__ = ["TrainConfig", "TrainState", "init", "load", "loss_fn", "make_iteration",
           "optimizer", "save", "train"]
