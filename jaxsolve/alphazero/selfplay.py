"""Self-play: the model callbacks for search, B games in lockstep, a device replay buffer.

`root_fn` / `recurrent_fn` connect the environment and the network to the search in
the mctx style (explicit network params; the embedding is the environment `State`).
`play` runs B games from the initial position to the end under `jax.lax.scan`, each
move chosen by search (`alphazero_policy` or `gumbel_policy`), sampling from the
search policy for the first `temperature_moves` plies and playing the search's move
after (PUCT's most visited action, Gumbel's best surviving one; root noise stays on). It
returns one training example per ply: observation, search policy, and the final outcome
from the mover's side. The replay buffer is a ring of fixed-size device arrays.

Exploring starts (`explore_fraction > 0`): that fraction of the B self-play games
starts from `pe.exploring_start` - a random reachable position at a random turn -
instead of the initial position. On a large board an untrained evader almost never
reaches the goal row from the initial position, so every outcome is a loss and the
value targets carry no signal; games that start late and near the goal do end in wins,
and their values bootstrap backward through search. The rules and outcomes are
unchanged, so the value targets are still the game's own. Such games end early: the
plies after the end are marked invalid and never reach the buffer. Evaluation always
starts from the initial position (`evaluate`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
from flax import nnx

from jaxsolve import mcts, validate
from jaxsolve.alphazero import checks, network
from jaxsolve.games import pursuit_evasion as pe


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Static search settings (hashable; checked on construction by the policies' rules).

    Attributes:
      num_simulations: simulations per move (>= 1).
      kind: "gumbel" (`mcts.gumbel_policy`) or "puct" (`mcts.alphazero_policy`).
      dirichlet_fraction: PUCT's root noise weight.
      dirichlet_alpha: PUCT's root noise concentration.
      gumbel_scale: the scale of Gumbel's root noise (0 turns it off).
      max_num_considered_actions: the root actions Sequential Halving starts with.
    """

    num_simulations: int = 32
    kind: str = "gumbel"
    dirichlet_fraction: float = 0.25
    dirichlet_alpha: float = 0.3
    gumbel_scale: float = 1.0
    max_num_considered_actions: int = 9

    def __post_init__(self):
        shared = ("dirichlet_fraction", "dirichlet_alpha", "gumbel_scale",
                  "max_num_considered_actions")  # the policies' own rules
        checks.config_fields("SearchConfig", [
            ("num_simulations", validate.integer_rule(1)),
            ("kind", validate.one_of_rule("gumbel", "puct")),
            *((name, mcts.SETTINGS[name]) for name in shared)], self)



def root_fn(graphdef: nnx.GraphDef, env: pe.Params, net_params: nnx.State,
            state: pe.State) -> mcts.RootFnOutput:
    """The search's root for a batch of states.

    Args:
      graphdef: the network's static structure (`network.init_params`).
      env: the game's `Params`.
      net_params: the network's parameters.
      state: a batch of game states `[B]`.

    Returns:
      The `mcts.RootFnOutput`; the embedding is the state itself.
    """
    logits, value = network.apply(graphdef, net_params, state.observation)
    mask = state.legal_action_mask
    return mcts.RootFnOutput(network.masked_logits(logits, mask), value, state, mask)


def recurrent_fn(graphdef: nnx.GraphDef, env: pe.Params, net_params: nnx.State,
                 key: jax.Array, action: jax.Array, state: pe.State
                 ) -> tuple[mcts.RecurrentFnOutput, pe.State]:
    """The model step of the search: plays `action` and evaluates the new states with the
    network.

    Args:
      graphdef: the network's static structure (`network.init_params`).
      env: the game's `Params`.
      net_params: the network's parameters.
      key: unused (the game is deterministic).
      action: `[B]` int32 actions.
      state: a batch of game states `[B]`.

    Returns:
      (`mcts.RecurrentFnOutput`, the new states `[B]`): the mover's reward, discount -1
        (alternating players) or 0 into a terminal state.
    """
    del key
    mover = state.current_player
    nxt = jax.vmap(functools.partial(pe.step, env))(state, action)
    logits, value = network.apply(graphdef, net_params, nxt.observation)
    mask = nxt.legal_action_mask
    reward = jnp.take_along_axis(nxt.rewards, mover[:, None], 1)[:, 0]
    out = mcts.RecurrentFnOutput(
        reward=reward, discount=jnp.where(nxt.terminated, 0.0, -1.0),
        prior_logits=network.masked_logits(logits, mask),
        value=jnp.where(nxt.terminated, 0.0, value), legal_action_mask=mask)
    return out, nxt


def run_search(graphdef: nnx.GraphDef, env: pe.Params, cfg: SearchConfig,
               net_params: nnx.State, key: jax.Array, state: pe.State,
               *, noise: bool = True, temperature: float = 1.0) -> mcts.PolicyOutput:
    """Searches from a batch of states.

    Args:
      graphdef: the network's static structure (`network.init_params`).
      env: the game's `Params`.
      cfg: the `SearchConfig`.
      net_params: the network's parameters.
      key: PRNG key.
      state: a batch of game states `[B]`.
      noise: False turns off the Dirichlet / Gumbel noise (evaluation); PUCT then plays
        the most visited move.
      temperature: PUCT's action temperature (with noise).

    Returns:
      The `mcts.PolicyOutput`, fields `[B]` and `[B, A]`.
    """
    root = root_fn(graphdef, env, net_params, state)
    rec = functools.partial(recurrent_fn, graphdef, env)
    depth = 2 * env.max_turns
    if cfg.kind == "puct":
        return mcts.alphazero_policy(
            net_params, key, root, rec, cfg.num_simulations, max_depth=depth,
            dirichlet_fraction=cfg.dirichlet_fraction if noise else 0.0,
            dirichlet_alpha=cfg.dirichlet_alpha, temperature=temperature if noise else 0.0)
    return mcts.gumbel_policy(
        net_params, key, root, rec, cfg.num_simulations, max_depth=depth,
        gumbel_scale=cfg.gumbel_scale if noise else 0.0,
        max_num_considered_actions=cfg.max_num_considered_actions)


class Trajectory(NamedTuple):
    """Self-play data, time-major: `[P, B]` where P = 2 * max_turns plies.

    Attributes:
      observation: `[P, B, obs_size]` the mover's observations.
      policy: `[P, B, A]` the search's policy targets.
      player: `[P, B]` int32, the mover.
      outcome: `[B]` the evader's final reward.
      valid: `[P, B]` bool, plies before the game's end; None: all.
      from_start: `[B]` bool, the game began at the initial position; None: all did.
    """

    observation: jax.Array
    policy: jax.Array
    player: jax.Array
    outcome: jax.Array
    valid: Optional[jax.Array] = None
    from_start: Optional[jax.Array] = None


def play(graphdef: nnx.GraphDef, env: pe.Params, cfg: SearchConfig, net_params: nnx.State,
         key: jax.Array, batch: int,
         temperature_moves: int = 4, explore_fraction: float = 0.0) -> Trajectory:
    """Plays `batch` self-play games to the end, in lockstep under `lax.scan`.

    The first `round(explore_fraction * batch)` games start from `pe.exploring_start`
    (static count); with none, every game has the fixed length and `valid` is None.

    Args:
      graphdef: the network's static structure (`network.init_params`).
      env: the game's `Params`.
      cfg: the `SearchConfig`.
      net_params: the network's parameters.
      key: PRNG key.
      batch: B, games (static, >= 1).
      temperature_moves: the first plies sample from the search policy; the later ones
        take the search's move.
      explore_fraction: the fraction of games from exploring starts.

    Returns:
      The `Trajectory`.

    Raises:
      ArgumentError: `batch` is not an integer >= 1.
    """
    batch = validate.static("play", "batch", batch, validate.integer_rule(1))
    plies = 2 * env.max_turns
    state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(key, batch))
    n_explore = int(round(explore_fraction * batch))
    if n_explore:
        starts = jax.vmap(functools.partial(pe.exploring_start, env))(
            jax.random.split(jax.random.fold_in(key, 2), n_explore))
        state = jax.tree.map(lambda s, e: s.at[:n_explore].set(e), state, starts)

    def ply(state, inp):
        t, k = inp
        k_search, k_act = jax.random.split(k)
        # Temperature 0: the search's own move is PUCT's most visited action (Gumbel's is
        # its best surviving one either way); the early plies' sample is drawn below.
        out = run_search(graphdef, env, cfg, net_params, k_search, state, temperature=0.0)
        # Early plies sample from the search policy; later ones take the search's move.
        sampled = jax.random.categorical(
            k_act, jnp.log(jnp.maximum(out.action_weights, 1e-30))).astype(jnp.int32)
        action = jnp.where(t < temperature_moves, sampled, out.action)
        nxt = jax.vmap(functools.partial(pe.step, env))(state, action)
        return nxt, (state.observation, out.action_weights, state.current_player,
                     ~state.terminated, nxt.rewards[:, pe.EVADER])

    keys = jax.random.split(jax.random.fold_in(key, 1), plies)
    final, (obs, pol, player, valid, reward) = jax.lax.scan(
        ply, state, (jnp.arange(plies), keys))
    if not n_explore:
        return Trajectory(obs, pol, player, final.rewards[:, pe.EVADER])
    # Games that start late end early, and stepping an ended game zeroes its rewards:
    # the outcome is the (single) nonzero reward along the way.
    from_start = jnp.arange(batch) >= n_explore
    return Trajectory(obs, pol, player, jnp.sum(reward, 0), valid, from_start)


# ---------------------------------------------------------------------- replay buffer
class Buffer(NamedTuple):
    """Ring buffer of training examples on the device.

    Attributes:
      observation: `[M, obs_size]` observations.
      policy: `[M, A]` policy targets.
      value: `[M]` outcome from the mover's side.
      size: `[]` int32, filled entries.
      pos: `[]` int32, next write position.
    """

    observation: jax.Array
    policy: jax.Array
    value: jax.Array
    size: jax.Array
    pos: jax.Array


def buffer_init(capacity: int, obs_size: int, num_actions: int = pe.NUM_ACTIONS) -> Buffer:
    """An empty buffer.

    Args:
      capacity: M, the examples it holds.
      obs_size: the observation's width.
      num_actions: A.

    Returns:
      The `Buffer`, zeros, float32.
    """
    return Buffer(jnp.zeros((capacity, obs_size), jnp.float32),
                  jnp.zeros((capacity, num_actions), jnp.float32),
                  jnp.zeros((capacity,), jnp.float32), jnp.int32(0), jnp.int32(0))


def buffer_add(buf: Buffer, traj: Trajectory) -> Buffer:
    """Appends every valid ply of `traj` (P * B examples, time-major, fewer where
    `traj.valid` says so), overwriting the oldest.

    Args:
      buf: the buffer.
      traj: a `Trajectory`.

    Returns:
      The new `Buffer`.
    """
    sign = jnp.where(traj.player == pe.EVADER, 1.0, -1.0)
    value = (sign * traj.outcome[None, :]).reshape(-1)
    obs = traj.observation.reshape((-1, traj.observation.shape[-1]))
    pol = traj.policy.reshape((-1, traj.policy.shape[-1]))
    cap, n = buf.value.shape[0], value.shape[0]
    if traj.valid is not None:
        # A dynamic number of rows: the r-th valid row goes to pos + r, only the last
        # `cap` valid rows are kept, and the other rows are written out of range
        # (dropped), so the shapes stay static.
        valid = traj.valid.reshape(-1)
        rank = jnp.cumsum(valid, dtype=jnp.int32) - 1
        count = jnp.sum(valid, dtype=jnp.int32)
        idx = jnp.where(valid & (rank >= count - cap), (buf.pos + rank) % cap, cap)
        obs, pol, value = (x.astype(jnp.float32) for x in (obs, pol, value))
        return Buffer(buf.observation.at[idx].set(obs, mode="drop"),
                      buf.policy.at[idx].set(pol, mode="drop"),
                      buf.value.at[idx].set(value, mode="drop"),
                      jnp.minimum(buf.size + count, cap), (buf.pos + count) % cap)
    keep = min(n, cap)  # static; older rows of an oversized batch would be overwritten
    idx = (buf.pos + (n - keep) + jnp.arange(keep)) % cap
    obs, pol, value = (x[n - keep:].astype(jnp.float32) for x in (obs, pol, value))
    return Buffer(buf.observation.at[idx].set(obs), buf.policy.at[idx].set(pol),
                  buf.value.at[idx].set(value), jnp.minimum(buf.size + n, cap),
                  (buf.pos + n) % cap)


def buffer_sample(buf: Buffer, key: jax.Array, batch: int
                  ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """A uniform minibatch of filled rows.

    Args:
      buf: the buffer.
      key: PRNG key.
      batch: b, examples drawn (with replacement).

    Returns:
      (obs `[b, obs_size]`, policy `[b, A]`, value `[b]`).
    """
    idx = jax.random.randint(key, (batch,), 0, jnp.maximum(buf.size, 1))
    return buf.observation[idx], buf.policy[idx], buf.value[idx]


__all__ = ["Buffer", "SearchConfig", "Trajectory", "buffer_add", "buffer_init",
           "buffer_sample", "play", "recurrent_fn", "root_fn", "run_search"]
