"""The search policies: AlphaZero (PUCT, Dirichlet root noise) and Gumbel AlphaZero
(Sequential Halving at the root), each one `search` plus the root's summary.

Shapes as in `RootFnOutput`: B roots, A actions. Each policy splits its key in mctx's
order and draws its root noise as mctx does, so that one key gives both libraries the
same noise, and the same visit counts where the search's are mctx's.

References: Silver et al. (2017/2018) for AlphaZero; Danihelka et al., "Policy
improvement by planning with Gumbel" (ICLR 2022) for Gumbel AlphaZero.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any, Callable, NamedTuple, Optional, Sequence, Union

import jax
import jax.numpy as jnp

from jaxsolve import validate
from jaxsolve.mcts import _checks as checks
from jaxsolve.mcts import _noise as noise
from jaxsolve.mcts._search import search
from jaxsolve.mcts._selection import (
    NodeView, considered_visits_table, gumbel_interior_select, gumbel_root_select,
    gumbel_waves, masked_argmax, masked_logits, puct_select, q_completed_by_mix_value,
    score_considered)
from jaxsolve.mcts._tree import RootFnOutput, node_view


class PolicyOutput(NamedTuple):
    """What a policy returns, as mctx's does.

    Attributes:
      action: `[B]` int32, the move to play.
      action_weights: `[B, A]` the policy target: visit frequencies for PUCT,
        softmax(logits + completed Q) for Gumbel.
      visit_counts: `[B, A]` int32 visit counts at the root.
      qvalues: `[B, A]` the root's q-values, from the root player's side; 0 where
        unvisited.
      value: `[B]` the root's value after the search.
    """

    action: jax.Array
    action_weights: jax.Array
    visit_counts: jax.Array
    qvalues: jax.Array
    value: jax.Array


# What each of the policies' settings must be (a caller's config checks its own fields
# by the same rules). A concrete value out of range is refused by name; a traced one cannot be read
# when the policy is traced and passes unchecked (`validate.unless_traced`).
SETTINGS = {
    "dirichlet_fraction": validate.number_rule(0, 1),
    "dirichlet_alpha": validate.number_rule(above=0),  # alpha <= 0 draws NaN noise
    "pb_c_init": validate.number_rule(0),
    "pb_c_base": validate.number_rule(above=0),  # divides
    "temperature": validate.number_rule(0),  # < 0 favours the least visited actions
    "gumbel_scale": validate.number_rule(0),
    # The depth cap is used in Python (it sizes the walk): it must be concrete too, and
    # `search` refuses an array; below 1 the walk could not leave the root.
    "max_depth": validate.optional_rule(validate.integer_rule(1)),
    "max_num_considered_actions": validate.integer_rule(1),  # static: it sizes a table
}


def _settings(where: str, **values) -> list:
    """The given settings, each checked against its rule in `SETTINGS`, in order."""
    return [validate.unless_traced(where, name, value, SETTINGS[name])
            for name, value in values.items()]


def _wave_sizes(wave_sizes, most: int) -> tuple:
    """`gumbel_policy`'s wave sizes as sorted distinct ints in 1..most: "auto" means
    (most,), a single integer one size."""
    if isinstance(wave_sizes, str) and wave_sizes == "auto":
        return (most,)
    rule = validate.Rule(
        lambda v: validate.as_ints((v,) if isinstance(v, numbers.Integral) else v),
        lambda sizes: all(1 <= m <= most for m in sizes),
        f"must be 'auto', an integer or a sequence of integers in 1..{most} (numbers of "
        f"considered actions)")
    return tuple(sorted(set(validate.static("gumbel_policy", "wave_sizes", wave_sizes, rule))))


def _summary(v: NodeView, action, weights) -> PolicyOutput:
    """The policy output from the root's view `v`."""
    return PolicyOutput(action=action, action_weights=weights,
                        visit_counts=v.visits.T.astype(jnp.int32),
                        qvalues=jnp.where(v.visits > 0, v.qvalues, 0.0).T, value=v.node_value)


def alphazero_policy(params: Any, key: jax.Array, root: RootFnOutput, recurrent_fn: Callable,
                     num_simulations: int, *, dirichlet_fraction: float = 0.25,
                     dirichlet_alpha: float = 0.3, pb_c_init: float = 1.25,
                     pb_c_base: float = 19652.0, temperature: float = 1.0,
                     max_depth: Optional[int] = None) -> PolicyOutput:
    """AlphaZero search: PUCT everywhere, Dirichlet noise mixed into the root prior.

    The action is sampled from visit_counts ** (1 / temperature) (argmax at 0); the
    policy target is the visit distribution; with `num_simulations=0` (no visit) it is
    the root prior, noise included, and the action is drawn from that. A terminal root's
    output (no legal action) is meaningless.

    Args:
      params: the model's parameters, passed to `recurrent_fn` as they are.
      key: PRNG key of the search (noise, sampled actions, `recurrent_fn`'s keys).
      root: the `RootFnOutput` of B roots with A actions.
      recurrent_fn: `(params, key, action [B], embedding) -> (RecurrentFnOutput,
        embedding)`, the model.
      num_simulations: simulations per root, an int >= 0.
      dirichlet_fraction: weight of the Dirichlet noise in the root prior, in [0, 1].
      dirichlet_alpha: the Dirichlet's concentration, > 0.
      pb_c_init: PUCT's exploration constant, >= 0.
      pb_c_base: PUCT's visit scale, > 0.
      temperature: of the action's sampling, >= 0 (0: the most visited).
      max_depth: caps the walks at this many edges (an int >= 1); None for no cap.

    Returns:
      The `PolicyOutput`.

    Raises:
      ValueError: a setting out of its range (`SETTINGS`), named; a root or model of
        inconsistent shapes.
    """
    num_simulations = checks.num_simulations(num_simulations, "alphazero_policy")
    b, a = checks.root(root, "alphazero_policy")
    dirichlet_fraction, dirichlet_alpha, pb_c_init, pb_c_base, temperature, max_depth = _settings(
        "alphazero_policy", dirichlet_fraction=dirichlet_fraction,
        dirichlet_alpha=dirichlet_alpha, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
        temperature=temperature, max_depth=max_depth)
    # mctx's order (muzero_policy: sample, Dirichlet, search), so that one key gives
    # both searches the same root noise and the same sampled action.
    act_key, noise_key, search_key = noise.split(key, 3)
    probs = jax.nn.softmax(root.prior_logits)
    if not (isinstance(dirichlet_fraction, (int, float)) and dirichlet_fraction == 0):
        # (Skipped when statically off: the gamma sampler is slow to compile.)
        dirichlet = jax.random.dirichlet(noise_key, jnp.full((a,), dirichlet_alpha), (b,))
        probs = (1 - dirichlet_fraction) * probs + dirichlet_fraction * dirichlet.astype(probs.dtype)
    logits = jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))
    root = root._replace(prior_logits=masked_logits(logits, root.legal_action_mask))
    select = functools.partial(puct_select, pb_c_init=pb_c_init, pb_c_base=pb_c_base)
    tree = search(params, search_key, root, recurrent_fn, num_simulations=num_simulations,
                  root_select=select, interior_select=select, max_depth=max_depth)
    v = node_view(tree, None)
    visits = v.visits.T
    if num_simulations:
        weights = visits / jnp.maximum(jnp.sum(visits, -1, keepdims=True), 1)
        greedy = masked_argmax(visits, root.legal_action_mask, -1)
    else:  # no visit to count: the weights were all 0 and an illegal action could be drawn
        weights = jax.nn.softmax(root.prior_logits, -1)  # masked: 0 where illegal
        greedy = masked_argmax(weights, root.legal_action_mask, -1)
    if not isinstance(temperature, jax.core.Tracer) and temperature == 0:
        action = greedy  # statically greedy: no sample drawn
    else:  # a traced temperature may still be 0 at run time: greedy there too
        t = jnp.asarray(temperature, weights.dtype)
        logits = jnp.log(jnp.maximum(weights, jnp.finfo(weights.dtype).tiny)) / jnp.where(
            t == 0, 1, t)
        sampled = jax.random.categorical(act_key, logits).astype(jnp.int32)
        action = jnp.where(t == 0, greedy, sampled)
    return _summary(v, action, weights)


def gumbel_policy(params: Any, key: jax.Array, root: RootFnOutput, recurrent_fn: Callable,
                  num_simulations: int, *, max_num_considered_actions: int = 16,
                  gumbel_scale: float = 1.0, max_depth: Optional[int] = None,
                  wave_sizes: Union[str, Sequence[int]] = ()) -> PolicyOutput:
    """Gumbel AlphaZero: Sequential Halving with Gumbel at the root, deterministic
    improved-policy selection inside.

    The policy target is softmax(logits + completed Q); the action is the best surviving
    root action. A terminal root's output (no legal action) is meaningless.

    Args:
      params: the model's parameters, passed to `recurrent_fn` as they are.
      key: PRNG key of the search (noise, sampled actions, `recurrent_fn`'s keys).
      root: the `RootFnOutput` of B roots with A actions.
      recurrent_fn: `(params, key, action [B], embedding) -> (RecurrentFnOutput,
        embedding)`, the model.
      num_simulations: simulations per root, an int >= 0.
      max_num_considered_actions: the most root actions Sequential Halving considers
        (static, >= 1).
      gumbel_scale: scale of the Gumbel noise, >= 0 (0: none drawn).
      max_depth: caps the walks at this many edges (an int >= 1); None for no cap.
      wave_sizes: (static; default none) the search runs in waves (`gumbel_waves`)
        when every non-terminal root considers the same number m of actions and m is one
        of these (a sequence, or one integer), else one simulation at a time; "auto"
        means the most there can be, min(max_num_considered_actions, A). Both give the
        same visit counts; each wave size compiles one more search (waves pay on
        accelerators, not on a CPU: see `search`).

    Returns:
      The `PolicyOutput`.

    Raises:
      ValueError: a setting out of its range (`SETTINGS`), named; a root or model of
        inconsistent shapes.
    """
    num_simulations = checks.num_simulations(num_simulations, "gumbel_policy")
    _, a = checks.root(root, "gumbel_policy")
    max_num_considered_actions = validate.static(
        "gumbel_policy", "max_num_considered_actions", max_num_considered_actions,
        SETTINGS["max_num_considered_actions"])
    gumbel_scale, max_depth = _settings("gumbel_policy", gumbel_scale=gumbel_scale,
                                        max_depth=max_depth)
    sizes = _wave_sizes(wave_sizes, min(max_num_considered_actions, a))
    legal = root.legal_action_mask
    root = root._replace(prior_logits=masked_logits(root.prior_logits, legal))
    # mctx's order (gumbel_muzero_policy draws its Gumbel from the second key), so
    # that one key gives both searches the same root noise.
    search_key, gumbel_key = noise.split(key)
    if isinstance(gumbel_scale, (int, float)) and gumbel_scale == 0:
        gumbel = jnp.zeros_like(root.prior_logits)  # statically off: nothing to draw
    else:
        gumbel = gumbel_scale * noise.gumbel(gumbel_key, root.prior_logits.shape,
                                             root.prior_logits.dtype)
    gumbel_logits = gumbel + root.prior_logits
    table = jnp.asarray(considered_visits_table(max_num_considered_actions, num_simulations),
                        jnp.int32)
    considered = jnp.minimum(max_num_considered_actions, jnp.sum(legal, -1))
    schedule = table[considered]
    root_select = functools.partial(gumbel_root_select, gumbel_logits=gumbel_logits.T,
                                    schedule=schedule)
    run = functools.partial(search, params, search_key, root, recurrent_fn,
                            num_simulations=num_simulations, root_select=root_select,
                            interior_select=gumbel_interior_select, max_depth=max_depth)
    one_at_a_time = ((1, num_simulations),)
    plans = [(m, gumbel_waves(max_num_considered_actions, num_simulations, m)) for m in sizes]
    plans = [(m, p) for m, p in plans if num_simulations and p != one_at_a_time]
    if not plans:
        tree = run()
    else:
        live = jnp.any(legal, -1)
        branch = jnp.int32(0)
        for i, (m, _) in enumerate(plans):
            branch = jnp.where(jnp.all((considered == m) | ~live), i + 1, branch)
        tree = jax.lax.switch(branch, [run] + [functools.partial(run, plan=p) for _, p in plans])
    v = node_view(tree, None)
    q = q_completed_by_mix_value(v)
    top = jnp.max(v.visits, 0)
    action = masked_argmax(score_considered(top, gumbel_logits.T, q, v.visits), v.legal)
    weights = jax.nn.softmax(masked_logits(root.prior_logits + q.T, legal))
    return _summary(v, action, weights)



__all__ = ["PolicyOutput", "SETTINGS", "alphazero_policy", "gumbel_policy"]
