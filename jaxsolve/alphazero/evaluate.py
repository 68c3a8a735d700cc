"""Evaluation: matches against random play and pure MCTS, graded by the exact solver.

* `evaluate(..., opponents=("random",))`: the agent (search with the trained network,
  noise off) as each side against uniform random play; `best_rates_vs_random(env)`
  gives the best rate any policy achieves against random play (`exact.best_vs_random`,
  computed exactly).
* Against pure MCTS: the same search with uniform priors and one random rollout per
  leaf as the value, at the same number of simulations.
* Mistake rate: the fraction of the agent's moves, in positions the exact solver calls
  won for the agent, that turn them into lost ones, over every position reached. Only
  those positions count: an agent that never reaches one (e.g. a defender that never
  gets the evader where it can force a detection) scores 0, so read it beside the win
  rates. `Rates.counts` gives the counts behind each rate.

All matches run B games in lockstep in one jitted function; the agent's side is a
traced argument, so both sides share one compilation. With `progress=True` a bar
counts the plies as the compiled match plays them (a host callback per ply), for
evaluations long enough to want one (many simulations per move).
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from jaxsolve import mcts, validate
from jaxsolve.alphazero import exact, selfplay
from jaxsolve.errors import ArgumentError
from jaxsolve.games import pursuit_evasion as pe
from jaxsolve.progress import bar as progress_bar

OPPONENTS = ("random", "mcts")  # uniform random play; PUCT with rollouts (pure MCTS)


def rollout_recurrent_fn(env: pe.Params, params: Any, key: jax.Array, action: jax.Array,
                         state: pe.State) -> tuple[mcts.RecurrentFnOutput, pe.State]:
    """Pure-MCTS model: uniform priors; value = outcome of one random playout.

    Args:
      env: the game's `Params`.
      params: unused (no network).
      key: PRNG key of the playouts.
      action: `[B]` int32 actions.
      state: a batch of game states `[B]`.

    Returns:
      (`mcts.RecurrentFnOutput`, the new states `[B]`).
    """
    del params
    mover = state.current_player
    nxt = jax.vmap(functools.partial(pe.step, env))(state, action)

    def body(_, c):
        s, k = c
        k, sub = jax.random.split(k)
        a = jax.vmap(pe.random_action)(jax.random.split(sub, action.shape[0]), s)
        return jax.vmap(functools.partial(pe.step, env))(s, a), k

    end, _ = jax.lax.fori_loop(0, 2 * env.max_turns, body, (nxt, key))
    # Final rewards are zeroed by further no-op steps, so rebuild the outcome.
    evader_won = (end.detections <= env.max_detections) & jnp.asarray(pe.tables(env)[4])[end.cell]
    z = jnp.where(evader_won, 1.0, -1.0)
    value = jnp.where(nxt.current_player == pe.EVADER, z, -z)
    reward = jnp.take_along_axis(nxt.rewards, mover[:, None], 1)[:, 0]
    out = mcts.RecurrentFnOutput(
        reward=reward, discount=jnp.where(nxt.terminated, 0.0, -1.0),
        prior_logits=jnp.zeros(nxt.legal_action_mask.shape, jnp.float32),
        value=jnp.where(nxt.terminated, 0.0, value), legal_action_mask=nxt.legal_action_mask)
    return out, nxt


def pure_mcts_action(env: pe.Params, num_simulations: int, key: jax.Array,
                     state: pe.State) -> jax.Array:
    """The moves of PUCT search with uniform priors and rollout values.

    Args:
      env: the game's `Params`.
      num_simulations: simulations per move.
      key: PRNG key.
      state: a batch of game states `[B]`.

    Returns:
      `[B]` int32 actions.
    """
    b = state.cell.shape[0]
    root = mcts.RootFnOutput(jnp.zeros((b, pe.NUM_ACTIONS), jnp.float32),
                             jnp.zeros(b, jnp.float32), state, state.legal_action_mask)
    out = mcts.alphazero_policy(None, key, root, functools.partial(rollout_recurrent_fn, env),
                                num_simulations, dirichlet_fraction=0.0, temperature=0.0,
                                max_depth=2 * env.max_turns)
    return out.action


def _opponents(opponents, where: str) -> tuple:
    """`opponents` as a tuple of known names; a single name is one opponent."""
    names = (opponents,) if isinstance(opponents, str) else tuple(opponents)
    for name in names:
        if name not in OPPONENTS:
            raise ArgumentError(f"{where}: unknown opponent {name!r}; expected "
                                + " or ".join(map(repr, OPPONENTS)))
    return names


class _PlyCounter:
    """The host side of a match's per-ply callback: advances `bar` (a tqdm bar, set by
    `evaluate` for one call) by one ply; a no-op while `bar` is None."""

    def __init__(self):
        self.bar = None

    def __call__(self):
        if self.bar is not None:
            self.bar.update(1)


def make_match(env: pe.Params, cfg: selfplay.SearchConfig, graphdef: nnx.GraphDef, batch: int,
               opponent: str = "random", progress: bool = False
               ) -> Callable[..., dict[str, jax.Array]]:
    """A jitted match of the agent against an opponent.

    Args:
      env: the game's `Params`.
      cfg: the agent's `selfplay.SearchConfig`.
      graphdef: the network's static structure.
      batch: B, games per call (>= 1).
      opponent: one of `OPPONENTS`.
      progress: each ply calls back to the host to advance the bar held in
        `match.plies.bar` (2 * env.max_turns plies a call).

    Returns:
      `match(params, solution, key, agent_side) -> dict` of per-batch stats:
        agent_wins `[B]` bool, mistakes / won_moves / moves `[]` int32 (agent moves only).

    Raises:
      ArgumentError: `batch` below 1, or an unknown opponent.
    """
    batch = validate.static("make_match", "batch", batch, validate.integer_rule(1))
    (opponent,) = _opponents((opponent,), "make_match")
    plies = _PlyCounter()

    def match(params, solution, key, agent_side):
        state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(key, batch))

        def ply(c, k):
            if progress:
                jax.debug.callback(plies)
            state, mistakes, won, moves = c
            k1, k2 = jax.random.split(k)
            mine = selfplay.run_search(graphdef, env, cfg, params, k1, state, noise=False).action
            if opponent == "random":
                theirs = jax.vmap(pe.random_action)(jax.random.split(k2, batch), state)
            else:
                theirs = pure_mcts_action(env, cfg.num_simulations, k2, state)
            is_agent = (state.current_player == agent_side) & ~state.terminated
            action = jnp.where(is_agent, mine, theirs)
            v = exact.state_value(solution, env, state)
            won_pos = is_agent & (jnp.where(agent_side == pe.EVADER, v, -v) > 0)
            bad = is_agent & exact.is_mistake(solution, env, state, action)
            c = (jax.vmap(functools.partial(pe.step, env))(state, action),
                 mistakes + jnp.sum(bad, dtype=jnp.int32), won + jnp.sum(won_pos, dtype=jnp.int32),
                 moves + jnp.sum(is_agent, dtype=jnp.int32))
            return c, None

        zero = jnp.int32(0)
        keys = jax.random.split(jax.random.fold_in(key, 7), 2 * env.max_turns)
        (final, mistakes, won, moves), _ = jax.lax.scan(ply, (state, zero, zero, zero), keys)
        z = final.rewards[:, pe.EVADER]
        wins = jnp.where(agent_side == pe.EVADER, z > 0, z < 0)
        return dict(agent_wins=wins, mistakes=mistakes, won_moves=won, moves=moves)

    jitted = jax.jit(match)
    jitted.plies = plies
    return jitted


class Rates(dict):
    """What `evaluate` returns: a plain dict of rates (printed, compared and serialised as
    one), with the counts behind them in `counts`.

    Args:
      rates: the rates, the dict's items.
      counts: `games_per_side` (per opponent), `wins_vs_<opponent>_as_<side>`,
        `mistakes` and `won_positions` (the agent's moves in positions the exact solver
        calls won for it: the mistake rate's denominator).
    """

    def __init__(self, rates: dict, counts: dict):
        super().__init__(rates)
        self.counts = counts


def _ply_bar(progress: bool, total: int, cfg: selfplay.SearchConfig):
    """The bar `evaluate(progress=True)` advances once a ply (a context manager that
    closes it); without progress, a context holding None."""
    if not progress:
        return contextlib.nullcontext(None)
    return progress_bar(total=total, unit="ply",
                        desc=f"evaluate ({cfg.num_simulations} simulations a move)")


def evaluate(env: pe.Params, cfg: selfplay.SearchConfig, graphdef: nnx.GraphDef,
             params: nnx.State, solution: exact.ExactSolution, key: jax.Array,
             batch: int = 256, opponents: str | Sequence[str] = ("random",),
             matches: dict[str, Callable[..., dict[str, jax.Array]]] | None = None,
             progress: bool = False) -> Rates:
    """Win rates as each side vs each opponent, and the mistake rate over all games played,
    graded by the exact solution.

    Args:
      env: the game's `Params`.
      cfg: the agent's `SearchConfig` (`TrainConfig.search`), not the TrainConfig.
      graphdef: the network's static structure.
      params: the network's parameters.
      solution: `exact.solve(env)`.
      key: PRNG key.
      batch: games per side and opponent (>= 1).
      opponents: names from `OPPONENTS`, or one name.
      matches: a dict, by opponent name, caching compiled `make_match`es across calls;
        a cached match made for another env, search config, network, batch or
        `progress` is refused by name rather than silently reused.
      progress: show a bar over the plies played (opponents x 2 sides x 2 *
        env.max_turns), for long evaluations.

    Returns:
      A `Rates` dict: "win_vs_<opponent>_as_evader", "win_vs_<opponent>_as_defender"
        (for each opponent), the agent's win rate over `batch` games from the initial
        position as each side, and "mistake_rate", the share of its moves in won positions
        (by the exact solver) that lose the win (0 when it reaches none: see the module
        docstring); `.counts` holds the numbers behind the rates.

    Raises:
      ValueError: a bad batch, config, opponent or solution, or a cached match of other
        settings.
    """
    # Checked before anything compiles: the batch, the names, and that the solution is
    # of this game (another one's would be graded by clamped, meaningless gathers).
    validate.static("evaluate", "batch", batch, validate.integer_rule(1))
    validate.static("evaluate", "cfg", cfg, validate.instance_rule(
        selfplay.SearchConfig, "the agent's selfplay.SearchConfig (TrainConfig.search)"))
    opponents = _opponents(opponents, "evaluate")
    exact.check_solution(solution, env, "evaluate")
    matches = {} if matches is None else matches
    res, counts, mistakes, won = {}, {"games_per_side": batch}, 0, 0
    settings = (env, cfg, graphdef, batch, bool(progress))
    for opp in opponents:
        if opp not in matches:
            matches[opp] = make_match(env, cfg, graphdef, batch, opp, progress=bool(progress))
            matches[opp].settings = settings
        elif getattr(matches[opp], "settings", settings) != settings:
            raise ArgumentError(
                f"evaluate: matches[{opp!r}] was compiled for another env, search config, "
                f"network, batch or progress (batch {matches[opp].settings[3]}, asked "
                f"{batch}); pass a fresh dict for other settings")
    with _ply_bar(progress, len(opponents) * 2 * 2 * env.max_turns, cfg) as bar:
        for opp in opponents:
            # A match not made by make_match (a stand-in passed in `matches`) has no
            # counter; it plays without advancing the bar.
            counter = getattr(matches[opp], "plies", _PlyCounter())
            counter.bar = bar
            try:
                for side, name in ((pe.EVADER, "evader"), (pe.DEFENDER, "defender")):
                    out = matches[opp](params, solution, jax.random.fold_in(key, side),
                                       jnp.int32(side))
                    res[f"win_vs_{opp}_as_{name}"] = float(jnp.mean(out["agent_wins"]))
                    counts[f"wins_vs_{opp}_as_{name}"] = int(jnp.sum(out["agent_wins"]))
                    mistakes += int(out["mistakes"])
                    won += int(out["won_moves"])
            finally:
                counter.bar = None
    res["mistake_rate"] = mistakes / max(won, 1)
    return Rates(res, {**counts, "mistakes": mistakes, "won_positions": won})


def best_rates_vs_random(env: pe.Params) -> dict:
    """The best win rates any player reaches against uniform random play, as each side
    (`exact.best_vs_random`): the ceiling of the agent's rates vs random.

    Args:
      env: the game's `Params`.

    Returns:
      {"best_vs_random_as_evader": p, "best_vs_random_as_defender": p}.
    """
    return {"best_vs_random_as_evader": exact.best_vs_random(env, pe.EVADER),
            "best_vs_random_as_defender": exact.best_vs_random(env, pe.DEFENDER)}


__all__ = ["OPPONENTS", "Rates", "best_rates_vs_random", "evaluate", "make_match",
           "pure_mcts_action", "rollout_recurrent_fn"]
