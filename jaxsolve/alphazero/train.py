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
import itertools
import json
import re
import time
from typing import Any, Callable, NamedTuple, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxsolve import npz, validate
from jaxsolve.alphazero import checks, network, selfplay
from jaxsolve.errors import ArgumentError, CheckpointError
from jaxsolve.games import pursuit_evasion as pe
from jaxsolve.interrupt import HeldInterrupt
from jaxsolve.progress import bar as progress_bar


# A list of widths is taken as the tuple a hashable config needs.
_LAYER_WIDTHS = validate.Rule(
    validate.as_ints, lambda widths: len(widths) >= 1 and min(widths) >= 1,
    "must be a tuple of one or more layer widths, each an integer >= 1")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Static training settings (hashable; every field is checked on construction).

    One training iteration (`train`) plays `games_per_iter` self-play games in
    parallel, adds every ply to the replay buffer, then takes `train_steps` AdamW steps
    on minibatches drawn uniformly from it.

    Attributes:
      env: the game's rules (`jaxsolve.games.pursuit_evasion.Params`).
      search: the self-play search (`selfplay.SearchConfig`: Gumbel or PUCT,
        simulations).
      hidden: the network's hidden layer widths (default 3 x 128).
      games_per_iter: self-play games per iteration, played as one batch.
      train_steps: gradient steps per iteration.
      batch_size: positions per gradient step.
      learning_rate: AdamW's learning rate (`optax.adamw`).
      weight_decay: AdamW's weight decay.
      buffer_size: positions the replay buffer keeps; the oldest are overwritten.
      temperature_moves: the first plies of each game sample from the search's
        policy; later plies play its action.
      explore_fraction: the fraction of each iteration's games that start from
        `pe.exploring_start` (random reachable positions) instead of the initial one.
      seed: the network's initialisation and every key of the run.

    Raises:
      ArgumentTypeError: a field of the wrong kind.
      ArgumentError: a field out of range, or an `explore_fraction` that rounds to no
        exploring game.
    """

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

    @classmethod
    def recipe(cls, grid_size: int = 5, **overrides: Any) -> "TrainConfig":
        """The configuration `jaxsolve pursuit train` uses by default.

        The AlphaZero page's results (docs/alphazero.md) measure it: the goal variant on
        a `grid_size` board, half of the self-play games from exploring starts, Gumbel
        search with 16 simulations, a 3 x 128 MLP. (The plain defaults are the base game
        `pe.Params()`, a forced evader win, without exploring starts.)

        Args:
          grid_size: the board's side.
          **overrides: fields that replace the recipe's.

        Returns:
          The `TrainConfig`.
        """
        return cls(**{"env": pe.goal_variant(grid_size), "explore_fraction": 0.5,
                      "search": selfplay.SearchConfig(num_simulations=16), **overrides})

    def __post_init__(self):
        checks.config_fields("TrainConfig", [
            ("env", validate.instance_rule(pe.Params, "a jaxsolve.games.pursuit_evasion.Params")),
            ("search", validate.instance_rule(selfplay.SearchConfig, "a selfplay.SearchConfig")),
            ("hidden", _LAYER_WIDTHS),
            ("games_per_iter", validate.integer_rule(1)),
            ("train_steps", validate.integer_rule(1)),
            ("batch_size", validate.integer_rule(1)),
            ("learning_rate", validate.number_rule(above=0)),
            ("weight_decay", validate.number_rule(0)),
            ("buffer_size", validate.integer_rule(1)),
            ("temperature_moves", validate.integer_rule(0)),
            ("explore_fraction", validate.number_rule(0, 1)),
            ("seed", validate.integer_rule(0, validate.INT32_MAX))], self)
        # round(fraction * games) games explore: a fraction that rounds to none would
        # ask for exploring starts and silently get none.
        if self.explore_fraction > 0 and self.num_exploring == 0:
            raise ArgumentError(f"TrainConfig: explore_fraction={self.explore_fraction} of "
                                f"games_per_iter={self.games_per_iter} games rounds to no "
                                "exploring start; raise either, or set explore_fraction=0")

    @property
    def num_exploring(self) -> int:
        """Self-play games per iteration that start from `pe.exploring_start`."""
        return int(round(self.explore_fraction * self.games_per_iter))


class TrainState(NamedTuple):
    """What a training run carries from iteration to iteration; `save` writes it.

    Attributes:
      params: the network's parameters (an `nnx.State` pytree).
      opt_state: the optimizer's state (optax).
      buffer: the replay buffer (`selfplay.Buffer`).
      key: [2] uint32, the raw PRNG key of the next iteration.
      step: [] int32, the iterations done.
    """
    params: Any  # network parameters (nnx.State pytree)
    opt_state: Any  # optax state
    buffer: selfplay.Buffer
    key: jax.Array  # [2] uint32 raw PRNG key
    step: jax.Array  # [] int32 iterations done


def optimizer(cfg: TrainConfig) -> optax.GradientTransformation:
    """The optimizer of `cfg`: AdamW with its learning rate and weight decay.

    Args:
      cfg: the training settings.

    Returns:
      The `optax.adamw` transformation.
    """
    return optax.adamw(cfg.learning_rate, weight_decay=cfg.weight_decay)


def init(cfg: TrainConfig) -> tuple[Any, TrainState]:
    """A fresh network and training state for `cfg`.

    Args:
      cfg: the training settings.

    Returns:
      (graphdef, TrainState): the network's structure and the state at step 0 (its
        parameters initialised from `cfg.seed`, an empty buffer).
    """
    graphdef, params = network.init_params(cfg.env.obs_size, pe.NUM_ACTIONS, cfg.hidden, cfg.seed)
    state = TrainState(params, optimizer(cfg).init(params),
                       selfplay.buffer_init(cfg.buffer_size, cfg.env.obs_size),
                       jax.random.PRNGKey(cfg.seed), jnp.int32(0))
    return graphdef, state


def loss_fn(graphdef, params, obs, policy, value):
    """The training loss of a minibatch: policy cross-entropy plus value squared error.

    Args:
      graphdef: the network's structure (from `init`).
      params: the network's parameters.
      obs: [b, F] observations.
      policy: [b, A] the search's policies, the targets.
      value: [b] the game outcomes, the targets.

    Returns:
      (loss, (policy cross-entropy, value mean squared error)).
    """
    logits, v = network.apply(graphdef, params, obs)
    ce = -jnp.mean(jnp.sum(policy * jax.nn.log_softmax(logits), -1))
    mse = jnp.mean((v - value) ** 2)
    return ce + mse, (ce, mse)


def make_iteration(cfg: TrainConfig, graphdef):
    """One training iteration, un-jitted: self-play, buffer update, `train_steps` steps.

    Args:
      cfg: the training settings.
      graphdef: the network's structure (from `init`).

    Returns:
      The function `TrainState -> (TrainState, metrics)`; jit it once.
    """
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
        metrics = dict(loss=losses[0], policy_loss=losses[1], value_loss=losses[2])
        # Each win rate only where its games were played (explore_fraction=1 plays
        # none from the initial position, whose rate 0/0 must not read as 0).
        if traj.from_start is None:
            metrics["selfplay_evader_wins"] = jnp.mean(wins)
        else:
            if cfg.num_exploring < cfg.games_per_iter:
                metrics["selfplay_evader_wins"] = (jnp.sum(wins & traj.from_start)
                                                   / jnp.sum(traj.from_start))
            metrics["explore_evader_wins"] = (jnp.sum(wins & ~traj.from_start)
                                              / jnp.sum(~traj.from_start))
        return TrainState(params, opt_state, buf, key, state.step + 1), metrics

    return iteration


# ------------------------------------------------------------------------ checkpoints
# The archive member holding the configuration (JSON) beside the leaves `leaf_0000`...
_CONFIG = "config"


def game_and_network(env: pe.Params, hidden) -> dict:
    """The settings a checkpoint is bound to: the game's rules and the network's shape.

    The rest (search, games per iteration, learning rate, ...) may change from run to
    run, e.g. more simulations later in training.

    Args:
      env: the game's parameters.
      hidden: the network's hidden layer widths.

    Returns:
      The game's rules (`Params.rules`) and `hidden`, as one dict.
    """
    return {**env.rules(), "hidden": tuple(hidden)}


def save(path: str, state: TrainState, config: TrainConfig | None = None) -> None:
    """Writes the state's leaves to `path` (an .npz archive, at exactly that path).

    The write is atomic (`jaxsolve.npz.write`), so that an interrupted save leaves the
    old one intact.

    Args:
      path: the file.
      state: the training state.
      config: if given, recorded in the archive (JSON, member "config"), so that
        `load` can refuse to resume it with another game or network.

    Raises:
      OSError: a folder at `path`, or a missing folder in it (the error names `path`,
        not the temporary file), or a failed write.
    """
    arrays = {f"leaf_{i:04d}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(state))}
    if config is not None:
        arrays[_CONFIG] = np.asarray(json.dumps(dataclasses.asdict(config)))
    npz.write(path, arrays, compress=False)


def config_from_record(record: str) -> TrainConfig:
    """The TrainConfig a checkpoint recorded (`save(..., config=...)`, JSON).

    Fields a later version added take their defaults and fields it dropped are ignored,
    so old checkpoints still read.

    Args:
      record: the JSON record.

    Returns:
      The `TrainConfig`.

    Raises:
      CheckpointError: the record is unreadable or invalid.
    """
    try:
        saved = json.loads(record)
        known = lambda cls, d: {k: v for k, v in d.items()
                                if k in {f.name for f in dataclasses.fields(cls)}}
        fields = known(TrainConfig, saved)
        fields["env"] = pe.Params(**known(pe.Params, saved["env"]))
        fields["search"] = selfplay.SearchConfig(**known(selfplay.SearchConfig,
                                                         saved.get("search", {})))
        return TrainConfig(**fields)
    except KeyError as e:  # str(KeyError) is the bare key in quotes: "('env')"
        raise CheckpointError(f"its recorded configuration is unreadable (it has no field "
                              f"{e.args[0]!r})") from None
    except (TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"its recorded configuration is unreadable ({e})") from None


def _check_trained_like(path: str, record: str, config: TrainConfig) -> None:
    """Refuses a checkpoint whose recorded game or network differs from `config`'s."""
    try:
        trained = config_from_record(record)
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}") from None
    differ = checks.mismatch(game_and_network(trained.env, trained.hidden),
                             game_and_network(config.env, config.hidden))
    if differ:
        raise CheckpointError(f"{path}: checkpoint was trained with {differ[0]}; this run "
                              f"uses {differ[1]}")


def _leaf_mismatch(like: TrainState, given) -> str | None:
    """The first leaf of `given` (a list of arrays) whose shape differs from `like`'s,
    named by its place in the state and by the setting that gives it that shape, or
    None."""
    observation = "the observation's width, set by the game (grid size, variant, obs_detections)"
    for i, ((path, x), y) in enumerate(zip(jax.tree_util.tree_leaves_with_path(like), given)):
        want, got = np.shape(x), np.shape(y)
        if want == got:
            continue
        where = jax.tree_util.keystr(path)
        rows_differ = want[:1] != got[:1]
        if where.startswith(".buffer"):  # [buffer_size, ...]; observations [M, width]
            why = "the buffer size" if rows_differ else observation
        elif "['trunk'][0]['kernel']" in where:  # the first layer: [width, hidden[0]]
            why = observation if rows_differ else "the network's widths (hidden)"
        else:
            why = "the network's widths (hidden)"
        return f"{where} (leaf {i}) has shape {got}, this configuration's {want}: {why} must match"
    return None


def _open_archive(path: str):
    """The .npz archive at `path`, opened, or CheckpointError naming the problem."""
    return npz.read(path, CheckpointError, kind="checkpoint")


_LEAF = re.compile(r"leaf_\d{4}")


def _check_pursuit_archive(path: str, data) -> None:
    """Refuses an archive that is not a pursuit AlphaZero checkpoint at all (e.g. a
    `jaxsolve solve` checkpoint), naming what it holds instead."""
    others = sorted(name for name in data.files if name != _CONFIG and not _LEAF.fullmatch(name))
    if others or not any(_LEAF.fullmatch(name) for name in data.files):
        what = ("a saved game tree (GameTree.save)" if "node_player" in others
                else "a `jaxsolve solve` (CFR) checkpoint" if "__meta__" in others
                else "it holds no state arrays" if not others
                else f"its arrays are named {', '.join(others[:4])}"
                     f"{', ...' if len(others) > 4 else ''}")
        raise CheckpointError(f"{path}: not a pursuit AlphaZero checkpoint ({what}; `jaxsolve "
                              "pursuit train` and train.save write leaf_0000, leaf_0001, ...)")


def saved_iteration(path: str) -> int:
    """The iteration count (`TrainState.step`) of the checkpoint at `path`.

    Read without knowing its configuration: `step` is the state's last field, so its
    last leaf.

    Args:
      path: the checkpoint.

    Returns:
      The number of iterations done.

    Raises:
      CheckpointError: naming the problem (no file, not a checkpoint, damaged).
    """
    with _open_archive(path) as data:
        _check_pursuit_archive(path, data)
        last = max(name for name in data.files if name != _CONFIG)
        step = npz.member(data, last, path, CheckpointError)
    if step.shape != () or not np.issubdtype(step.dtype, np.integer):
        raise CheckpointError(f"{path}: its last array is not an iteration count")
    return int(step)


def _record(path: str, data) -> str | None:
    if _CONFIG not in data.files:
        return None
    return str(npz.member(data, _CONFIG, path, CheckpointError)[()])


def recorded_config(path: str) -> TrainConfig | None:
    """The TrainConfig the checkpoint at `path` was saved with.

    Args:
      path: the checkpoint.

    Returns:
      The `TrainConfig`, or None if it was saved without one.

    Raises:
      CheckpointError: naming the problem (no file, not a checkpoint, damaged, an
        unreadable record).
    """
    with _open_archive(path) as data:
        _check_pursuit_archive(path, data)
        record = _record(path, data)
    if record is None:
        return None
    try:
        return config_from_record(record)
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}") from None


def load(path: str, like: TrainState, config: TrainConfig | None = None) -> TrainState:
    """Reads a checkpoint into the structure of `like`.

    Args:
      path: the checkpoint.
      like: a training state of the run's configuration, e.g. `init(cfg)[1]`.
      config: the run's configuration; where given and the checkpoint records one,
        another game (by its rules, `Params.rules`) or network (`hidden`) is
        refused, naming what differs.

    Returns:
      The `TrainState`.

    Raises:
      CheckpointError: naming the problem: no file, not a readable checkpoint, one
        written for another configuration (recorded settings, or else leaf shapes,
        that differ), or arrays no training writes (text, a network holding NaN, a
        negative iteration count).
    """
    leaves, treedef = jax.tree.flatten(like)
    with _open_archive(path) as data:
        _check_pursuit_archive(path, data)
        # The recorded settings first: they name what differs (a network of other
        # widths also has another number of leaves).
        record = _record(path, data)
        if config is not None and record is not None:
            _check_trained_like(path, record, config)
        names = sorted(name for name in data.files if name != _CONFIG)
        want = [f"leaf_{i:04d}" for i in range(len(leaves))]
        if names != want:
            raise CheckpointError(f"{path}: written for another configuration: it holds "
                                  f"{len(names)} arrays, this configuration's state has "
                                  f"{len(leaves)} (network depth must match)")
        new = [npz.member(data, name, path, CheckpointError) for name in want]
    problem = _leaf_mismatch(like, new)
    if problem:
        raise CheckpointError(f"{path}: written for another configuration: {problem}")
    odd = next((i for i, y in enumerate(new) if y.dtype.kind not in "biuf"), None)
    if odd is not None:
        raise CheckpointError(f"{path}: not a readable checkpoint: leaf {odd} holds "
                              f"{new[odd].dtype} data, not numbers")
    # A network that diverged plays no game well; say so rather than grade it silently.
    num_params = len(jax.tree.leaves(like.params))
    if not all(np.isfinite(y).all() for y in new[:num_params]):
        raise CheckpointError(f"{path}: the network's parameters hold NaN or infinity "
                              "(training diverged, or the file was altered); train again from "
                              "an earlier checkpoint")
    if new[-1] < 0:  # TrainState.step, the last leaf
        raise CheckpointError(f"{path}: not a readable checkpoint: it counts {int(new[-1])} "
                              "iterations done")
    return jax.tree.unflatten(treedef, [jnp.asarray(y, dtype=x.dtype) for x, y in zip(leaves, new)])


def _check_state(state, fresh: TrainState) -> TrainState:
    """`state` if it is a training state of the configuration `fresh` was made for."""
    if jax.tree.structure(state) != jax.tree.structure(fresh):
        raise ArgumentError("train: state must be a TrainState of this configuration "
                            f"(train.init(cfg) or train.load), got {type(state).__name__} of "
                            "another structure")
    problem = _leaf_mismatch(fresh, jax.tree.leaves(state))
    if problem:
        raise ArgumentError(f"train: state was made for another configuration: {problem}")
    return state


class Interrupted(KeyboardInterrupt):
    """Raised by `train` on Ctrl-C; being a KeyboardInterrupt, it stops callers that do
    not catch it as Ctrl-C always did.

    Saving `state` and resuming from it continues the run exactly.

    Args:
      state: the training state after the last completed iteration (the state given
        when none completed; None only if a second Ctrl-C cut an iteration short
        after its input was consumed).
      history: the metrics of the iterations recorded.
      train_seconds: the training time (as `max_seconds` counts it) up to the end of
        the last completed iteration: an iteration finished after the Ctrl-C is
        counted there though `history` lacks it.

    Attributes:
      state: as above.
      history: as above.
      train_seconds: as above.
    """

    def __init__(self, state: TrainState | None, history: list, train_seconds: float = 0.0):
        done = "nothing" if state is None else f"iteration {int(state.step)}"
        super().__init__(f"training interrupted (last completed: {done})")
        self.state, self.history, self.train_seconds = state, history, train_seconds


def _intact(state: TrainState) -> bool:
    """Whether no buffer of `state` was consumed by a (donating) jitted call."""
    return not any(isinstance(x, jax.Array) and x.is_deleted() for x in jax.tree.leaves(state))


def train(cfg: TrainConfig, iterations: int | None, *, state: TrainState | None = None,
          eval_every: int = 0, eval_fn: Callable[[Any], dict] | None = None,
          progress: bool = True, callback: Callable[..., Any] | None = None,
          max_seconds: float | None = None, stop_fn: Callable[[dict], bool] | None = None
          ) -> tuple[Any, TrainState, list[dict]]:
    """Trains the network by self-play, from `state` (default a fresh one), with a tqdm
    bar showing the loss and win rates.

    `state` is left as it was (the training runs on a copy of it). Ctrl-C
    (KeyboardInterrupt) raises `Interrupted`, which carries the state after the last
    completed iteration: one in progress is finished first (a second Ctrl-C stops at
    once), so that state is never lost half-way.

    The config's defaults are the base game (`pe.Params()`, a forced evader win) and
    no exploring starts; the recipe the AlphaZero page's results measure (and the CLI's
    defaults) is `TrainConfig.recipe(grid_size)`.

    Args:
      cfg: the training settings.
      iterations: the most iterations to run, an int >= 0, or None: until
        `max_seconds` or `stop_fn`.
      state: the training state to continue from (a `TrainState` of `cfg`).
      eval_every: run `eval_fn` every this many iterations and after the last one;
        0 (the default) never runs it.
      eval_fn: `eval_fn(params) -> dict`, e.g. win rates vs random.
      progress: whether to show the bar.
      callback: `callback(i, state, metrics)`, called after every iteration.
      max_seconds: stop after the iteration during which the training time - wall
        clock from the call, compilation included, `eval_fn` excluded - reaches it.
      stop_fn: `stop_fn(metrics) -> bool`, stop after an evaluation it accepts; it
        needs `eval_fn` and `eval_every` > 0 (refused otherwise: it would never be
        asked).

    Returns:
      (graphdef, state, history), history holding one metric dict per iteration:
        `iteration` (done so far), `train_seconds`, the mean `loss`, `policy_loss`
        (cross-entropy to the search's policy) and `value_loss` (squared error to the
        outcome) over the iteration's steps, `selfplay_evader_wins` (the evader's win
        rate in the self-play games from the initial position, unless all start
        elsewhere), `explore_evader_wins` (in those from exploring starts, when
        `explore_fraction` > 0) and, after an evaluation, whatever `eval_fn` returned.

    Raises:
      ArgumentError: a bad setting, `eval_every` without `eval_fn`, no stopping rule
        (neither `iterations`, `max_seconds` nor `stop_fn`), `stop_fn` without an
        evaluation, or a `state` of another configuration.
      Interrupted: on Ctrl-C.
    """
    iterations = validate.static("train", "iterations", iterations,
                               validate.optional_rule(validate.integer_rule(0)))
    eval_every = validate.static("train", "eval_every", eval_every, validate.integer_rule(0))
    max_seconds = validate.static("train", "max_seconds", max_seconds,
                                validate.optional_rule(validate.number_rule(0)))
    if eval_every and eval_fn is None:
        raise ArgumentError(f"train: eval_every={eval_every} but no eval_fn to run (give "
                            "eval_fn, or leave eval_every at 0)")
    start, eval_time = time.perf_counter(), 0.0
    graphdef, fresh = init(cfg)
    # The jitted iteration donates its input; a state the caller passed is copied
    # first, so that theirs stays usable (donated, it would be deleted: "Array has
    # been deleted").
    state = fresh if state is None else jax.tree.map(jnp.copy, _check_state(state, fresh))
    step = jax.jit(make_iteration(cfg, graphdef), donate_argnums=0)
    history, shown, seconds = [], {}, 0.0
    if iterations is None and max_seconds is None and stop_fn is None:
        raise ArgumentError("train: give iterations, max_seconds or stop_fn")
    if stop_fn is not None and not (eval_fn is not None and eval_every):
        raise ArgumentError("train: stop_fn is asked after each evaluation; give eval_fn and "
                            "eval_every > 0 with it (without them it would never be asked)")
    counter = itertools.count() if iterations is None else range(iterations)
    bar = progress_bar(total=iterations, disable=not progress, desc="alphazero")
    try:
        with HeldInterrupt() as interrupt:
            for i in counter:
                with interrupt.hold():
                    state, metrics = step(state)
                    metrics = {k: float(v) for k, v in metrics.items()}  # (waits for the step)
                    # Inside the hold: a Ctrl-C held back is raised when it ends, and
                    # Interrupted must still count this iteration's time.
                    seconds = time.perf_counter() - start - eval_time
                last = i + 1 == iterations or (max_seconds is not None and seconds >= max_seconds)
                evaluated = eval_fn is not None and eval_every and ((i + 1) % eval_every == 0 or last)
                if evaluated:
                    t_eval = time.perf_counter()
                    metrics.update(eval_fn(state.params))
                    eval_time += time.perf_counter() - t_eval
                    shown = {k: f"{v:.2f}" for k, v in metrics.items() if k.startswith("win_")}
                metrics["iteration"] = int(state.step)
                metrics["train_seconds"] = seconds
                history.append(metrics)
                bar.update(1)
                # refresh=False: the bar redraws on its own schedule (every 30 s in a
                # log file), not at every iteration.
                bar.set_postfix(loss=f"{metrics['loss']:.3f}", **shown, refresh=False)
                if callback is not None:
                    callback(i, state, metrics)
                if last or (evaluated and stop_fn is not None and stop_fn(metrics)):
                    break
    except KeyboardInterrupt:
        bar.close()
        raise Interrupted(state if _intact(state) else None, history, seconds) from None
    bar.close()
    return graphdef, state, history


__all__ = ["Interrupted", "TrainConfig", "TrainState", "config_from_record", "init", "load",
           "loss_fn", "make_iteration", "optimizer", "recorded_config", "save", "saved_iteration",
           "train"]
