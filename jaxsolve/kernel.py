"""The one full-width iteration, for every solver of the CFR family and for magnetic
mirror descent.

`steps(tree, state, n, rule)` runs n iterations of the update a `Rule` describes:
the regret-to-policy rule (regret matching, Hedge, a rule of your own), alternating
or simultaneous updates, the floor of CFR+, DCFR's discounts, PCFR+'s prediction
and the average's weights; or, for a rule with `mirror` knobs, the last-iterate
update of magnetic mirror descent, whose state is the current policy and a magnet
and whose feedback is each action's Q-value (its counterfactual value over the
infoset's reach by chance and the other players). Both kinds share the iteration:
the policies' realization plans, the leaf sums and the backup of counterfactual
values; only the update differs. `Solver.step`, `run`, `run_until`, every built-in
solver, every `cfr_variant`, the batched (`vmap`) and the sharded paths all call
it, so a rule of your own runs the same code, at the same speed, as the built-ins.

On every tree where each player has perfect recall, whatever made it, the loop
keeps each player's regrets, average and policy (or policy and magnet) in arrays of
its own legal sequences, packed without padding by own depth (`jaxsolve.packing`): a
player's update touches its entries alone, its backup works on contiguous slices, and
its leaf sums are dense adds over rows of slots. The state is unpacked to `[I, A]`
only when the loop ends. Where a player forgets (an imperfect-recall abstraction), or a
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
from jaxsolve.base import CFRState, MMDState
from jaxsolve.errors import ArgumentError
from jaxsolve.tree import GameTree
from jaxsolve.updates import (PaddedRows, Rows, accumulate_regrets, instant_regrets,
                              kahan_add, magnetic_mirror_descent, rescale_average,
                              rescale_factor, weighted_prediction)


class Mirror(NamedTuple):
    """The knobs of magnetic mirror descent (`jaxsolve.mmd` documents each one).

    `temperature`, `learning_rate` and `magnet_learning_rate` are each a number, a
    traced scalar, or a function of the 1-based iteration t (a `[]` float array)
    returning one, written in jax.numpy: a schedule such as
    `lambda t: 1 / jnp.sqrt(t)`. `floor` is a number or a traced scalar.
    """

    temperature: Any
    learning_rate: Any
    magnet_learning_rate: Any
    floor: Any

    def at(self, t: jax.Array, dtype) -> dict[str, jax.Array]:
        """The knobs at iteration t, as `updates.magnetic_mirror_descent` takes them.

        Args:
          t: `[]` float, the 1-based iteration.
          dtype: the float dtype of the state.

        Returns:
          {knob name: `[]` value in `dtype`}.
        """
        return {name: jnp.asarray(knob(t) if callable(knob) else knob, dtype)
                for name, knob in self._asdict().items()}


class Rule(NamedTuple):
    """What shapes one iteration (`jaxsolve.cfr_variant` documents each knob).

    `alternating`, `floor` and `predictive` shape the program and are Python bools;
    `alpha`, `beta`, `gamma`, `discount_offset` and `prediction_weight` are numbers or
    traced arrays (a `vmap` over them solves many settings in one compiled call).
    `alpha` None: no discount. With `mirror` the rule is magnetic mirror descent
    instead (state `MMDState`): `policy_rule` and the regret knobs are unused.

    Attributes:
      policy_rule: `(regrets, rows) -> policy`, e.g. `updates.regret_matching`; None
        with `mirror`, whose policy is its state.
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
      mirror: the `Mirror` knobs of magnetic mirror descent, or None for the CFR
        family.
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
    mirror: Mirror | None = None


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


def _fields(rule: Rule) -> tuple[str, ...]:
    """The `[I, A]` fields of the state that `rule`'s iterations read and write."""
    if rule.mirror is not None:
        return ("policy", "magnet")
    return ("regrets", "average", "average_carry") + (("prediction",) if rule.predictive
                                                      else ())


def _played(rule: Rule, fields: dict, rows: Rows, player: int | None = None) -> jax.Array:
    """The policy an iteration plays from the state's `fields` (each a list of packed
    arrays by player when `player` is given, else `[I, A]` arrays): a mirror rule's
    state, or the rule on the regrets (plus the prediction)."""
    def field(name):
        return fields[name] if player is None else fields[name][player]

    if rule.mirror is not None:
        return field("policy")
    regrets = field("regrets")
    return play(rule, regrets + field("prediction") if rule.predictive else regrets, rows)


def steps(tree: GameTree, state: CFRState | MMDState, num_iterations,
          rule: Rule) -> CFRState | MMDState:
    """`num_iterations` iterations of `rule` from `state`, unjitted.

    Args:
      tree: the compiled game, checked (one game; inside `vmap` a batch's slice).
      state: a `CFRState` on `tree` (an `MMDState` for a mirror rule), checked.
      num_iterations: how many; an int or a traced integer.
      rule: the `Rule`.

    Returns:
      The state after the iterations, `[I, A]` arrays as `state`'s.
    """
    if not packing.available(tree):
        return jax.lax.fori_loop(0, num_iterations,
                                 lambda _, s: padded_step(tree, s, rule), state)
    players = range(tree.sizes.num_players)
    layouts = [packing.layout(tree, p) for p in players]
    packed = [packing.packed(tree, p) for p in players]
    # Only a predictive rule reads and writes the prediction; the others' stays as it is.
    names = _fields(rule)
    dtype = getattr(state, names[0]).dtype
    fixed = _player_arrays(tree, layouts, packed, dtype, rule)
    split = {f: tuple(getattr(state, f).reshape(-1)[q.sequences] for q in packed)
             for f in names}
    # The average's weights: the CFR family's only.
    weights = () if rule.mirror is not None else (state.total_weight, state.weight_scale)
    carry = (split, state.iteration, weights)
    body = functools.partial(_player_step, layouts=layouts, fixed=fixed,
                             width=tree.sizes.num_actions, rule=rule)
    split, iteration, weights = jax.lax.fori_loop(0, num_iterations,
                                                  lambda _, c: body(c), carry)
    joined = {}
    for name, parts in split.items():
        flat = getattr(state, name).reshape(-1)
        for q, part in zip(packed, parts):
            flat = flat.at[q.sequences].set(part)
        joined[name] = flat.reshape(getattr(state, name).shape)
    return state._replace(**joined, iteration=iteration,
                          **dict(zip(("total_weight", "weight_scale"), weights)))


def _player_arrays(tree: GameTree, layouts: list[packing.Packing],
                   packed: list[packing.Packed], dtype, rule: Rule) -> dict:
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
        # a mirror rule's reach of each infoset: the same sums with payoff 1
        "chance": ([in_layout(chance, p, 0) for p in players] if rule.mirror is not None
                   else None),
        "others_last": [[None if q == p else in_layout(packed[q].last, p, layouts[q].size)
                         for q in players] for p in players],
        "rows": [packing.PackedRows.make(layout, dtype) for layout in layouts],
        "tree": tree,
    }


def _player_step(carry, *, layouts, fixed, width: int, rule: Rule):
    """One iteration on the players' packed arrays (see `steps`)."""
    fields, iteration, weights = carry
    fields = {name: list(parts) for name, parts in fields.items()}
    dtype = fields[_fields(rule)[0]][0].dtype
    t = (iteration + 1).astype(dtype)
    players = range(len(layouts))
    groups = [[p] for p in players] if rule.alternating else [list(players)]
    policy, own, plan = [None] * len(layouts), [None] * len(layouts), [None] * len(layouts)
    if rule.mirror is None:
        total_weight, scale = weights
        weight = jnp.asarray(t**rule.gamma * scale, dtype)
    else:
        knobs = rule.mirror.at(t, dtype)
    stale = set(players)
    for group in groups:
        for q in sorted(stale):  # the players whose policies changed since their last plan
            policy[q] = _played(rule, fields, fixed["rows"][q], q)
            own[q], plan[q] = packing.realization_plan(layouts[q], policy[q],
                                                      fixed["ancestors"][q])
        stale = set(group)
        for p in group:
            rows = fixed["rows"][p]

            def values(leaf_weights):  # p's counterfactual values of these leaf weights
                for q in players:
                    if q != p:
                        leaf_weights = leaf_weights * plan[q][fixed["others_last"][p][q]]
                if fixed["slots"][p] is None:
                    sums = jax.ops.segment_sum(leaf_weights, fixed["last"][p],
                                               num_segments=layouts[p].size + 1)
                else:
                    sums = packing.slot_sums(layouts[p], fixed["slots"][p], leaf_weights)
                sums = seq.terminal_sum(fixed["tree"], sums)[:-1]
                return _own_backup(layouts[p], sums, policy[p], fixed["parent"][p])

            q_values = values(fixed["chance_payoff"][p])
            if rule.mirror is not None:
                # Chance's and the others' reach of each infoset: the counterfactual
                # value of payoff 1, as every row of the policy sums to 1.
                reach = rows.total(policy[p] * values(fixed["chance"][p]))
                fields["policy"][p], fields["magnet"][p] = magnetic_mirror_descent(
                    policy[p], fields["magnet"][p], q_values, reach, rows, **knobs)
                continue
            instant = instant_regrets(policy[p], q_values, rows, width=width)
            fields["regrets"][p] = accumulate_regrets(
                fields["regrets"][p], instant, True, t, floor=rule.floor, alpha=rule.alpha,
                beta=rule.beta, discount_offset=rule.discount_offset)
            if rule.predictive:
                fields["prediction"][p] = weighted_prediction(instant, rule.prediction_weight)
            fields["average"][p], fields["average_carry"][p] = kahan_add(
                fields["average"][p], fields["average_carry"][p],
                weight * layouts[p].spread(own[p]) * policy[p], True)
    if rule.mirror is None:
        total_weight = total_weight + weight
        factor = rescale_factor(total_weight)
        for name in ("average", "average_carry"):
            fields[name] = [x * factor for x in fields[name]]
        weights = (total_weight * factor, scale * factor)
    return {name: tuple(parts) for name, parts in fields.items()}, iteration + 1, weights


def _own_backup(layout: packing.Packing, sums: jax.Array, policy: jax.Array,
                parent: jax.Array) -> jax.Array:
    """[S] counterfactual values of one player's packed sequences (`packing.backup`
    with each infoset's policy-weighted value)."""
    def expected(level, depth):
        return layout.row_sum(policy[layout.entries(depth)] * level, depth)

    return packing.backup(layout, sums, parent, expected)[0]


def padded_step(tree: GameTree, state: CFRState | MMDState,
                rule: Rule) -> CFRState | MMDState:
    """One iteration of `rule` on `[I, A]` rows: the formulation for a tree without
    the packing (a player who forgets), with the same update rules as `steps`.

    Args:
      tree: the compiled game, checked.
      state: a `CFRState` on `tree` (an `MMDState` for a mirror rule), checked.
      rule: the `Rule`.

    Returns:
      The state after one iteration.
    """
    fields = {name: getattr(state, name) for name in _fields(rule)}
    dtype = fields[_fields(rule)[0]].dtype
    legal = jnp.asarray(tree.legal)
    rows = PaddedRows(legal)
    owner = jnp.asarray(tree.infoset_player)
    chance = seq.chance_reach(tree, dtype)
    t = (state.iteration + 1).astype(dtype)
    if rule.mirror is None:
        weight = jnp.asarray(t**rule.gamma * state.weight_scale, dtype)
    else:
        knobs = rule.mirror.at(t, dtype)
    num_players = tree.sizes.num_players
    groups = ([[p] for p in range(num_players)] if rule.alternating
              else [list(range(num_players))])
    for players in groups:
        policy = _played(rule, fields, rows)
        flat = seq.flatten(tree, policy)
        own = seq.own_reach(tree, flat)
        plan = seq.realization_plan(tree, flat)
        for p in players:
            weights = seq.others_weights(tree, flat, plan, chance, p)
            values = seq.counterfactual_values(tree, flat, weights, p)
            mine = (owner == p)[:, None] & legal
            if rule.mirror is not None:
                reach_weights = chance
                for q in range(num_players):
                    if q != p:
                        reach_weights = reach_weights * seq.leaf_reach(tree, flat, plan, q)
                reach = rows.total(
                    policy * seq.counterfactual_values(tree, flat, reach_weights, p))
                stepped = magnetic_mirror_descent(policy, fields["magnet"], values, reach,
                                                  rows, **knobs)
                for name, new in zip(("policy", "magnet"), stepped):
                    fields[name] = jnp.where(mine, new, fields[name])
                continue
            instant = jnp.where(mine, instant_regrets(policy, values), 0.0)
            fields["regrets"] = accumulate_regrets(
                fields["regrets"], instant, mine, t, floor=rule.floor, alpha=rule.alpha,
                beta=rule.beta, discount_offset=rule.discount_offset)
            if rule.predictive:
                fields["prediction"] = jnp.where(
                    mine, weighted_prediction(instant, rule.prediction_weight),
                    fields["prediction"])
            fields["average"], fields["average_carry"] = kahan_add(
                fields["average"], fields["average_carry"], weight * own[:, None] * policy,
                mine)
    if rule.mirror is not None:
        return state._replace(**fields, iteration=state.iteration + 1)
    average, carry, total, scale = rescale_average(
        fields["average"], fields["average_carry"], state.total_weight + weight,
        state.weight_scale)
    return state._replace(**{**fields, "average": average, "average_carry": carry},
                          iteration=state.iteration + 1, total_weight=total,
                          weight_scale=scale)
