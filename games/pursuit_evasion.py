"""Pursuit-evasion on a grid: a pure-JAX, pgx-style two-player environment.

An evader spacecraft crosses a region of space while a defender points a sensor to
keep it in view. The game comes from a course project that trains an AlphaZero-style
agent on it ("AlphaZero-lite for pursuit-evasion"), whose defaults (5x5, 20 turns,
threshold 0.5, the evader starting on the sensor's cell) `Params()` keeps. The
project describes the sensor two ways, as a cone of 3 cells adjacent to the
defender and as a ray of 3 cells; `sensor` picks either.

Rules:

* An evader sits on a `grid_size` x `grid_size` grid (default 5x5, start at the centre).
  A defender sits at the centre cell and points a sensor in one of 8 compass
  directions (0=N, 1=NE, 2=E, ..., 7=NW; the sensor starts pointing N).
* Players alternate, the evader first. The evader plays one of 9 actions: a king move in
  direction 0..7 (clamped to the grid, so walking into a wall stays put) or 8 = stay
  (illegal when `allow_stay=False`). The defender plays a sensor direction 0..7; with
  `turn_rate < 4` it may turn at most `turn_rate` eighths of a circle per move.
* After each defender move the evader is *detected* if its cell is in the sensor's
  footprint: `sensor="ray"` (default) sees the cells 1..`sensor_range` steps along
  the chosen direction; `sensor="wedge"` sees the three cells adjacent to the centre
  in directions d-1, d, d+1.
* After `max_turns` defender moves the game ends. The defender wins if the detection
  rate exceeds `threshold`; otherwise the evader wins. With `goal_row` set, the evader
  must moreover stand on that row at the end (the "cross the grid" variant).
* Rewards are +1/-1, `rewards[0]` for the evader and `rewards[1]` for the defender.

Observation, 35 features on 5x5: one-hot evader cell (row-major, 25), one-hot
sensor direction (8), turns remaining / max_turns, current player. `obs_detections=True`
appends detections / max_turns and the detections still allowed / max_turns:
without them the observation omits the detection count, so a position's value is
not a function of its observation.

The API follows pgx: `init(params, key) -> State`, `step(params, state, action) ->
State`; both are pure, jit- and vmap-able (pass `params` statically: it is a hashable
frozen dataclass). Stepping a terminated state is a no-op with zero rewards.
`exploring_start(params, key)` draws a random reachable position (for self-play only;
`reachable(params)` tabulates them).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from typing import NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import validate
from jaxsolve.errors import ArgumentError

EVADER, DEFENDER = 0, 1
NUM_ACTIONS = 9  # 8 directions + stay; the defender never has action 8.
STAY = 8
NUM_DIRS = 8
# Direction offsets: 0=N, 1=NE, 2=E, 3=SE, 4=S, 5=SW, 6=W, 7=NW, 8=stay.
DX = (0, 1, 1, 1, 0, -1, -1, -1, 0)
DY = (-1, -1, 0, 1, 1, 1, 0, -1, 0)


def _as_cell(value) -> Tuple[int, int]:
    """An (x, y) pair of integers as a tuple: a list or an array is converted, since
    Params must stay hashable to be a static jit argument. TypeError otherwise (caught
    by `validate.require`, which names the field)."""
    if isinstance(value, (str, bytes)) or len(value) != 2:
        raise TypeError("not an (x, y) pair")
    return tuple(validate.as_int(v) for v in value)


class _Threshold(NamedTuple):
    """A threshold in `Params.rules`: equal to another when both allow the same number
    of detections (`allows`, the game's `max_detections`), printed with that number."""

    value: float
    allows: int

    def __eq__(self, other):
        return isinstance(other, _Threshold) and self.allows == other.allows

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.allows)

    def __repr__(self):
        return f"{self.value!r} (at most {self.allows} detection{'' if self.allows == 1 else 's'})"


@dataclasses.dataclass(frozen=True)
class Params:
    """Static game parameters (hashable: use as a static jit argument). Each field is
    checked for its type and range when built, and stored in canonical form (NumPy
    integers as ints, a list `evader_start` as a tuple), so that bad parameters fail
    here, by name, rather than inside a jitted step or the exact solver.

    `grid_size` is odd and at least 3 (the sensor sits on the centre cell); cells are
    (x, y) with x the column and y the row, (0, 0) the top-left corner, so
    `evader_start=(x, y)` and `goal_row` is a y. `max_turns` counts defender moves;
    the defender wins if detections / max_turns exceed `threshold`. `goal_variant`
    builds the documented "cross the grid" game."""

    grid_size: int = 5
    max_turns: int = 20  # number of defender moves; the game has 2*max_turns plies
    threshold: float = 0.5  # the defender wins if detections / max_turns > threshold
    sensor: str = "ray"  # "ray" | "wedge"
    sensor_range: int = 3  # ray length (ray sensor only)
    evader_start: Optional[Tuple[int, int]] = None  # (x, y); None = centre
    allow_stay: bool = True
    goal_row: Optional[int] = None  # evader must end on this row (y) to win
    turn_rate: int = 4  # max sensor rotation per move, in 45-degree steps (4 = any)
    obs_detections: bool = False  # append detection-count features

    def __post_init__(self):
        g = self._field("grid_size", validate.Rule(
            validate.as_int, lambda v: v >= 3 and v % 2 == 1, "must be an odd integer >= 3"))
        self._field("max_turns", validate.integer_rule(1))
        # The defender wins if the detection rate, in [0, 1], exceeds the threshold.
        # 0 is a real game (a single detection wins it); at 1 or above the rate never
        # exceeds it and the sensor plays no part, below 0 every game is the
        # defender's (max_detections < 0). NaN is no finite number.
        self._field("threshold", validate.number_rule(0, below=1))
        self._field("sensor", validate.one_of_rule("ray", "wedge"))
        # Below 1 the ray sees no cell at all (the wedge ignores the range).
        self._field("sensor_range", validate.integer_rule(1))
        self._field("evader_start", validate.optional_rule(validate.Rule(
            _as_cell, lambda v: all(0 <= c < g for c in v),
            f"must be an (x, y) pair of integers on the {g}x{g} grid")))
        self._field("allow_stay", validate.FLAG_RULE)
        self._field("goal_row", validate.optional_rule(validate.integer_rule(
            0, g - 1, note="a row")))
        # The largest turn between two directions of 8 is 4 eighths (180 degrees), so
        # 4 allows any direction and 0 holds the sensor still; fractions would round.
        self._field("turn_rate", validate.integer_rule(
            0, 4, note="eighths of a turn per move; 4 = any"))
        self._field("obs_detections", validate.FLAG_RULE)

    def _field(self, name: str, rule: validate.Rule):
        """Checks one field by `rule`, stores its canonical value and returns it;
        ArgumentError "Params: {name} {rule}, got ..." otherwise."""
        value = validate.require(f"Params: {name}", getattr(self, name), rule)
        object.__setattr__(self, name, value)
        return value

    @property
    def start(self) -> Tuple[int, int]:
        c = self.grid_size // 2
        return tuple(self.evader_start) if self.evader_start is not None else (c, c)

    @property
    def num_cells(self) -> int:
        return self.grid_size * self.grid_size

    @property
    def max_detections(self) -> int:
        """Largest detection count with which the evader can still win: the largest k in
        0..max_turns with not (k / max_turns > threshold), the rule's comparison taken
        literally in float64. (A floor of threshold * max_turns needs a tolerance for
        thresholds such as 0.29, where 0.29 * 100 = 28.999999999999996, and any
        tolerance misjudges thresholds just below k / max_turns.) At least 0, since the
        threshold lies in [0, 1)."""
        t = self.max_turns
        return max(k for k in range(t + 1) if not k / t > self.threshold)

    def rules(self) -> dict:
        """The fields as the game reads them, to tell whether two Params describe one
        game (checkpoints and exact solutions compare these). The threshold enters the
        rules only through `max_detections`, so thresholds allowing the same number of
        detections compare equal (0.333 and 1/3 over 3 turns); `evader_start` None is
        the centre. Values print as the fields do, the threshold with what it allows."""
        fields = dataclasses.asdict(self)
        fields["threshold"] = _Threshold(self.threshold, self.max_detections)
        fields["evader_start"] = self.start
        return fields

    @property
    def obs_size(self) -> int:
        return self.num_cells + NUM_DIRS + 2 + (2 if self.obs_detections else 0)


def goal_variant(grid_size: int = 5, **overrides) -> Params:
    """The documented "cross the grid" variant, where winning needs precise play.

    The evader starts in the middle of the top row, the sensor pointing at it (N), and
    must finish on the bottom row after `grid_size + 1` turns, detected at most once.
    The ray sensor turns at most 45 degrees per move, so the defender must anticipate.
    Exact verdict (`exact.solve`): a forced evader win on 5x5, 7x7 and 11x11, yet an
    evader moving at random wins only 0.25% (5x5) against the optimal defender.
    `overrides` replace any field; "detected at most once" follows a `max_turns` given
    without a `threshold` (threshold 1 / max_turns).
    """
    t = overrides.get("max_turns", grid_size + 1)
    # A bad max_turns gets any threshold here: Params refuses it by name below.
    once = 1 / t if isinstance(t, numbers.Real) and t >= 1 else 0.0
    kw = dict(grid_size=grid_size, max_turns=t, threshold=once, sensor="ray",
              evader_start=(grid_size // 2, 0), goal_row=grid_size - 1, turn_rate=1,
              obs_detections=True)
    kw.update(overrides)
    if t == 1 and "threshold" not in overrides:  # 1 / 1 lies outside [0, 1)
        raise ArgumentError("goal_variant: max_turns=1 makes the default threshold 1 / "
                            "max_turns = 1, outside [0, 1); give threshold= too (0: no "
                            "detection allowed)")
    return Params(**kw)


# ----------------------------------------------------------------------------- tables
# Built in NumPy from the static params once; the exact solver uses the same tables.

@functools.lru_cache(maxsize=None)
def tables(params: Params):
    """Rule tables: (next_cell [C, 9] int32, evader_legal [9] bool,
    seen [C, 8] bool (cell c in the footprint of direction d),
    turn_legal [8, 8] bool (direction d reachable from s), goal_ok [C] bool)."""
    g = params.grid_size
    cells = np.arange(g * g)
    x, y = cells % g, cells // g
    dx, dy = np.array(DX), np.array(DY)
    nx = np.clip(x[:, None] + dx[None], 0, g - 1)
    ny = np.clip(y[:, None] + dy[None], 0, g - 1)
    next_cell = (ny * g + nx).astype(np.int32)
    evader_legal = np.ones(NUM_ACTIONS, bool)
    evader_legal[STAY] = params.allow_stay
    c = g // 2
    seen = np.zeros((g * g, NUM_DIRS), bool)
    for d in range(NUM_DIRS):
        if params.sensor == "ray":
            rays = [(d, r) for r in range(1, params.sensor_range + 1)]
        else:
            rays = [((d + k) % NUM_DIRS, 1) for k in (-1, 0, 1)]
        for dd, r in rays:
            px, py = c + r * DX[dd], c + r * DY[dd]
            if 0 <= px < g and 0 <= py < g:
                seen[py * g + px, d] = True
    diff = np.abs(np.arange(NUM_DIRS)[:, None] - np.arange(NUM_DIRS)[None])
    turn_legal = np.minimum(diff, NUM_DIRS - diff) <= params.turn_rate
    goal_ok = np.ones(g * g, bool) if params.goal_row is None else (y == params.goal_row)
    return next_cell, evader_legal, seen, turn_legal, goal_ok


# ----------------------------------------------------------------------------- state
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class State:
    """One game position (unbatched shapes; vmap adds a leading [B])."""

    current_player: jax.Array  # [] int32, 0 evader, 1 defender
    observation: jax.Array  # [obs_size] float32
    rewards: jax.Array  # [2] float32, (evader, defender), nonzero on the final step
    terminated: jax.Array  # [] bool
    legal_action_mask: jax.Array  # [9] bool, all False once terminated
    cell: jax.Array  # [] int32, evader cell y * grid_size + x
    sensor: jax.Array  # [] int32, sensor direction 0..7
    turn: jax.Array  # [] int32, defender moves made so far
    detections: jax.Array  # [] int32


def _legal(params: Params, player, sensor, terminated):
    _, evader_legal, _, turn_legal, _ = tables(params)
    defender = jnp.concatenate([jnp.asarray(turn_legal)[sensor], jnp.zeros(1, bool)])
    mask = jnp.where(player == EVADER, jnp.asarray(evader_legal), defender)
    return mask & ~terminated


def _observe(params: Params, player, cell, sensor, turn, detections):
    t = params.max_turns
    parts = [jax.nn.one_hot(cell, params.num_cells, dtype=jnp.float32),
             jax.nn.one_hot(sensor, NUM_DIRS, dtype=jnp.float32),
             jnp.stack([(t - turn) / t, player]).astype(jnp.float32)]
    if params.obs_detections:
        spare = params.max_detections - detections
        parts.append(jnp.stack([detections / t, spare / t]).astype(jnp.float32))
    return jnp.concatenate(parts)


def _make(params, player, cell, sensor, turn, detections, terminated, rewards):
    return State(
        current_player=player, rewards=rewards, terminated=terminated,
        observation=_observe(params, player, cell, sensor, turn, detections),
        legal_action_mask=_legal(params, player, sensor, terminated),
        cell=cell, sensor=sensor, turn=turn, detections=detections)


def init(params: Params, key: jax.Array) -> State:
    """The initial position (deterministic; `key` is accepted for the pgx API)."""
    del key
    x, y = params.start
    i32 = lambda v: jnp.asarray(v, jnp.int32)
    return _make(params, i32(EVADER), i32(y * params.grid_size + x), i32(0), i32(0),
                 i32(0), jnp.asarray(False), jnp.zeros(2, jnp.float32))


def step(params: Params, state: State, action: jax.Array) -> State:
    """Applies `action` ([] int) for the current player. Illegal actions are not
    checked (search masks them); stepping a terminated state returns it with zero
    rewards. One game at a time: step a batch under `jax.vmap`."""
    # Checked on shapes, which are static under jit and vmap: a batch passed directly
    # would fail deep inside JAX ("Incompatible shapes for broadcasting").
    if np.ndim(state.cell) != 0 or np.ndim(action) != 0:
        raise ArgumentError(f"step: takes one game's state and a [] action, got state.cell of "
                            f"shape {np.shape(state.cell)} and action of shape "
                            f"{np.shape(action)}; step a batch with "
                            "jax.vmap(functools.partial(step, params))")
    next_cell, _, seen, _, goal_ok = (jnp.asarray(a) for a in tables(params))
    action = jnp.asarray(action, jnp.int32)
    done = state.terminated
    is_evader = state.current_player == EVADER
    cell = jnp.where(is_evader, next_cell[state.cell, jnp.clip(action, 0, 8)], state.cell)
    sensor = jnp.where(is_evader, state.sensor, jnp.clip(action, 0, NUM_DIRS - 1))
    hit = ~is_evader & seen[state.cell, sensor]
    detections = state.detections + hit.astype(jnp.int32)
    turn = state.turn + (~is_evader).astype(jnp.int32)
    evader_wins = (detections <= params.max_detections) & goal_ok[cell]
    r = jnp.where(evader_wins, 1.0, -1.0).astype(jnp.float32)
    ends = turn >= params.max_turns
    rewards = jnp.where(ends & ~done, jnp.stack([r, -r]), jnp.zeros(2, jnp.float32))
    # A terminated state is absorbing. It is rebuilt from its own fields rather than
    # passed through, so that step reads only the fields below: a search that stores
    # the states it expands (ours, mctx) can then drop the observation, the mask and
    # the rewards from its tree (the compiler removes what nothing reads).
    keep = lambda old, nw: jnp.where(done, old, nw)
    return _make(params, keep(state.current_player, 1 - state.current_player),
                 keep(state.cell, cell), keep(state.sensor, sensor), keep(state.turn, turn),
                 keep(state.detections, detections), done | ends, rewards)


# ------------------------------------------------------------------- exploring starts
@functools.lru_cache(maxsize=None)
def reachable(params: Params) -> np.ndarray:
    """[T, T+1, C, 8] bool: the positions (turn t, detections k, evader cell c, sensor
    direction s) with the evader to move that some sequence of legal moves reaches
    from the initial position. A forward sweep over the rule tables (NumPy, cached)."""
    next_cell, evader_legal, seen, turn_legal, _ = tables(params)
    t_n, k_n, c_n = params.max_turns, params.max_turns + 1, params.num_cells
    moves = np.zeros((c_n, c_n), np.int32)  # moves[c, c'] = 1: a legal evader move c -> c'
    for a in np.flatnonzero(evader_legal):
        moves[np.arange(c_n), next_cell[:, a]] = 1
    turns = turn_legal.astype(np.int32)  # [s, d]
    r = np.zeros((t_n, k_n, c_n, NUM_DIRS), bool)
    x, y = params.start
    r[0, 0, y * params.grid_size + x, 0] = True
    for t in range(t_n - 1):
        moved = np.einsum("kcs,cd->kds", r[t].astype(np.int32), moves) > 0  # [K, C', S]
        pointed = np.einsum("kcs,sd->kcd", moved.astype(np.int32), turns) > 0  # [K, C', D]
        r[t + 1] = pointed & ~seen[None]
        r[t + 1, 1:] |= pointed[:-1] & seen[None]
    return r


@functools.lru_cache(maxsize=None)
def _start_table(params: Params) -> np.ndarray:
    """[T, (T+1) * C * 8] bool: the exploring-start support for each turn - reachable
    positions the evader can still win on detections, or all reachable ones when no
    such position exists at that turn."""
    r = reachable(params)
    live = r & (np.arange(params.max_turns + 1) <= params.max_detections)[None, :, None, None]
    keep = np.where(live.any(axis=(1, 2, 3))[:, None, None, None], live, r)
    return keep.reshape(params.max_turns, -1)


def exploring_start(params: Params, key: jax.Array) -> State:
    """A random position for self-play "exploring starts" (unbatched; jit/vmap-able).

    The turn t is uniform in 0..max_turns-1, then the position is uniform over the
    positions of turn t with the evader to move that legal play reaches from the
    initial position (`reachable`), restricted to those not yet lost on detections.
    t = 0 gives the initial position. Only the start differs: the rules, rewards and
    hence the game values of every position are those of `init`'s game.
    """
    table = jnp.asarray(_start_table(params))
    k_turn, k_pos = jax.random.split(key)
    t = jax.random.randint(k_turn, (), 0, params.max_turns, dtype=jnp.int32)
    idx = jax.random.categorical(k_pos, jnp.where(table[t], 0.0, -jnp.inf)).astype(jnp.int32)
    k, rest = jnp.divmod(idx, params.num_cells * NUM_DIRS)
    cell, sensor = jnp.divmod(rest, NUM_DIRS)
    return _make(params, jnp.int32(EVADER), cell, sensor, t, k, jnp.asarray(False),
                 jnp.zeros(2, jnp.float32))


def random_action(key: jax.Array, state: State) -> jax.Array:
    """A uniformly random legal action ([] int32) for an unbatched state."""
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


__all__ = ["DEFENDER", "EVADER", "NUM_ACTIONS", "Params", "State", "exploring_start",
           "goal_variant", "init", "random_action", "reachable", "step", "tables"]
