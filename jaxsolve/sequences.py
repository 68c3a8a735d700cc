"""Reach, counterfactual values and best response on the sequence view of a GameTree.

Every quantity CFR needs is a product along a path or a sum over the leaves below a
sequence, so it is computed on the terminals (see `jaxsolve.tree`) without walking
the history tree level by level:

* reach of player p at leaf z: the product of p's policy over its own sequences on
  the path to z (one gather and a product);
* counterfactual value of (I, a) for player p:
  `sum_{z below Ia} chance(z) * reach_{-p}(z) * u_p(z) * reach_p(z | Ia)`,
  where the last factor is the product of p's policy *after* Ia on the path: a
  reverse cumulative product along the path, then one segment sum over all leaves;
* best response: the same leaf weights summed at each leaf's last own sequence, then
  a max-backup over the player's own infoset tree (its depth, not the game's).

All functions are pure, take the tree as an argument and jit/vmap as they are.

Every sum over terminals goes through `terminal_sum`. For a plain GameTree it does
nothing; `jaxsolve.distributed` runs these same functions inside `shard_map` on a
tree holding one device's slice of the terminals, where each such sum is partial
and `terminal_sum` completes it with one `psum` across the devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsolve import validate
from jaxsolve.errors import ArgumentError
from jaxsolve.tree import GameTree


def _tree(tree: GameTree, where: str) -> GameTree:
    """A GameTree without a batch axis (inside vmap every tree is one game's): a
    sweep's batch passed as it is was read as its first game, and a chance sweep's
    padding index then pointed into the second game's probabilities."""
    return validate.game_tree(tree, f"sequences.{where}")


def _player(tree: GameTree, player: int, where: str) -> int:
    """A player in [0, P), known when tracing (it picks arrays in Python): -1 read the
    last player's arrays and 5 a wrong product, silently."""
    return validate.player(tree, player, f"sequences.{where}", static=True)


def _require(array: jax.Array, shape: tuple, what: str, where: str) -> None:
    """Static shape check (free under jit): these functions index with the tree's
    arrays, so a wrongly shaped input would otherwise give a wrong answer silently or
    fail deep inside JAX."""
    got = tuple(getattr(array, "shape", ()))
    if got != shape:
        raise ArgumentError(f"sequences.{where}: {what} must have shape {list(shape)}, got "
                            f"{list(got)}")


def _flat_size(tree: GameTree) -> tuple:
    return (tree.sizes.num_infosets * tree.sizes.num_actions + 1,)


def _leaves(tree: GameTree) -> int:
    """Z: the leaves this tree holds (one device's share inside `distributed`)."""
    return tree.terminal_sequences.shape[-2]


def terminal_sum(tree: GameTree, partial: jax.Array) -> jax.Array:
    """Completes a sum over terminals that covered only this tree's terminals.

    Identity for a GameTree holding all of them. A tree whose terminals are split
    over mesh axes says so with a `terminal_axis` attribute (the axis name or tuple
    of names; see `jaxsolve.distributed`) and is only ever seen inside a
    `shard_map` over those axes: there the partial sums of all devices are added
    by a `psum`, after which the result is the same on every device.
    """
    axis = getattr(tree, "terminal_axis", None)
    return partial if axis is None else jax.lax.psum(partial, axis)


def flatten(tree: GameTree, policy: jax.Array) -> jax.Array:
    """[I, A] policy -> [I*A + 1], the probability of each (infoset, action) sequence
    with the empty sequence's probability 1 appended (the layout the others take)."""
    _tree(tree, "flatten")
    _require(policy, (tree.sizes.num_infosets, tree.sizes.num_actions), "policy", "flatten")
    return jnp.concatenate([policy.reshape(-1), jnp.ones((1,), policy.dtype)])


def chance_reach(tree: GameTree, dtype=None) -> jax.Array:
    """[Z] probability that chance plays to each leaf."""
    _tree(tree, "chance_reach")
    probs = jnp.asarray(tree.chance_probs, dtype)
    flat = jnp.concatenate([probs.reshape(-1), jnp.ones((1,), probs.dtype)])
    return jnp.prod(flat[tree.terminal_chance], axis=-1)


def player_reach(tree: GameTree, flat_policy: jax.Array) -> jax.Array:
    """[P, Z] each player's own contribution to the probability of each leaf, from the
    [I*A + 1] `flatten`ed policy."""
    _tree(tree, "player_reach")
    _require(flat_policy, _flat_size(tree), "flat_policy (from flatten)", "player_reach")
    return jnp.prod(flat_policy[tree.terminal_sequences], axis=-1)


def others_reach(reach: jax.Array, chance: jax.Array, player: int) -> jax.Array:
    """[Z] chance times every player's reach except `player` (no division: exact zeros),
    from `reach` [P, Z]."""
    count = reach.shape[0]
    if validate.traced(player) or not validate.is_int(player) or not 0 <= player < count:
        raise ArgumentError(f"sequences.others_reach: player must be a Python int in "
                            f"0..{count - 1} (reach has {count} players), got {player!r}")
    out = chance
    for q in range(reach.shape[0]):
        if q != player:
            out = out * reach[q]
    return out


def leaf_weights(tree: GameTree, reach: jax.Array, chance: jax.Array, player: int) -> jax.Array:
    """[Z] chance * reach_{-p} * u_p: what each leaf contributes to p's values, from
    `reach` [P, Z] (`player_reach`) and `chance` [Z] (`chance_reach`)."""
    _tree(tree, "leaf_weights")
    player = _player(tree, player, "leaf_weights")
    _require(reach, (tree.sizes.num_players, _leaves(tree)), "reach (from player_reach)",
             "leaf_weights")
    _require(chance, (_leaves(tree),), "chance (from chance_reach)", "leaf_weights")
    u = jnp.asarray(tree.utilities, chance.dtype)
    return others_reach(reach, chance, player) * u[:, player]


def counterfactual_values(tree: GameTree, flat_policy: jax.Array, weights: jax.Array,
                          player: int) -> jax.Array:
    """[I, A] counterfactual value of every (infoset, action) of `player`.

    Args:
      flat_policy: [I*A + 1] from `flatten`.
      weights: [Z] from `leaf_weights` for the same player.
    Returns zeros at other players' infosets and at illegal actions.
    """
    _tree(tree, "counterfactual_values")
    player = _player(tree, player, "counterfactual_values")
    _require(flat_policy, _flat_size(tree), "flat_policy (from flatten)",
             "counterfactual_values")
    _require(weights, (_leaves(tree),), "weights (from leaf_weights)", "counterfactual_values")
    seqs = tree.terminal_sequences[player]  # [Z, L]
    probs = flat_policy[seqs]  # [Z, L]
    # reach_p(z | Ia) for the entry at position k: product of entries k+1..L-1.
    inclusive = jnp.flip(jnp.cumprod(jnp.flip(probs, -1), axis=-1), -1)
    after = jnp.concatenate([inclusive[:, 1:], jnp.ones_like(inclusive[:, :1])], axis=-1)
    contrib = weights[:, None] * after
    size = tree.sizes.empty_sequence + 1
    values = terminal_sum(tree, jax.ops.segment_sum(contrib.reshape(-1), seqs.reshape(-1),
                                                    num_segments=size))
    return values[:-1].reshape(tree.sizes.num_infosets, tree.sizes.num_actions)


def own_reach(tree: GameTree, flat_policy: jax.Array) -> jax.Array:
    """[I] the acting player's own probability of playing to each infoset, from the
    [I*A + 1] `flatten`ed policy."""
    _tree(tree, "own_reach")
    _require(flat_policy, _flat_size(tree), "flat_policy (from flatten)", "own_reach")
    return jnp.prod(flat_policy[tree.infoset_ancestors], axis=-1)


def best_response(tree: GameTree, weights: jax.Array, player: int):
    """Best response of `player` given leaf weights [Z] chance * reach_{-p} * u_p
    (`leaf_weights`).

    Returns:
      value: scalar, the best-response value (expected utility of `player`).
      q: [I, A] value of each (infoset, action) when playing best below it,
        -inf where illegal; rows of other players are meaningless.
    """
    _tree(tree, "best_response")
    player = _player(tree, player, "best_response")
    _require(weights, (_leaves(tree),), "weights (from leaf_weights)", "best_response")
    sz = tree.sizes
    size = sz.empty_sequence + 1
    g = terminal_sum(tree, jax.ops.segment_sum(weights, tree.terminal_last[player],
                                               num_segments=size))
    mine = tree.infoset_player == player
    neg_inf = jnp.asarray(-jnp.inf, weights.dtype)

    def backup(child_sum):
        q = g[:-1].reshape(sz.num_infosets, sz.num_actions) + child_sum[:-1].reshape(
            sz.num_infosets, sz.num_actions)
        q = jnp.where(tree.legal, q, neg_inf)
        best = jnp.where(mine, q.max(axis=-1), 0.0)
        return q, jax.ops.segment_sum(best, tree.infoset_parent, num_segments=size)

    # After k backups every infoset with at most k own decisions below is exact.
    child_sum = jnp.zeros(size, weights.dtype)
    for _ in range(sz.max_infoset_depth + 1):
        q, child_sum = backup(child_sum)
    return g[-1] + child_sum[-1], q
