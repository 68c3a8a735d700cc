"""One iteration of a sampling solver: `init` (the state, its scheme's masks and
frontier) and `step` (each player traverses in turn). The sparse step touches only the
rows its frontier walks visit; the dense step, computed full width from `estimate`,
serves the counts traversal and discounting and is the reference the sparse one is
tested against."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import base
from jaxsolve import validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.base import MCCFRState
from jaxsolve.errors import ArgumentError, ArgumentTypeError
from jaxsolve.sampling._estimate import choose_traversal, estimate
from jaxsolve.sampling._rows import _chance_rows, _expand_chance_row, _explore, _pad_rows
from jaxsolve.sampling._scheme import _host
from jaxsolve.sampling._walk import _uniforms, walk
from jaxsolve.tree import GameTree
from jaxsolve.updates import accumulate_regrets, kahan_add, regret_matching, rescale_average


def _init(tree: GameTree, key=None, *, scheme: Callable, exploration: float,
          solver_name: str = "sampled-cfr") -> MCCFRState:
    where = f"{solver_name}.init"
    # The scheme reads the tree's history arrays, of one game only.
    tree_arguments.game_tree(tree, where, histories=True)
    key = jax.random.PRNGKey(0) if key is None else validate.prng_key(key, where)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):  # a typed key: the state holds its words
        # as a raw threefry key ([2] uint32, what jax.random takes untyped); another
        # implementation's words (rbg's are [4]) would be read as threefry's and fail.
        impl = str(jax.random.key_impl(key))
        if impl != "threefry2x32":
            validate.fail(where, f"key must be a threefry key (jax.random.key(0) or "
                                 f"jax.random.PRNGKey(0)), got one of impl={impl!r}",
                          ArgumentTypeError)
        key = jax.random.key_data(key)
    expand, expand_c, cap = scheme(tree)
    owner = _host(tree, "infoset_player")
    sampled_own = ~expand[owner, np.arange(len(owner))]
    if exploration <= 0 and sampled_own.any():
        i = int(np.nonzero(sampled_own)[0][0])
        raise ArgumentError(f"the scheme samples the traverser's own actions (e.g. at infoset "
                        f"{tree.names.infosets[i]!r}) but exploration=0: actions the policy "
                        "never plays would never be tried; pass exploration > 0")
    shape = (tree.sizes.num_infosets, tree.sizes.num_actions)
    dtype = base.float_dtype()
    # One buffer per field (a donated state may not hold one buffer twice).
    return MCCFRState(*(jnp.zeros(shape, dtype) for _ in range(4)), jnp.zeros((), jnp.int32),
                      jnp.zeros((), dtype), jnp.ones((), dtype), jnp.asarray(key, jnp.uint32),
                      jnp.zeros((2,), dtype), jnp.asarray(expand), jnp.asarray(expand_c),
                      jnp.zeros((cap,), jnp.int32))


def _dense_step(tree: GameTree, state: MCCFRState, *, batch_size: int, exploration: float,
                averaging: str, floor: bool, alpha, beta, gamma: float,
                traversal: str = "frontier", split: str = "systematic",
                solver_name: str = "sampled-cfr") -> MCCFRState:
    """The step computed full width from `estimate` ([I, A] arrays per player): the
    step of the "counts" traversal, and the reference the frontier's sparse `_step`
    is tested against."""
    _check_step(tree, state, solver_name)
    averaging = _averaging_here(averaging, tree)
    dtype = state.regrets.dtype
    legal = jnp.asarray(tree.legal)
    owner = jnp.asarray(tree.infoset_player)
    t = (state.iteration + 1).astype(dtype)
    weight = t**gamma * state.weight_scale
    key, step_key = jax.random.split(state.key)
    regrets, average, carry, touched = state.regrets, state.average, state.average_carry, state.touched
    for p in range(tree.sizes.num_players):  # alternating: p sees the updates before it
        policy = regret_matching(regrets, legal)
        est = estimate(tree, policy, p, jax.random.fold_in(step_key, p), expand=state.expand,
                       expand_chance=state.expand_chance, capacity_=state.frontier.shape[0],
                       batch_size=batch_size, exploration=exploration, traversal=traversal,
                       split=split)
        mine = (owner == p)[:, None] & legal
        instant = jnp.where(mine, est.values - (policy * est.values).sum(-1, keepdims=True), 0.0)
        regrets = accumulate_regrets(regrets, instant, mine, t, floor=floor, alpha=alpha,
                                     beta=beta)
        averaged = (owner == p) if averaging == "traverser" else (owner != p)
        average, carry = kahan_add(average, carry, weight * est.reach_weights[:, None] * policy,
                                   averaged[:, None] & legal)
        touched = _count(touched, est.touched)
    average, carry, total, scale = rescale_average(average, carry, state.total_weight + weight,
                                                   state.weight_scale)
    return state._replace(regrets=regrets, average=average, average_carry=carry,
                          iteration=state.iteration + 1, total_weight=total,
                          weight_scale=scale, key=key, touched=touched)


def _sequence_probs(tree: GameTree, regrets, sequences):
    """Regret-matching probabilities of `sequences` (any shape; the empty sequence
    gives 1), computed from the rows they touch only.

    Returns (probs [...], rows [..., A] the policy rows, infosets [...], valid [...]).
    """
    A = tree.sizes.num_actions
    valid = sequences < tree.sizes.empty_sequence
    infosets = jnp.where(valid, sequences // A, 0)
    rows = regret_matching(regrets[infosets], jnp.asarray(tree.legal)[infosets])
    probs = jnp.take_along_axis(rows, (sequences % A)[..., None], axis=-1)[..., 0]
    return jnp.where(valid, probs, 1.0), rows, infosets, valid


def _traverse(tree: GameTree, regrets, average, carry, traverser: int, uniforms, weight, *,
              expand, expand_chance, capacity_: int, exploration: float, averaging: str,
              floor: bool):
    """One player's sampled update, touching only the rows the samples visit.

    Per step this costs O(B K D A) for B samples of frontier K over D levels, not
    O(I A): policies are regret-matched row by row where needed, regrets are
    scatter-added and the average's increments are added to the rows they touch with
    the same compensation as `_dense_step`'s (`_compensated_rows_add`). It equals
    `_dense_step`'s update (tested). Returns (regrets, average, carry, touched).
    """
    dtype = regrets.dtype
    B = uniforms.shape[0]
    legal = jnp.asarray(tree.legal)
    index = jnp.asarray(tree.node_index)
    player = jnp.asarray(tree.node_player)
    A, I = tree.sizes.num_actions, tree.sizes.num_infosets

    def rows(i):
        policy = regret_matching(regrets[i], legal[i])
        return _explore(tree, policy, i, traverser, exploration), _pad_rows(tree, policy)

    inner, inner_q, inner_reach, leaves, leaf_q, leaf_reach = walk(
        tree, rows, _chance_rows(tree, dtype), expand[traverser],
        _expand_chance_row(expand_chance, traverser), capacity_, uniforms)

    # Average strategy first: it uses the policy before this player's update.
    nodes = inner.reshape(-1)
    who = player[jnp.maximum(nodes, 0)]
    mine = who == traverser if averaging == "traverser" else who != traverser
    counted = (nodes >= 0) & (who >= 0) & mine
    infoset = jnp.where(counted, index[jnp.maximum(nodes, 0)], I)  # I: dropped
    own = inner_reach.reshape(-1)
    policy = regret_matching(regrets[jnp.minimum(infoset, I - 1)], legal[jnp.minimum(infoset, I - 1)])
    scale = jnp.where(counted, weight * own / (inner_q.reshape(-1) * B), 0.0)
    average, carry = _compensated_rows_add(average, carry, infoset,
                                           scale[:, None] * policy, legal)

    # Regrets: each sampled leaf z adds, at every own sequence (I, a) on its path,
    # c = u_p pi_{-p} pi_c pi_p(z | Ia) / (q B) to v(I, a); the regret row of I gets
    # c at a minus c * sigma(I, a) at every legal action (the policy's value).
    reached = leaves.reshape(-1) >= 0
    z = jnp.where(reached, index[jnp.maximum(leaves.reshape(-1), 0)], 0)
    leaf_reach = leaf_reach.reshape(-1, tree.sizes.num_players + 1)
    others = jnp.prod(jnp.where(jnp.arange(tree.sizes.num_players + 1) == traverser, 1.0,
                                leaf_reach), axis=-1)
    u = jnp.asarray(tree.utilities, dtype)[z, traverser]
    weight_z = jnp.where(reached, u * others / (leaf_q.reshape(-1) * B), 0.0)
    seqs = jnp.asarray(tree.terminal_sequences)[traverser, z]  # [n, L]
    mine_probs, path_rows, at, valid = _sequence_probs(tree, regrets, seqs)

    inclusive = jnp.flip(jnp.cumprod(jnp.flip(mine_probs, -1), axis=-1), -1)
    after = jnp.concatenate([inclusive[:, 1:], jnp.ones_like(inclusive[:, :1])], axis=-1)
    c = jnp.where(valid, weight_z[:, None] * after, 0.0)  # [n, L]
    taken = jax.nn.one_hot(seqs % A, A, dtype=dtype)
    played = jnp.take_along_axis(path_rows, (seqs % A)[..., None], -1)
    delta = c[..., None] * (taken - played * legal[at])  # [n, L, A]
    at = jnp.where(valid, at, I)  # padding: an out-of-range row, dropped
    regrets = regrets.at[at].add(delta, mode="drop")
    if floor:  # CFR+ floors the rows just updated (the others are already >= 0)
        floored = jnp.maximum(regrets[jnp.minimum(at, I - 1)], 0.0)
        regrets = regrets.at[at].set(floored, mode="drop")
    touched = ((nodes >= 0).sum() + reached.sum()).astype(dtype)
    return regrets, average, carry, touched


def _compensated_rows_add(average, carry, rows, increments, legal):
    """`kahan_add` of increments [n, A] to the rows `rows` [n] (I: dropped) of
    average and carry [I, A], touching only those rows: the increments of one row are
    summed first (over the rows made unique by a sort of the n row ids), so each
    touched row takes one compensated addition, as `_dense_step` adds each row's sum
    once. Returns the new (average, carry)."""
    num_rows = average.shape[0]
    unique, inverse = jnp.unique(rows, size=rows.shape[0], fill_value=num_rows,
                                 return_inverse=True)
    summed = jax.ops.segment_sum(increments, inverse.reshape(-1), num_segments=rows.shape[0])
    kept = jnp.minimum(unique, num_rows - 1)
    total, compensation = kahan_add(average[kept], carry[kept], summed,
                                    (unique < num_rows)[:, None] & legal[kept])
    return (average.at[unique].set(total, mode="drop"),
            carry.at[unique].set(compensation, mode="drop"))


def _check_step(tree: GameTree, state, solver_name: str) -> None:
    """A step needs the MCCFRState of its own init on this tree."""
    where = f"{solver_name}.step"
    tree_arguments.game_tree(tree, where, histories=True)
    base.solver_state(tree, state, where, expected=MCCFRState, solver_name=solver_name)
    if np.shape(state.touched) != (2,):  # checked at trace time: shapes are known
        validate.fail(where, f"state.touched has shape {np.shape(state.touched)}, not (2,): "
                             "a state of a jaxsolve before the compensated count; give it "
                             "state._replace(touched=jnp.stack([state.touched, "
                             "jnp.zeros_like(state.touched)]))")


def _count(touched, seen):
    """touched [2] (total, carry) plus `seen` histories, compensated (`kahan_add`): a
    plain float32 sum stops growing at 2^28 when a step adds ~10^4."""
    total, carry = kahan_add(touched[0], touched[1], seen.astype(touched.dtype), True)
    return jnp.stack([total, carry])


def histories_touched(state: MCCFRState) -> jax.Array:
    """Histories a sampling solver's state has visited so far, over all its steps, samples
    and players (the x-axis of a cost-fair convergence plot).

    Args:
      state: an `MCCFRState`.

    Returns:
      `[]` float array.
    """
    return state.touched[0] - state.touched[1]


def _averaging_here(averaging: str, tree: GameTree) -> str:
    """"opponents" averages nothing in a one-player game (it has no opponents, so the
    average would stay uniform whatever the regrets learn): there the traverser's own
    infosets are averaged instead, which the same estimate covers (`jaxsolve.sampling`)."""
    return "traverser" if averaging == "opponents" and tree.sizes.num_players == 1 else averaging


def _step(tree: GameTree, state: MCCFRState, *, batch_size: int, exploration: float,
          averaging: str, floor: bool, alpha, beta, gamma: float, traversal: str,
          split: str, solver_name: str = "sampled-cfr") -> MCCFRState:
    _check_step(tree, state, solver_name)
    averaging = _averaging_here(averaging, tree)
    K = state.frontier.shape[0]
    if traversal == "auto":
        traversal = choose_traversal(tree, batch_size, K)
    if traversal == "counts" or alpha is not None:  # discounting touches every row anyway
        return _dense_step(tree, state, batch_size=batch_size, exploration=exploration,
                           averaging=averaging, floor=floor, alpha=alpha, beta=beta,
                           gamma=gamma, traversal=traversal, split=split,
                           solver_name=solver_name)
    dtype = state.regrets.dtype
    t = (state.iteration + 1).astype(dtype)
    weight = t**gamma * state.weight_scale
    key, step_key = jax.random.split(state.key)
    regrets, average, carry = state.regrets, state.average, state.average_carry
    touched = state.touched
    for p in range(tree.sizes.num_players):  # alternating: p sees the updates before it
        uniforms = _uniforms(tree, jax.random.fold_in(step_key, p), batch_size, K, dtype)
        regrets, average, carry, seen = _traverse(
            tree, regrets, average, carry, p, uniforms, weight, expand=state.expand,
            expand_chance=state.expand_chance, capacity_=K, exploration=exploration,
            averaging=averaging, floor=floor)
        touched = _count(touched, seen)
    total = state.total_weight + weight
    # Rescaling touches every row, so it runs only on the rare steps that need it.
    average, carry, total, scale = jax.lax.cond(
        total > 2.0**40, lambda: rescale_average(average, carry, total, state.weight_scale),
        lambda: (average, carry, total, state.weight_scale))
    return state._replace(regrets=regrets, average=average, average_carry=carry,
                          iteration=state.iteration + 1, total_weight=total,
                          weight_scale=scale, key=key, touched=touched)
