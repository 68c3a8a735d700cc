"""Reach, counterfactual values and best response in sequence form, on a GameTree.

CFR needs, for the updating player p, the counterfactual value of each of p's
sequences (I, a): the payoff of the leaves below it weighted by chance, by the other
players' probability of playing to them and by p's own probability of playing on
from (I, a). In sequence form this takes one pass over the leaves and a backup over
p's own infoset tree, whose size is the number of infosets, not of leaves:

* each player's realization plan `plan[(I, a)] = own_reach(I) * policy(I, a)`: the
  player's own probability of playing sequence (I, a) (`realization_plan`; own
  reach is a product over the infoset's own ancestors, `[I, D]`);
* a player's reach at leaf z is then one gather, `plan[last_q(z)]`, where
  `last_q(z)` is q's last sequence on the way to z (`terminal_last`), and the leaf
  weight of p is `chance(z) * u_p(z) * prod_{q != p} plan[last_q(z)]`;
* the weights of the leaves whose last own sequence is (I, a) are summed into it
  (one segment sum of length Z), and the backup adds to each sequence the value of
  every child infoset J, `sum_b policy(J, b) * value(J, b)`, one pass over `[I, A]`
  for each level of p's infoset tree (`max_infoset_depth` passes);
* best response sums the same leaf weights and backs up the max instead of the
  policy-weighted sum.

That equals the path sums `sum_{z below Ia} w(z) * reach_p(z | Ia)` when the player
has perfect recall (`sizes.perfect_recall`): each infoset then has one parent
sequence. For a player who forgets, reach and counterfactual values are computed
on the terminals' whole own paths (`terminal_sequences` [P, Z, L]) instead: a
gather and product along the path, and a reverse cumulative product for the reach
after (I, a).

All functions are pure, take the tree as an argument and jit/vmap as they are.

Every sum over terminals goes through `terminal_sum`. For a plain GameTree it does
nothing; `jaxsolve.distributed` runs these same functions inside `shard_map` on a
tree holding one device's slice of the terminals, where each such sum is partial
and `terminal_sum` completes it with one `psum` across the devices (the backups over
infosets then run on the completed sums, the same on every device).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsolve import validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.errors import ArgumentError
from jaxsolve.tree import GameTree


def _tree(tree: GameTree, where: str) -> GameTree:
    """A GameTree without a batch axis (inside vmap every tree is one game's): a
    sweep's batch passed as it is was read as its first game, and a chance sweep's
    padding index then pointed into the second game's probabilities."""
    return tree_arguments.game_tree(tree, f"sequences.{where}")


def _player(tree: GameTree, player: int, where: str) -> int:
    """A player in [0, P), known when tracing (it picks arrays in Python): -1 read the
    last player's arrays and 5 a wrong product, silently."""
    return tree_arguments.player(tree, player, f"sequences.{where}", static=True)


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
    return tree.terminal_last.shape[-1]


def row_sum(x: jax.Array, keepdims: bool = False) -> jax.Array:
    """Sums of the rows of `x`, computed column by column for short rows.

    Args:
      x: `[..., I, A]` array.
      keepdims: keep the reduced axis, of size 1.

    Returns:
      `[..., I]` array (`[..., I, 1]` with `keepdims`).
    """
    return _row_reduce(x, jnp.add, jnp.sum, keepdims)


def row_max(x: jax.Array) -> jax.Array:
    """Largest entry of each row of `x`, computed column by column for short rows.

    Args:
      x: `[..., I, A]` array.

    Returns:
      `[..., I]` array.
    """
    return _row_reduce(x, jnp.maximum, jnp.max, False)


def _row_reduce(x, combine, reduce, keepdims):
    # Written as A column operations, not one reduction: XLA:CPU lowers a reduction
    # over a short minor axis to a loop it does not vectorise, 3-10x slower than
    # the column operations for the widths games have (up to a few dozen actions).
    if x.shape[-1] > 64:
        return reduce(x, axis=-1, keepdims=keepdims)
    total = x[..., 0]
    for a in range(1, x.shape[-1]):
        total = combine(total, x[..., a])
    return total[..., None] if keepdims else total


def terminal_sum(tree: GameTree, partial: jax.Array) -> jax.Array:
    """Completes a sum over terminals that covered only this tree's terminals.

    Identity for a GameTree holding all of them. A tree whose terminals are split over
    mesh axes names them in its `terminal_axis` (set by `jaxsolve.distributed`) and is
    only ever seen inside a `shard_map` over those axes: there the partial sums of all
    devices are added by a `psum`, after which the result is the same on every device.

    Args:
      tree: the tree (or one device's slice of it).
      partial: any array: a sum over this tree's terminals.

    Returns:
      The sum over all terminals, shaped like `partial`.
    """
    return jax.lax.psum(partial, tree.terminal_axis) if tree.terminal_axis else partial


def flatten(tree: GameTree, policy: jax.Array) -> jax.Array:
    """The policy in sequence layout: the probability of each (infoset, action) sequence,
    with the empty sequence's probability 1 appended (the layout the others take).

    Args:
      tree: the compiled game (one game, no batch axis).
      policy: `[I, A]` action probabilities.

    Returns:
      `[I*A + 1]` array; entry `i * A + a` is `policy[i, a]`.

    Raises:
      ArgumentError: `tree` is not one game's GameTree, or `policy` is not `[I, A]`.
    """
    _tree(tree, "flatten")
    _require(policy, (tree.sizes.num_infosets, tree.sizes.num_actions), "policy", "flatten")
    return jnp.concatenate([policy.reshape(-1), jnp.ones((1,), policy.dtype)])


def chance_reach(tree: GameTree, dtype: jax.typing.DTypeLike | None = None) -> jax.Array:
    """The probability that chance plays to each leaf.

    Args:
      tree: the compiled game (one game, no batch axis).
      dtype: float dtype of the result; that of `tree.chance_probs` if None.

    Returns:
      `[Z]` array.

    Raises:
      ArgumentError: `tree` is not one game's GameTree.
    """
    _tree(tree, "chance_reach")
    probs = jnp.asarray(tree.chance_probs, dtype)
    flat = jnp.concatenate([probs.reshape(-1), jnp.ones((1,), probs.dtype)])
    return jnp.prod(flat[tree.terminal_chance], axis=-1)


def player_reach(tree: GameTree, flat_policy: jax.Array) -> jax.Array:
    """Each player's own contribution to the probability of each leaf.

    Args:
      tree: the compiled game (one game, no batch axis).
      flat_policy: `[I*A + 1]` the policy from `flatten`.

    Returns:
      `[P, Z]` array.

    Raises:
      ArgumentError: `tree` is not one game's GameTree, or `flat_policy` is not `[I*A + 1]`.
    """
    _tree(tree, "player_reach")
    _require(flat_policy, _flat_size(tree), "flat_policy (from flatten)", "player_reach")
    plan = realization_plan(tree, flat_policy)
    return jnp.stack([leaf_reach(tree, flat_policy, plan, q)
                      for q in range(tree.sizes.num_players)])


def realization_plan(tree: GameTree, flat_policy: jax.Array) -> jax.Array:
    """Every player's realization plan: the probability that the acting player plays its
    own way to infoset I and then a, `own_reach(I) * policy(I, a)`.

    Args:
      tree: the compiled game (one game, no batch axis).
      flat_policy: `[I*A + 1]` the policy from `flatten`.

    Returns:
      `[I*A + 1]` array in the layout of `flatten` (the empty sequence's 1 last).

    Raises:
      ArgumentError: `tree` is not one game's GameTree, or `flat_policy` is not `[I*A + 1]`.
    """
    _tree(tree, "realization_plan")
    _require(flat_policy, _flat_size(tree), "flat_policy (from flatten)", "realization_plan")
    sz = tree.sizes
    policy = flat_policy[:-1].reshape(sz.num_infosets, sz.num_actions)
    plan = own_reach(tree, flat_policy)[:, None] * policy
    return jnp.concatenate([plan.reshape(-1), flat_policy[-1:]])


def leaf_reach(tree: GameTree, flat_policy: jax.Array, plan: jax.Array,
               player: int) -> jax.Array:
    """`player`'s own probability of playing to each leaf.

    Its realization plan at the leaf's last own sequence (one gather), or for a player
    without perfect recall the product of its policy along the whole path (whose
    infosets need not have one parent sequence each). Unchecked: a kernel for
    `player_reach` and `others_weights`.

    Args:
      tree: the compiled game (one game, no batch axis).
      flat_policy: `[I*A + 1]` the policy from `flatten`.
      plan: `[I*A + 1]` `realization_plan(tree, flat_policy)`.
      player: the player, a Python int in `[0, P)`.

    Returns:
      `[Z]` array.
    """
    if tree.sizes.perfect_recall[player]:
        return plan[tree.terminal_last[player]]
    return jnp.prod(flat_policy[tree.terminal_sequences[player]], axis=-1)


def others_reach(reach: jax.Array, chance: jax.Array, player: int) -> jax.Array:
    """Chance times every player's reach except `player` (no division: exact zeros).

    Args:
      reach: `[P, Z]` from `player_reach`.
      chance: `[Z]` from `chance_reach`.
      player: the player left out, a Python int in `[0, P)`.

    Returns:
      `[Z]` array.

    Raises:
      ArgumentTypeError: `player` is not a Python int (a traced one included).
      ArgumentError: `player` is not in `[0, P)`.
    """
    count = reach.shape[0]
    player = validate.static("sequences.others_reach", "player", player, validate.integer_rule(
        0, count - 1, note=f"a Python int: reach has {count} players"))
    out = chance
    for q in range(reach.shape[0]):
        if q != player:
            out = out * reach[q]
    return out


def leaf_weights(tree: GameTree, reach: jax.Array, chance: jax.Array, player: int) -> jax.Array:
    """What each leaf contributes to `player`'s values: `chance * reach_-p * u_p`.

    Args:
      tree: the compiled game (one game, no batch axis).
      reach: `[P, Z]` from `player_reach`.
      chance: `[Z]` from `chance_reach`.
      player: the player, a Python int in `[0, P)`.

    Returns:
      `[Z]` array.

    Raises:
      ArgumentError: `tree` is not one game's GameTree, `player` is out of range, or an array is misshapen.
    """
    _tree(tree, "leaf_weights")
    player = _player(tree, player, "leaf_weights")
    _require(reach, (tree.sizes.num_players, _leaves(tree)), "reach (from player_reach)",
             "leaf_weights")
    _require(chance, (_leaves(tree),), "chance (from chance_reach)", "leaf_weights")
    u = jnp.asarray(tree.utilities, chance.dtype)
    return others_reach(reach, chance, player) * u[:, player]


def others_weights(tree: GameTree, flat_policy: jax.Array, plan: jax.Array,
                   chance: jax.Array, player: int) -> jax.Array:
    """`leaf_weights` computed from the realization plan: one gather per other player
    instead of every player's reach.

    Args:
      tree: the compiled game (one game, no batch axis).
      flat_policy: `[I*A + 1]` the policy from `flatten`.
      plan: `[I*A + 1]` `realization_plan(tree, flat_policy)`.
      chance: `[Z]` from `chance_reach`.
      player: the player, a Python int in `[0, P)`.

    Returns:
      `[Z]` array.

    Raises:
      ArgumentError: `tree` is not one game's GameTree, `player` is out of range, or an array is misshapen.
    """
    _tree(tree, "others_weights")
    player = _player(tree, player, "others_weights")
    _require(plan, _flat_size(tree), "plan (from realization_plan)", "others_weights")
    _require(chance, (_leaves(tree),), "chance (from chance_reach)", "others_weights")
    out = chance * jnp.asarray(tree.utilities, chance.dtype)[:, player]
    for q in range(tree.sizes.num_players):
        if q != player:
            out = out * leaf_reach(tree, flat_policy, plan, q)
    return out


def counterfactual_values(tree: GameTree, flat_policy: jax.Array, weights: jax.Array,
                          player: int) -> jax.Array:
    """The counterfactual value of every (infoset, action) of `player`.

    Args:
      tree: the compiled game (one game, no batch axis).
      flat_policy: `[I*A + 1]` the policy from `flatten`.
      weights: `[Z]` from `leaf_weights` (or `others_weights`) for the same player.
      player: the player, a Python int in `[0, P)`.

    Returns:
      `[I, A]` array; zeros at other players' infosets and at illegal actions.

    Raises:
      ArgumentError: `tree` is not one game's GameTree, `player` is out of range, or an array is misshapen.
    """
    _tree(tree, "counterfactual_values")
    player = _player(tree, player, "counterfactual_values")
    _require(flat_policy, _flat_size(tree), "flat_policy (from flatten)",
             "counterfactual_values")
    _require(weights, (_leaves(tree),), "weights (from leaf_weights)", "counterfactual_values")
    q = jnp.zeros((tree.sizes.num_infosets, tree.sizes.num_actions), weights.dtype)
    for rows, values in value_blocks(tree, flat_policy, weights, player):
        q = q.at[rows].set(values)
    return q


def value_blocks(tree: GameTree, flat_policy: jax.Array, weights: jax.Array,
                 player: int) -> list[tuple[slice, jax.Array]]:
    """`counterfactual_values` in pieces, for updates that touch only `player`'s rows.

    With `layout.infoset_blocks` (and perfect recall) one piece per own depth, together
    exactly `player`'s infosets; otherwise one piece of all infosets, 0 at other
    players' rows.

    Args:
      tree: the compiled game (one game, no batch axis).
      flat_policy: `[I*A + 1]` the policy from `flatten`.
      weights: `[Z]` from `leaf_weights` for the same player.
      player: the player, a Python int in `[0, P)`.

    Returns:
      A list of (rows, q): `rows` a slice of infoset ids, `q` `[n, A]` the
        counterfactual values of those infosets, 0 at illegal actions.

    Raises:
      ArgumentError: `tree` is not one game's GameTree, `player` is out of range, or an array is misshapen.
    """
    _tree(tree, "value_blocks")
    player = _player(tree, player, "value_blocks")
    _require(flat_policy, _flat_size(tree), "flat_policy (from flatten)", "value_blocks")
    _require(weights, (_leaves(tree),), "weights (from leaf_weights)", "value_blocks")
    if not tree.sizes.perfect_recall[player]:
        return [(slice(None), _path_counterfactual_values(tree, flat_policy, weights, player))]
    sz = tree.sizes
    leaf_sum = terminal_sum(tree, jax.ops.segment_sum(weights, tree.terminal_last[player],
                                                      num_segments=sz.empty_sequence + 1))
    policy = flat_policy[:-1].reshape(sz.num_infosets, sz.num_actions)

    def expected(q, rows):  # the value of playing the policy at these infosets
        return row_sum(policy[rows] * q)

    return _backup(tree, leaf_sum, player, expected, fill=0.0)[0]


def _backup(tree: GameTree, leaf_sum: jax.Array, player: int, combine, fill):
    """Values of `player`'s sequences from the leaf sums at their last sequences.

    The value of (I, a) is `leaf_sum[(I, a)]` plus, for every own infoset J whose
    parent sequence is (I, a), `combine(q_J, rows)`: q_J [n, A] the values of J's
    sequences for the infosets `rows` (a slice of ids), reduced to [n] (the
    policy-weighted sum for counterfactual values, the max over legal actions for a
    best response). Returns [(rows, q)] as `value_blocks` does (`fill` at illegal
    actions and at other players' rows) and the value of the empty sequence (the
    leaves before any own decision plus every root infoset's combined value).

    With `layout.infoset_blocks` the player's infosets at each own depth are one slice,
    so the backup runs once per depth, deepest first, on that slice alone; otherwise
    it passes over all infosets `max_infoset_depth + 1` times (after k passes every
    sequence with at most k own infosets in a chain below it is exact)."""
    sz = tree.sizes
    shape = (sz.num_infosets, sz.num_actions)
    size = sz.empty_sequence + 1
    legal = tree.legal
    fill = jnp.asarray(fill, leaf_sum.dtype)
    sums = leaf_sum[:-1].reshape(shape)
    blocks = tree.layout.infoset_blocks
    blocks = blocks[player] if blocks is not None else None
    if blocks is None:
        mine = tree.infoset_player == player
        child = jnp.zeros(size, leaf_sum.dtype)
        for _ in range(sz.max_infoset_depth + 1):
            q = jnp.where(legal, sums + child[:-1].reshape(shape), fill)
            below = jnp.where(mine, combine(q, slice(None)), 0.0)
            child = jax.ops.segment_sum(below, tree.infoset_parent, num_segments=size)
        return [(slice(None), jnp.where(mine[:, None], q, fill))], leaf_sum[-1] + child[-1]
    pieces, child, root = [], None, leaf_sum[-1]
    for depth in reversed(range(len(blocks))):
        start, stop = blocks[depth]
        rows = slice(start, stop)
        level = sums[rows] if child is None else sums[rows] + child
        level = jnp.where(legal[rows], level, fill)
        pieces.append((rows, level))
        below = combine(level, rows)
        if depth:
            parent_start, parent_stop = blocks[depth - 1]
            local = tree.infoset_parent[rows] - parent_start * sz.num_actions
            child = jax.ops.segment_sum(
                below, local, num_segments=(parent_stop - parent_start) * sz.num_actions
            ).reshape(parent_stop - parent_start, sz.num_actions)
        else:
            root = root + below.sum()
    return pieces[::-1], root


def _path_counterfactual_values(tree: GameTree, flat_policy: jax.Array, weights: jax.Array,
                                player: int) -> jax.Array:
    """`counterfactual_values` on the whole own paths, for a player who forgets."""
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
    """The acting player's own probability of playing to each infoset.

    Args:
      tree: the compiled game (one game, no batch axis).
      flat_policy: `[I*A + 1]` the policy from `flatten`.

    Returns:
      `[I]` array.

    Raises:
      ArgumentError: `tree` is not one game's GameTree, or `flat_policy` is not `[I*A + 1]`.
    """
    _tree(tree, "own_reach")
    _require(flat_policy, _flat_size(tree), "flat_policy (from flatten)", "own_reach")
    return jnp.prod(flat_policy[tree.infoset_ancestors], axis=-1)


def best_response(tree: GameTree, weights: jax.Array, player: int) -> tuple[jax.Array, jax.Array]:
    """Best response of `player` given its leaf weights.

    Args:
      tree: the compiled game (one game, no batch axis).
      weights: `[Z]` `chance * reach_-p * u_p`, from `leaf_weights`.
      player: the player, a Python int in `[0, P)`.

    Returns:
      (value, q): `[]` the best-response value (expected utility of `player`), and
        `[I, A]` the value of each (infoset, action) when playing best below it, -inf
        where illegal; rows of other players are meaningless.

    Raises:
      ArgumentError: `tree` is not one game's GameTree, `player` is out of range, or `weights` is not `[Z]`.
    """
    _tree(tree, "best_response")
    player = _player(tree, player, "best_response")
    _require(weights, (_leaves(tree),), "weights (from leaf_weights)", "best_response")
    sz = tree.sizes
    leaf_sum = terminal_sum(tree, jax.ops.segment_sum(weights, tree.terminal_last[player],
                                                      num_segments=sz.empty_sequence + 1))

    def best(q, rows):  # the value of the best action at these infosets
        return row_max(q)

    pieces, value = _backup(tree, leaf_sum, player, best, fill=-jnp.inf)
    q = jnp.full((sz.num_infosets, sz.num_actions), -jnp.inf, weights.dtype)
    for rows, values in pieces:
        q = q.at[rows].set(values)
    return value, q
