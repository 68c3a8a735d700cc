"""The one full-width CFR iteration, for every solver of the CFR family.

`steps(tree, state, n, rule)` runs n iterations of the update a `Rule` describes:
the regret-to-policy rule (regret matching, Hedge, a rule of your own), alternating
or simultaneous updates, the floor of CFR+, DCFR's discounts, PCFR+'s prediction
and the average's weights. `Solver.step`, `run`, `run_until`, every built-in solver,
every `cfr_variant`, the batched (`vmap`) and the sharded paths all call it, so a
rule of your own runs the same code, at the same speed, as the built-ins.

On every tree where each player has perfect recall, whatever made it, the loop
keeps each player's regrets, average and policy in arrays of its own legal
sequences, packed without padding by own depth (`jaxsolve.packing`): a player's
update touches its entries alone, its backup works on contiguous slices, and its
leaf sums are dense adds over rows of slots. The state is unpacked to `[I, A]` only
when the loop ends. Where a player forgets (an imperfect-recall abstraction), or a
traced `GameTree.replace` left the packing unknown, `padded_step` computes the same
update on `[I, A]` rows with the same rules (`jaxsolve.updates`), counterfactual
values from the leaves' own paths.

The conventions are OpenSpiel's (`CFRSolver`, `CFRPlusSolver`, `LCFRSolver`,
`DCFRSolver`): with alternating updates player p's regrets are computed against the
*already updated* policies of the players before p, and p's average-strategy
contribution uses p's own reach.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxsolve import packing
from jaxsolve import sequences as seq
from jaxsolve.base import CFRState
from jaxsolve.errors import ArgumentError
from jaxsolve.tree import GameTree
from jaxsolve.updates import (PaddedRows, Rows, accumulate_regrets, instant_regrets,
                              kahan_add, rescale_average, rescale_factor,
                              weighted_prediction)


class Rule(NamedTuple):
    """What shapes one CFR iteration (`jaxsolve.cfr_variant` documents each knob).

    `alternating`, `floor` and `predictive` shape the program and are Python bools;
    `alpha`, `beta`, `gamma`, `discount_offset` and `prediction_weight` are numbers or
    traced arrays (a `vmap` over them solves many settings in one compiled call).
    `alpha` None: no discount.

    Attributes:
      policy_rule: `(regrets, rows) -> policy`, e.g. `updates.regret_matching`.
      alternating: update one player after the other (True) or all at once.
      floor: clip the accumulated regrets at zero after each update (CFR+).
      predictive: play on the regrets plus the prediction, the last instantaneous
        regret times `prediction_weight` (PCFR+).
      alpha: DCFR's exponent for positive regrets, or None.
      beta: DCFR's exponent for negative regrets (with `alpha`).
      gamma: iteration t weighs t^gamma in the average.
      discount_offset: c in the positive regrets' discount t^alpha / (t^alpha + c)
        (with `alpha`): 1 in DCFR, 1.5 in DCFR+.
      prediction_weight: w in the prediction w * r of the last instantaneous regret r
        (with `predictive`): 1 in PCFR+, 1/3 in SAPCFR+.
      name: the solver's name, for messages.
    """

    policy_rule: Callable[[jax.Array, Rows], jax.Array]
    alternating: bool = True
    floor: bool = False
    predictive: bool = False
    alpha: Any = None
    beta: Any = None
    gamma: Any = 1.0
    discount_offset: Any = 1.0
    prediction_weight: Any = 1.0
    name: str = "solver"


def play(rule: Rule, regrets: jax.Array, rows: Rows) -> jax.Array:
    """`rule.policy_rule(regrets, rows)`, checked (when traced, once) to give a float
    array shaped like `regrets`, and 0 at illegal entries.

    Args:
      rule: the rule.
      regrets: the regrets to play on (plus the prediction where it has one).
      rows: their `Rows`.

    Returns:
      The policy, in `regrets`' dtype.

    Raises:
      ArgumentError: the rule fails on `Rows` or returns something else.
    """
    try:
        policy = rule.policy_rule(regrets, rows)
    except TypeError as e:
        if "Rows" in str(e) or "PackedRows" in str(e) or "PaddedRows" in str(e):
            raise ArgumentError(
                f"{rule.name}: policy_rule(regrets, rows) failed on its rows ({e}); rows is a "
                "jaxsolve.Rows (rows.total, rows.max, rows.uniform), not the legal mask: see "
                "jaxsolve.cfr_variant") from None
        raise
    if getattr(policy, "shape", None) != regrets.shape or not jnp.issubdtype(
            policy.dtype, jnp.floating):
        raise ArgumentError(f"{rule.name}: policy_rule(regrets, rows) must return a float "
                            f"array shaped like regrets {list(regrets.shape)}, got "
                            f"{getattr(policy, 'shape', type(policy).__name__)}"
                            f"{' ' + str(policy.dtype) if hasattr(policy, 'dtype') else ''}")
    return rows.restrict(policy.astype(regrets.dtype))


def steps(tree: GameTree, state: CFRState, num_iterations, rule: Rule) -> CFRState:
    """`num_iterations` CFR iterations of `rule` from `state`, unjitted.

    Args:
      tree: the compiled game, checked (one game; inside `vmap` a batch's slice).
      state: a `CFRState` on `tree`, checked.
      num_iterations: how many; an int or a traced integer.
      rule: the `Rule`.

    Returns:
      The `CFRState` after the iterations, `[I, A]` arrays as `state`'s.
    """
    if not packing.available(tree):
        return jax.lax.fori_loop(0, num_iterations,
                                 lambda _, s: padded_step(tree, s, rule), state)
    players = range(tree.sizes.num_players)
    layouts = [packing.layout(tree, p) for p in players]
    packed = [packing.packed(tree, p) for p in players]
    fixed = _player_arrays(tree, layouts, packed, state.regrets.dtype)
    # Only a predictive rule reads and writes the prediction; the others' stays as it is.
    names = ("regrets", "average", "average_carry") + (
        ("prediction",) if rule.predictive else ())
    split = tuple(tuple(getattr(state, f).reshape(-1)[q.sequences] for q in packed)
                  for f in names)
    carry = (split, state.iteration, state.total_weight, state.weight_scale)
    body = functools.partial(_player_step, layouts=layouts, fixed=fixed,
                             width=tree.sizes.num_actions, rule=rule)
    split, iteration, total, scale = jax.lax.fori_loop(0, num_iterations,
                                                       lambda _, c: body(c), carry)
    joined = {}
    for name, parts in zip(names, split):
        flat = getattr(state, name).reshape(-1)
        for q, part in zip(packed, parts):
            flat = flat.at[q.sequences].set(part)
        joined[name] = flat.reshape(state.regrets.shape)
    return state._replace(**joined, iteration=iteration, total_weight=total,
                          weight_scale=scale)


def _player_arrays(tree: GameTree, layouts: list[packing.Packing],
                   packed: list[packing.Packed], dtype) -> dict:
    """What the loop reads, in each player's packed numbering (`packing.Packed`: the
    player's sequences are its packed entries, the empty sequence S)."""
    chance = seq.chance_reach(tree, dtype)
    payoffs = jnp.asarray(tree.utilities, dtype)
    players = range(len(packed))
    slots = [packing.slots(tree, p) for p in players]

    def in_layout(x, p, fill):  # a [Z] array as player p's leaf sums read it
        if slots[p] is None:
            return x
        return jnp.concatenate([x, jnp.full((1,), fill, x.dtype)])[slots[p].leaves]

    return {
        "ancestors": [q.ancestors for q in packed],
        "parent": [q.parent for q in packed],
        "last": [q.last for q in packed],
        "slots": slots,
        # per player p, its leaves' chance * payoff and each other player's last
        # sequence, laid out as p adds them up (by leaf, or in its slots); the empty
        # slots weigh 0
        "chance_payoff": [in_layout(chance * payoffs[:, p], p, 0) for p in players],
        "others_last": [[None if q == p else in_layout(packed[q].last, p, layouts[q].size)
                         for q in players] for p in players],
        "rows": [packing.PackedRows.make(layout, dtype) for layout in layouts],
        "tree": tree,
    }


def _player_step(carry, *, layouts, fixed, width: int, rule: Rule):
    """One iteration on the players' packed arrays (see `steps`)."""
    arrays, iteration, total_weight, scale = carry
    regrets, average, compensation = (list(x) for x in arrays[:3])
    prediction = list(arrays[3]) if rule.predictive else None
    dtype = regrets[0].dtype
    t = (iteration + 1).astype(dtype)
    weight = jnp.asarray(t**rule.gamma * scale, dtype)
    players = range(len(layouts))
    groups = [[p] for p in players] if rule.alternating else [list(players)]
    policy, own, plan = [None] * len(layouts), [None] * len(layouts), [None] * len(layouts)
    stale = set(players)
    for group in groups:
        for q in sorted(stale):  # the players whose regrets changed since their last policy
            played = regrets[q] + prediction[q] if rule.predictive else regrets[q]
            policy[q] = play(rule, played, fixed["rows"][q])
            own[q], plan[q] = packing.realization_plan(layouts[q], policy[q],
                                                      fixed["ancestors"][q])
        stale = set(group)
        for p in group:
            layout = layouts[p]
            weights = fixed["chance_payoff"][p]
            for q in players:
                if q != p:
                    weights = weights * plan[q][fixed["others_last"][p][q]]
            if fixed["slots"][p] is None:
                sums = jax.ops.segment_sum(weights, fixed["last"][p],
                                           num_segments=layout.size + 1)
            else:
                sums = packing.slot_sums(layout, fixed["slots"][p], weights)
            sums = seq.terminal_sum(fixed["tree"], sums)[:-1]
            values = _own_backup(layout, sums, policy[p], fixed["parent"][p])
            instant = instant_regrets(policy[p], values, fixed["rows"][p], width=width)
            regrets[p] = accumulate_regrets(regrets[p], instant, True, t, floor=rule.floor,
                                            alpha=rule.alpha, beta=rule.beta,
                                            discount_offset=rule.discount_offset)
            if rule.predictive:
                prediction[p] = weighted_prediction(instant, rule.prediction_weight)
            average[p], compensation[p] = kahan_add(
                average[p], compensation[p], weight * layout.spread(own[p]) * policy[p], True)
    total_weight = total_weight + weight
    factor = rescale_factor(total_weight)
    average = [x * factor for x in average]
    compensation = [x * factor for x in compensation]
    arrays = (tuple(regrets), tuple(average), tuple(compensation)) + (
        (tuple(prediction),) if rule.predictive else ())
    return arrays, iteration + 1, total_weight * factor, scale * factor


def _own_backup(layout: packing.Packing, sums: jax.Array, policy: jax.Array,
                parent: jax.Array) -> jax.Array:
    """[S] counterfactual values of one player's packed sequences (`packing.backup`
    with each infoset's policy-weighted value)."""
    def expected(level, depth):
        return layout.row_sum(policy[layout.entries(depth)] * level, depth)

    return packing.backup(layout, sums, parent, expected)[0]


def padded_step(tree: GameTree, state: CFRState, rule: Rule) -> CFRState:
    """One iteration of `rule` on `[I, A]` rows: the formulation for a tree without
    the packing (a player who forgets), with the same update rules as `steps`.

    Args:
      tree: the compiled game, checked.
      state: a `CFRState` on `tree`, checked.
      rule: the `Rule`.

    Returns:
      The `CFRState` after one iteration.
    """
    dtype = state.regrets.dtype
    legal = jnp.asarray(tree.legal)
    rows = PaddedRows(legal)
    owner = jnp.asarray(tree.infoset_player)
    chance = seq.chance_reach(tree, dtype)
    t = (state.iteration + 1).astype(dtype)
    weight = jnp.asarray(t**rule.gamma * state.weight_scale, dtype)

    regrets, average, carry = state.regrets, state.average, state.average_carry
    prediction = state.prediction
    num_players = tree.sizes.num_players
    groups = ([[p] for p in range(num_players)] if rule.alternating
              else [list(range(num_players))])
    for players in groups:
        policy = play(rule, regrets + prediction if rule.predictive else regrets, rows)
        flat = seq.flatten(tree, policy)
        own = seq.own_reach(tree, flat)
        plan = seq.realization_plan(tree, flat)
        for p in players:
            weights = seq.others_weights(tree, flat, plan, chance, p)
            values = seq.counterfactual_values(tree, flat, weights, p)
            mine = (owner == p)[:, None] & legal
            instant = jnp.where(mine, instant_regrets(policy, values), 0.0)
            regrets = accumulate_regrets(regrets, instant, mine, t, floor=rule.floor,
                                         alpha=rule.alpha, beta=rule.beta,
                                         discount_offset=rule.discount_offset)
            if rule.predictive:
                prediction = jnp.where(mine, weighted_prediction(instant, rule.prediction_weight),
                                       prediction)
            average, carry = kahan_add(average, carry, weight * own[:, None] * policy, mine)
    average, carry, total, scale = rescale_average(average, carry, state.total_weight + weight,
                                                   state.weight_scale)
    return CFRState(regrets, average, carry, prediction, state.iteration + 1, total, scale)
