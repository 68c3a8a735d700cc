"""Evaluating a policy profile: expected values, best responses, NashConv, exploitability.

A policy is an `[I, A]` array of action probabilities per infoset (rows of every
player together). Everything here is exact array code over the GameTree's sequence
view, for any number of players and general-sum games, and correct when the
histories of an infoset lie at different depths (best response works on each
player's own infoset tree). With imperfect recall the best response computed here
is the best *behavioural* response of the tree's recorded parents and is not exact;
`compile_game` warns when that is the case.

Each public function checks its arguments once and calls a jitted kernel, so an
eager call runs as one compiled program (the kernels, being jitted, inline into a
caller's own jit or vmap).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxsolve import packing
from jaxsolve import sequences as seq
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.tree import GameTree


def _checked(tree: GameTree, policy, where: str) -> jax.Array:
    """`policy` as an [I, A] float array for `tree` (see `jaxsolve.validate`)."""
    tree_arguments.game_tree(tree, where)
    return tree_arguments.policy(tree, policy, where)


def _reach(tree: GameTree, policy: jax.Array):
    flat = seq.flatten(tree, policy)
    return seq.player_reach(tree, flat), seq.chance_reach(tree, policy.dtype)


@jax.jit
def _values(tree: GameTree, policy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """([P] best-response values, [P] on-policy values) of `policy` [I, A].

    Both come from one realization plan, one chance reach and one gather per player
    at the leaves: player p's leaf weights `chance * u_p * prod_{q != p} reach_q`
    feed p's best response, and the same weights times `reach_p`, summed, are p's
    on-policy value. (Computed apart, the two would gather every leaf twice.)"""
    if packing.available(tree):
        return _packed_values(tree, policy)
    flat = seq.flatten(tree, policy)
    plan = seq.realization_plan(tree, flat)
    chance = seq.chance_reach(tree, policy.dtype)
    num = tree.sizes.num_players
    reach = [seq.leaf_reach(tree, flat, plan, q) for q in range(num)]
    utilities = jnp.asarray(tree.utilities, policy.dtype)
    best, on_policy = [], []
    for p in range(num):
        weights = chance * utilities[:, p]
        for q in range(num):
            if q != p:
                weights = weights * reach[q]
        best.append(seq.best_response(tree, weights, p)[0])
        on_policy.append(seq.terminal_sum(tree, jnp.sum(weights * reach[p])))
    return jnp.stack(best), jnp.stack(on_policy)


def _packed_values(tree: GameTree, policy: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`_values` on each player's packed legal sequences (`jaxsolve.packing`): the
    plans, leaf sums and backups move no padding. Player p's on-policy value is its
    plan times its leaf sums, `sum_s plan_p[s] * sum_{z: last_p(z) = s} w_p(z)`: the
    same sum over the leaves regrouped by p's last sequence, S_p terms instead of Z."""
    num = tree.sizes.num_players
    shapes = [packing.layout(tree, p) for p in range(num)]
    packed = [packing.packed(tree, p) for p in range(num)]
    entries = policy.reshape(-1)
    plans = [packing.realization_plan(shape, entries[q.sequences], q.ancestors)[1]
             for shape, q in zip(shapes, packed)]
    reach = [plan[q.last] for plan, q in zip(plans, packed)]
    chance = seq.chance_reach(tree, policy.dtype)
    utilities = jnp.asarray(tree.utilities, policy.dtype)
    best, on_policy = [], []
    for p, (shape, q) in enumerate(zip(shapes, packed)):
        weights = chance * utilities[:, p]
        for other in range(num):
            if other != p:
                weights = weights * reach[other]
        sums = seq.terminal_sum(tree, jax.ops.segment_sum(weights, q.last,
                                                          num_segments=shape.size + 1))
        _, top = packing.backup(shape, sums[:-1], q.parent, shape.row_max, root=True)
        best.append(sums[-1] + top)
        on_policy.append(jnp.sum(plans[p] * sums))
    return jnp.stack(best), jnp.stack(on_policy)


@jax.jit
def _policy_value(tree: GameTree, policy: jax.Array) -> jax.Array:
    reach, chance = _reach(tree, policy)
    prob = chance * jnp.prod(reach, axis=0)
    return seq.terminal_sum(tree, prob @ jnp.asarray(tree.utilities, policy.dtype))


def policy_value(tree: GameTree, policy: jax.Array) -> jax.Array:
    """Expected utility of each player when everyone plays `policy`.

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities of every infoset (rows of every player).

    Returns:
      `[P]` float array, one value per player.

    Raises:
      ArgumentError: `tree` is not a GameTree, or `policy` is not an `[I, A]` array of
        probabilities for it.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> [round(float(v), 4) for v in jaxsolve.policy_value(tree, jaxsolve.uniform_policy(tree))]
      [0.125, -0.125]
    """
    return _policy_value(tree, _checked(tree, policy, "policy_value"))


def best_response_values(tree: GameTree, policy: jax.Array) -> jax.Array:
    """Each player's best-response value against the others' parts of `policy`.

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities of every infoset (rows of every player).

    Returns:
      `[P]` float array: entry p is the most player p can get while the others play
        `policy`.

    Raises:
      ArgumentError: `tree` is not a GameTree, or `policy` is not an `[I, A]` array of
        probabilities for it.
    """
    return _values(tree, _checked(tree, policy, "best_response_values"))[0]


def best_response(tree: GameTree, policy: jax.Array, player: int) -> tuple[jax.Array, jax.Array]:
    """A pure best response of `player` to the rest of `policy`.

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities of every infoset (rows of every player).
      player: the responding player, an int in `[0, P)`.

    Returns:
      (value, policy): `[]` the best-response value, and the `[I, A]` `policy` with
        `player`'s rows replaced by the best response (one-hot; ties broken towards the
        lowest action id).

    Raises:
      ArgumentError: `tree` or `policy` as in `policy_value`, or `player` out of range.
    """
    policy = _checked(tree, policy, "best_response")
    return _best_response(tree, policy, tree_arguments.player(tree, player, "best_response",
                                                        static=True))


@functools.partial(jax.jit, static_argnums=2)
def _best_response(tree: GameTree, policy: jax.Array, player: int):
    reach, chance = _reach(tree, policy)
    value, q = seq.best_response(tree, seq.leaf_weights(tree, reach, chance, player), player)
    br = jax.nn.one_hot(jnp.argmax(q, axis=-1), tree.sizes.num_actions, dtype=policy.dtype)
    mine = (jnp.asarray(tree.infoset_player) == player)[:, None]
    return value, jnp.where(mine, br, policy)


def counterfactual_values(tree: GameTree, policy: jax.Array,
                          player: int) -> tuple[jax.Array, jax.Array]:
    """`player`'s counterfactual values under `policy`: what CFR's regrets are made of
    (Zinkevich et al. 2007).

        q[I, a] = sum over histories h in I and leaves z below (h, a) of
                  chance(z) * reach_others(z) * reach_player(z | h, a) * u_player(z)
        v[I]    = sum_a policy[I, a] * q[I, a]

    where reach_player(z | h, a) is `player`'s own probability of playing from (h, a) to
    z. The instantaneous regret of (I, a) is q - v[:, None] on `player`'s legal actions.
    OpenSpiel's `action_value.TreeWalkCalculator` calls q `sum_cfr_reach_by_action_value`.

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities of every infoset (rows of every player).
      player: whose values, an int in `[0, P)`.

    Returns:
      (q, v): q `[I, A]` (0 at illegal actions and at other players' infosets) and
        v `[I]`.

    Raises:
      ArgumentError: `tree` or `policy` as in `policy_value`, or `player` out of range.
    """
    policy = _checked(tree, policy, "counterfactual_values")
    return _counterfactual_values(tree, policy, tree_arguments.player(
        tree, player, "counterfactual_values", static=True))


@functools.partial(jax.jit, static_argnums=2)
def _counterfactual_values(tree: GameTree, policy: jax.Array, player: int):
    flat = seq.flatten(tree, policy)
    reach, chance = _reach(tree, policy)
    q = seq.counterfactual_values(tree, flat, seq.leaf_weights(tree, reach, chance, player),
                                  player)
    return q, jnp.sum(policy * q, axis=-1)


def nash_conv(tree: GameTree, policy: jax.Array) -> jax.Array:
    """NashConv: the sum over players of (best-response value - on-policy value).

    Never below 0 in exact arithmetic; computed in float32 (x64 off), a policy at or near
    an equilibrium can read a little below 0: float32 keeps about 7 digits of the values
    it sums, so the rounding grows with the payoffs' scale and the tree's size. Enable
    float64 where values that small matter.

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities of every infoset (rows of every player).

    Returns:
      `[]` float array; 0 exactly at a Nash equilibrium.

    Raises:
      ArgumentError: `tree` is not a GameTree, or `policy` is not an `[I, A]` array of
        probabilities for it.
    """
    return _nash_conv(tree, _checked(tree, policy, "nash_conv"))


@jax.jit
def _nash_conv(tree: GameTree, policy: jax.Array) -> jax.Array:
    best, on_policy = _values(tree, policy)
    return jnp.sum(best - on_policy)


def exploitability(tree: GameTree, policy: jax.Array) -> jax.Array:
    """NashConv / number of players: OpenSpiel's definition for zero- and constant-sum
    games (the mean gain available to a player who switches to a best response).

    OpenSpiel defines none for general-sum games, where this is still that mean gain:
    compare `nash_conv` with OpenSpiel's there. Rounds as `nash_conv` does: in float32
    it can read a little below 0 near an equilibrium.

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities of every infoset (rows of every player).

    Returns:
      `[]` float array; 0 exactly at a Nash equilibrium.

    Raises:
      ArgumentError: `tree` is not a GameTree, or `policy` is not an `[I, A]` array of
        probabilities for it.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> round(float(jaxsolve.exploitability(tree, jaxsolve.uniform_policy(tree))), 6)
      0.458333
    """
    policy = _checked(tree, policy, "exploitability")
    return _nash_conv(tree, policy) / tree.sizes.num_players


def uniform_policy(tree: GameTree, dtype: jax.typing.DTypeLike | None = None) -> jax.Array:
    """The policy uniform over each infoset's legal actions.

    Args:
      tree: the compiled game, or a batch of games from `jaxsolve.stack`.
      dtype: float dtype of the result; JAX's default float dtype if None.

    Returns:
      `[I, A]` float array (`[B, I, A]` for a batch); 0 at illegal actions.

    Raises:
      ArgumentError: `tree` is not a GameTree.
    """
    tree_arguments.game_tree(tree, "uniform_policy", batch_ok=True)
    legal = jnp.asarray(tree.legal, dtype or jnp.zeros(()).dtype)
    return legal / legal.sum(axis=-1, keepdims=True)
