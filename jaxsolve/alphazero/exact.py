"""Exact solution of pursuit-evasion by backward induction over the whole state space.

The game is Markov in (t, k, c, s, player): defender moves made `t` in [0, T], detections
`k` in [0, T], evader cell `c` in [0, G*G), sensor direction `s` in [0, 8) and the player
to move. The solver sweeps t = T-1 .. 0 with array code only (one NumPy gather and
max/min per half-turn), so the default 5x5 game (180,400 (t, k, c, s, player) states,
92,400 with the evader to move) solves in milliseconds and 11x11 in well under a
second. The arrays grow as T^2 * G^2, so a game that would need more than `max_bytes`
(`estimate_bytes`, default 4 GiB) is refused before anything is allocated.

Values are from the evader's side: +1 when the evader wins under optimal play, -1 when
the defender does (there are no draws). `best_vs_random` runs the same sweep with the
opponent replaced by a uniformly random mover, giving the best win probability any
policy can reach against random play.

Reference: Zermelo (1913); backward induction as in e.g. Russell & Norvig, ch. 5.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import validate
from jaxsolve.alphazero import checks
from jaxsolve.builders.assemble import format_bytes
from jaxsolve.errors import ArgumentError, ArgumentTypeError, TooLarge
from jaxsolve.games import pursuit_evasion as pe

# solve() refuses a game whose arrays would need more than this (`estimate_bytes`).
# Every game the repo solves fits many times over - the largest, 11x11 with the base
# rules (`pe.Params`, 20 turns), needs about 85 MiB, the 11x11 goal variant 35 MiB -
# while the goal variant on a 41x41 grid (4.66 GiB estimated, 4.55 GiB measured) and
# anything larger is refused before NumPy or JAX runs out of memory part-way.
DEFAULT_MAX_BYTES = 4 * 2**30


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ExactSolution:
    """Values (evader's side, +-1) and action values of every state.

    T = max_turns, K = T + 2 detection slots, C = grid_size**2 cells, S = 8 directions,
    A = 9 actions. Illegal actions have q = NaN.

    Attributes:
      value_evader: `[T+1, K, C, S]` float32, evader to move (t = T: terminal).
      value_defender: `[T, K, C, S]` float32, defender to move.
      q_evader: `[T, K, C, S, A]` float32, value after each evader action.
      q_defender: `[T, K, C, S, A]` float32, value after each defender action.
      root_value: `[]` float32, value of the initial position.
      params: the game solved (static); None for a solution built by hand, which is
        then checked by its shapes alone.
    """

    value_evader: jax.Array
    value_defender: jax.Array
    q_evader: jax.Array
    q_defender: jax.Array
    root_value: jax.Array
    params: Optional[pe.Params] = dataclasses.field(default=None, metadata=dict(static=True))

    def optimal_moves(self, player: int) -> jax.Array:
        """The moves that keep the value of the state.

        Args:
          player: `pe.EVADER` or `pe.DEFENDER`.

        Returns:
          `[T, K, C, S, A]` bool.
        """
        q = self.q_evader if player == pe.EVADER else self.q_defender
        v = self.value_evader[:-1] if player == pe.EVADER else self.value_defender
        return q == v[..., None]


def _shapes(params: pe.Params) -> dict:
    """The shape of each array of the solution of `params`."""
    t, c, s, a = params.max_turns, params.num_cells, pe.NUM_DIRS, pe.NUM_ACTIONS
    return {"value_evader": (t + 1, t + 2, c, s), "value_defender": (t, t + 2, c, s),
            "q_evader": (t, t + 2, c, s, a), "q_defender": (t, t + 2, c, s, a)}


def check_solution(solution: ExactSolution, params: pe.Params, where: str) -> None:
    """Refuses a solution of another game than `params`.

    Out-of-range gathers clamp, so a 5x5 solution would grade a 3x3 game without an
    error, and a solution of the same size but other rules (sensor, threshold) would
    grade it wrongly. Static: the solved Params and the shapes.

    Args:
      solution: the `ExactSolution`.
      params: the game's `pe.Params`.
      where: the public function's name, for the message.

    Raises:
      ValueError: the solution is of another game, or not an `ExactSolution`.
    """
    if not isinstance(solution, ExactSolution):
        raise ArgumentTypeError(f"{where}: solution must be an ExactSolution "
                                f"(exact.solve(params)), got {type(solution).__name__}")
    if solution.params is not None:
        differ = checks.mismatch(solution.params.rules(), params.rules())
        if differ:
            raise ArgumentError(f"{where}: the solution is of the game with {differ[0]}; this "
                                f"game has {differ[1]} (solve it with exact.solve)")
    for name, shape in _shapes(params).items():
        got = tuple(np.shape(getattr(solution, name)))
        if got != shape:
            raise ArgumentError(f"{where}: solution.{name} has shape {got}, this game's is "
                                f"{shape} (grid_size={params.grid_size}, max_turns="
                                f"{params.max_turns}); solve it with exact.solve")


def estimate_bytes(params: pe.Params, *, solution: bool = True) -> int:
    """Peak memory of `solve(params)` (of the sweep alone, as in `best_vs_random`, when not
    `solution`).

    Derived from `_sweep`: its unit is one float32 `[K, C, S]` slab, 4*K*C*S bytes. It
    holds value_evader (T+1 slabs), value_defender (T) and the two q arrays (9T each,
    one slab per action): 20T+1 slabs, plus per step a few `[K, C, S, A]` temporaries
    (the concatenated and masked q's, the max/min input), budgeted at 6 A-wide slabs.
    `solve` then turns the four arrays into JAX arrays while the NumPy ones are still
    alive (a second 20T+1), and each conversion stages one more copy of the array
    converted (at most a q array, 9T). Checked against the growth of ru_maxrss:
    goal_variant(21) estimated 366 MiB, measured 346 MiB (its sweep alone 160 and 158
    MiB); goal_variant(41) 4.66 GiB and 4.55 GiB; the base rules on 41x41 1.14 and 1.07
    GiB.

    Args:
      params: the game's `pe.Params`.
      solution: count the solution's arrays too (`solve`), not the sweep alone.

    Returns:
      Bytes, an int.
    """
    t = params.max_turns
    slab = 4 * (t + 2) * params.num_cells * pe.NUM_DIRS
    arrays, work = (20 * t + 1) * slab, 6 * pe.NUM_ACTIONS * slab
    return arrays + work + ((20 * t + 1) * slab + 9 * t * slab if solution else 0)


def _check_size(params: pe.Params, max_bytes, where: str, *, solution: bool) -> None:
    """Refuses (TooLarge) a game whose arrays would exceed `max_bytes`, before any is
    allocated: a large grid or turn count otherwise ends in NumPy's out-of-memory error
    or JAX's RESOURCE_EXHAUSTED, or swaps the machine to a halt first."""
    validate.static(where, "params", params,
                    validate.instance_rule(pe.Params, "a pursuit_evasion.Params"))
    max_bytes = validate.static(where, "max_bytes", max_bytes, validate.integer_rule(1))
    need = estimate_bytes(params, solution=solution)
    if need > max_bytes:
        raise TooLarge(where, (
            f"{where}: the game with grid_size={params.grid_size}, max_turns="
            f"{params.max_turns} has {(params.max_turns + 2) * params.num_cells * pe.NUM_DIRS:,}"
            f" (detections, cell, direction) states per turn; solving it needs about "
            f"{format_bytes(need)}, more than max_bytes={format_bytes(max_bytes)}."), need)


def _terminal_values(params: pe.Params) -> np.ndarray:
    """[K, C] evader-side outcome once the last defender move is made."""
    _, _, _, _, goal_ok = pe.tables(params)
    k = np.arange(params.max_turns + 2)[:, None]
    win = (k <= params.max_detections) & goal_ok[None, :]
    return np.where(win, 1.0, -1.0).astype(np.float32)


def _sweep(params: pe.Params, evader_mode: str, defender_mode: str):
    """Backward induction. Each mode is "max", "min" or "mean" (uniform random).

    Returns (value_evader [T+1,K,C,S], value_defender [T,K,C,S], q_e, q_d [T,K,C,S,A]).
    """
    next_cell, evader_legal, seen, turn_legal, _ = pe.tables(params)
    t_max, a = params.max_turns, pe.NUM_ACTIONS
    k_n, c_n, s_n = t_max + 2, params.num_cells, pe.NUM_DIRS
    kk = np.arange(k_n)

    def reduce(q, legal, mode):
        if mode == "mean":
            return np.nanmean(np.where(legal, q, np.nan), axis=-1)
        fill = -np.inf if mode == "max" else np.inf
        red = np.max if mode == "max" else np.min
        return red(np.where(legal, q, fill), axis=-1)

    v_e = np.zeros((t_max + 1, k_n, c_n, s_n), np.float32)
    v_d = np.zeros((t_max, k_n, c_n, s_n), np.float32)
    q_e = np.full((t_max, k_n, c_n, s_n, a), np.nan, np.float32)
    q_d = np.full((t_max, k_n, c_n, s_n, a), np.nan, np.float32)
    v_e[t_max] = _terminal_values(params)[:, :, None]
    # Defender: from (k, c, s) pointing at d leads to (t+1, min(k + seen[c, d], K-1), c, d).
    k_next = np.minimum(kk[:, None, None] + seen[None, :, :], k_n - 1)  # [K, C, 8]
    d_legal = np.concatenate([turn_legal, np.zeros((s_n, 1), bool)], 1)  # [S, A]
    e_legal = np.broadcast_to(evader_legal, (c_n, s_n, a))
    for t in range(t_max - 1, -1, -1):
        nxt = v_e[t + 1]  # [K, C, S]
        after = nxt[k_next, np.arange(c_n)[None, :, None], np.arange(s_n)[None, None, :]]
        qd = np.concatenate([np.broadcast_to(after[:, :, None, :], (k_n, c_n, s_n, s_n)),
                             np.full((k_n, c_n, s_n, 1), np.nan, np.float32)], -1)
        q_d[t] = np.where(d_legal[None, None], qd, np.nan)
        v_d[t] = reduce(qd, d_legal[None, None], defender_mode)
        # Evader: from (k, c, s) playing a leads to the defender node (t, k, next_cell[c, a], s).
        qe = np.transpose(v_d[t][:, next_cell, :], (0, 1, 3, 2))  # [K, C, S, A]
        q_e[t] = np.where(e_legal[None], qe, np.nan)
        v_e[t] = reduce(qe, e_legal[None], evader_mode)
    return v_e, v_d, q_e, q_d


def solve(params: pe.Params, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ExactSolution:
    """Solves the game exactly (minimax, evader maximises) by backward induction.

    Args:
      params: the game's `pe.Params`.
      max_bytes: refuse, before allocating, a game needing more memory than this
        (`estimate_bytes`).

    Returns:
      The `ExactSolution`.

    Raises:
      TooLarge: the solution would need more than `max_bytes` (a ValueError).
    """
    _check_size(params, max_bytes, "solve", solution=True)
    v_e, v_d, q_e, q_d = _sweep(params, "max", "min")
    x, y = params.start
    root = v_e[0, 0, y * params.grid_size + x, 0]
    return ExactSolution(value_evader=jnp.asarray(v_e), value_defender=jnp.asarray(v_d),
                         q_evader=jnp.asarray(q_e), q_defender=jnp.asarray(q_d),
                         root_value=jnp.asarray(root), params=params)


def best_vs_random(params: pe.Params, side: int, *,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> float:
    """Highest win probability of `side` against uniform random play, from the initial
    position.

    Args:
      params: the game's `pe.Params`.
      side: 0 (evader) or 1 (defender).
      max_bytes: refuse, before allocating, a game needing more memory than this
        (`estimate_bytes`).

    Returns:
      The probability, a float.

    Raises:
      ArgumentError: `side` is neither 0 nor 1.
      TooLarge: the sweep would need more than `max_bytes`.
    """
    side = validate.static("best_vs_random", "side", side, validate.integer_rule(
        pe.EVADER, pe.DEFENDER, note=f"{pe.EVADER} the evader, {pe.DEFENDER} the defender"))
    _check_size(params, max_bytes, "best_vs_random", solution=False)
    modes = ("max", "mean") if side == pe.EVADER else ("mean", "min")
    v_e, _, _, _ = _sweep(params, *modes)
    x, y = params.start
    v = float(v_e[0, 0, y * params.grid_size + x, 0])  # expected evader-side outcome
    p_evader = (v + 1) / 2
    return p_evader if side == pe.EVADER else 1 - p_evader


def random_vs_random(params: pe.Params, *, max_bytes: int = DEFAULT_MAX_BYTES) -> float:
    """Probability that the evader wins when both sides play uniformly at random, computed
    in float32 (within ~1e-7: the default game's 0.99999992 reads 1.0).

    Args:
      params: the game's `pe.Params`.
      max_bytes: refuse, before allocating, a game needing more memory than this
        (`estimate_bytes`).

    Returns:
      The probability, a float.

    Raises:
      TooLarge: the sweep would need more than `max_bytes`.
    """
    _check_size(params, max_bytes, "random_vs_random", solution=False)
    v_e, _, _, _ = _sweep(params, "mean", "mean")
    x, y = params.start
    return float((v_e[0, 0, y * params.grid_size + x, 0] + 1) / 2)


def state_index(params: pe.Params, state: pe.State
                ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The indices of `state` into the solution's arrays.

    Args:
      params: the game's `pe.Params`.
      state: a game state, unbatched or batched `[B]`.

    Returns:
      (t, k, c, s): turn, detections (capped), cell and sensor direction, `[]` or `[B]`
        int32 each.
    """
    k = jnp.minimum(state.detections, params.max_turns + 1)
    return state.turn, k, state.cell, state.sensor


def state_value(solution: ExactSolution, params: pe.Params, state: pe.State) -> jax.Array:
    """Exact evader-side value of `state`; jit/vmap-able.

    Args:
      solution: the `ExactSolution` of `params`.
      params: the game's `pe.Params`.
      state: a game state, unbatched or batched `[B]`.

    Returns:
      `[]` or `[B]` float32.

    Raises:
      ValueError: a solution of another game.
    """
    check_solution(solution, params, "state_value")
    t, k, c, s = state_index(params, state)
    t_d = jnp.minimum(t, params.max_turns - 1)
    return jnp.where(state.current_player == pe.EVADER, solution.value_evader[t, k, c, s],
                     solution.value_defender[t_d, k, c, s])


def is_mistake(solution: ExactSolution, params: pe.Params, state: pe.State,
               action: jax.Array) -> jax.Array:
    """True where `action` turns a won position (for the mover) into a lost one.

    Args:
      solution: the `ExactSolution` of `params`.
      params: the game's `pe.Params`.
      state: a game state, unbatched or batched `[B]`.
      action: `[]` or `[B]` the mover's action.

    Returns:
      `[]` or `[B]` bool; False at terminated states.

    Raises:
      ValueError: a solution of another game.
    """
    check_solution(solution, params, "is_mistake")
    t, k, c, s = state_index(params, state)
    t = jnp.minimum(t, params.max_turns - 1)
    evader = state.current_player == pe.EVADER
    q = jnp.where(evader, solution.q_evader[t, k, c, s, action],
                  solution.q_defender[t, k, c, s, action])
    v = jnp.where(evader, solution.value_evader[t, k, c, s], solution.value_defender[t, k, c, s])
    sign = jnp.where(evader, 1.0, -1.0)  # mover's side
    return (sign * v > 0) & (sign * q < 0) & ~state.terminated


__all__ = ["DEFAULT_MAX_BYTES", "ExactSolution", "TooLarge", "best_vs_random",
           "check_solution", "estimate_bytes", "is_mistake", "random_vs_random", "solve",
           "state_index", "state_value"]
