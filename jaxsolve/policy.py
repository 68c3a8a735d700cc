"""Policies as `[num_infosets, num_actions]` arrays, and their readable forms.

Rows are infosets (ids from the GameTree), columns are action ids; illegal slots
hold zero. `table` turns one into `{infoset string: {action name: probability}}`
for people; `from_table` reads such a mapping back (e.g. a saved strategy.json).
"""

from __future__ import annotations

from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.base import CFRState, MCCFRState, MMDState, Solver
from jaxsolve.errors import ArgumentError, ArgumentTypeError, GameError
from jaxsolve.solvers import average_policy, current_policy, reported_kind
from jaxsolve.tree import GameTree

FROM_TABLE_DEFAULTS = ("uniform", "error")


def action_labels(tree: GameTree, infoset: int, legal: np.ndarray) -> dict[int, str]:
    """The names of one infoset's legal actions, each unique in the row.

    A game may give two actions one name (`action_to_string`), and a table keyed by name
    would then keep only one of their probabilities, so those get their id appended
    ("raise (id 1)", "raise (id 2)").

    Args:
      tree: the compiled game.
      infoset: the infoset id.
      legal: `[I, A]` bool, `tree.legal` as NumPy.

    Returns:
      `{action id: name}` of the legal actions.
    """
    names = {int(a): tree.names.actions[infoset][a] for a in np.nonzero(legal[infoset])[0]}
    counts: dict[str, int] = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    return {a: name if counts[name] == 1 else f"{name} (id {a})" for a, name in names.items()}


def table(tree: GameTree, policy: jax.Array, *, player: int | None = None,
          digits: int | None = None) -> dict[str, dict[str, float]]:
    """A policy as `{infoset string: {action name: probability}}`, for people (e.g. a
    strategy.json).

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities.
      player: only this player's infosets; all if None.
      digits: round each probability to this many digits; None keeps them.

    Returns:
      A dict over the infosets in id order, each a dict over the legal actions.

    Raises:
      ArgumentError: `tree` is not a GameTree, `policy` is not a policy of it, or
        `player` is out of range.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> jaxsolve.table(tree, jaxsolve.uniform_policy(tree), player=0)["p0 card=2 history="]
      {'Pass': 0.5, 'Bet': 0.5}
    """
    tree_arguments.game_tree(tree, "table")
    policy = tree_arguments.policy(tree, policy, "table", host=True).astype(np.float64)
    if player is not None:
        player = tree_arguments.player(tree, player, "table")
    legal = np.asarray(tree.legal)
    owner = np.asarray(tree.infoset_player)
    out = {}
    for i, name in enumerate(tree.names.infosets):
        if player is not None and owner[i] != player:
            continue
        row = {label: float(policy[i, a]) for a, label in action_labels(tree, i, legal).items()}
        if digits is not None:
            row = {k: round(v, digits) for k, v in row.items()}
        out[name] = row
    return out


def from_table(tree: GameTree, mapping: Mapping[str, Mapping[str, float]],
               *, default: str = "uniform") -> jnp.ndarray:
    """A policy from `{infoset: {action name or id: probability}}`.

    An action is looked up by its name (`table`'s labels) first, then as an id: an int,
    or its decimal text ("0", as a JSON round trip of an id-keyed table gives).

    Args:
      tree: the compiled game.
      mapping: `{infoset string: {action: probability}}`, e.g. what `table` returns.
      default: what infosets missing from the mapping get: "uniform" (over the legal
        actions) or "error".

    Returns:
      `[I, A]` float array.

    Raises:
      GameError: unknown infosets or actions, rows that are not distributions over the
        legal actions, or (with default="error") infosets missing.
      ArgumentError: a bad `tree` or `default`, or a mapping of the wrong kind.
    """
    tree_arguments.game_tree(tree, "from_table")
    validate.static("from_table", "default", default,
                    validate.one_of_rule(*FROM_TABLE_DEFAULTS))
    if not isinstance(mapping, Mapping):
        validate.fail("from_table", "mapping must be {infoset: {action: probability}} (e.g. "
                      f"what jaxsolve.table returns), got {type(mapping).__name__}",
                      ArgumentTypeError)
    legal = np.asarray(tree.legal)
    policy = legal / legal.sum(axis=-1, keepdims=True)
    index = {name: i for i, name in enumerate(tree.names.infosets)}
    seen = set()
    for name, row in mapping.items():
        if name not in index:
            raise GameError(f"policy names infoset {name!r}, which the game does not have")
        i = index[name]
        if not isinstance(row, Mapping):
            validate.fail("from_table", f"infoset {name!r} maps to {type(row).__name__}, not "
                          "to {action: probability}", ArgumentTypeError)
        seen.add(i)
        labels = {label: a for a, label in action_labels(tree, i, legal).items()}
        values = np.zeros(legal.shape[1])
        for action, p in row.items():
            a = labels.get(action, action)
            if isinstance(a, str) and a.isdecimal():  # an id keyed as text, as JSON keys are
                a = int(a)
            if not isinstance(a, (int, np.integer)) or not 0 <= a < legal.shape[1] or not legal[i, a]:
                raise GameError(f"policy at infoset {name!r}: {action!r} is not a legal action "
                                f"(legal: {sorted(labels)})")
            values[a] = validate.static("from_table", f"probability of {action!r} at {name!r}",
                                        p, validate.number_rule())
        if np.any(values < 0) or abs(values.sum() - 1.0) > 1e-6:
            raise GameError(f"policy at infoset {name!r} is not a distribution: {dict(row)}")
        policy[i] = values
    if default == "error" and len(seen) < len(index):
        missing = [n for n, i in index.items() if i not in seen][:3]
        raise GameError(f"policy misses {len(index) - len(seen)} infosets, e.g. {missing}")
    return jnp.asarray(policy)


def purify(tree: GameTree, policy: jax.Array) -> jax.Array:
    """The most likely action of each row, as one-hot (ties to the lowest action id).

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities.

    Returns:
      `[I, A]` float array, one 1 per row.

    Raises:
      ArgumentError: `tree` is not a GameTree, or `policy` is not a policy of it.
    """
    tree_arguments.game_tree(tree, "purify")
    policy = tree_arguments.policy(tree, policy, "purify")
    p = jnp.where(jnp.asarray(tree.legal), policy, -1.0)
    return jnp.eye(tree.sizes.num_actions, dtype=policy.dtype)[jnp.argmax(p, axis=-1)]


def threshold(tree: GameTree, policy: jax.Array, tau: float) -> jax.Array:
    """The policy with probabilities below `tau` set to zero and rows renormalised (a row
    whose every entry falls below tau keeps its argmax).

    Args:
      tree: the compiled game.
      policy: `[I, A]` action probabilities.
      tau: the cut-off, in `[0, 1)` (at 1 every action would be dropped).

    Returns:
      `[I, A]` float array.

    Raises:
      ArgumentError: `tree` is not a GameTree, `policy` is not a policy of it, or
        `tau` is outside `[0, 1)`.
    """
    tree_arguments.game_tree(tree, "threshold")
    policy = tree_arguments.policy(tree, policy, "threshold")
    tau = validate.tau(tau, "threshold")
    kept = jnp.where(policy >= tau, policy, 0.0)
    total = kept.sum(axis=-1, keepdims=True)
    return jnp.where(total > 0, kept / jnp.where(total > 0, total, 1.0), purify(tree, policy))


FINAL_KINDS = ("average", "current", "threshold", "purify")


def final_policy(tree: GameTree, state: CFRState | MCCFRState | MMDState,
                 kind: str | None = None, tau: float | None = None,
                 solver: Solver | None = None) -> jax.Array:
    """The strategy to report from a solver state, derived from the training iterates in
    one of four ways (the strategy reported may differ from the one training plays):

      "average"    the average strategy (`average_policy`), what CFR's guarantee is for;
      "current"    the last iterate, regret matching of the regrets (`current_policy`,
                   which for predictive CFR+ also counts the prediction; pass the
                   `solver` of a `cfr_variant` with its own rule, to get that rule's),
                   or the policy of magnetic mirror descent (`mmd`), what its
                   guarantee is for;
      "threshold"  the average with probabilities below `tau` set to zero and rows
                   renormalised (`threshold`; needs tau in [0, 1));
      "purify"     the average's most likely action per infoset, ties to the lowest
                   action id (`purify`).

    Args:
      tree: the compiled game.
      state: any solver state with CFRState's fields (CFRState, MCCFRState).
      kind: one of the four above; static under jit. None (the default): the one
        that converges (`jaxsolve.solvers.reported_kind`): "current" for a
        last-iterate solver or its `MMDState`, else "average".
      tau: the cut-off of "threshold"; static under jit.
      solver: the solver, for "current" with a `cfr_variant` of its own rule.

    Returns:
      `[I, A]` float array.

    Raises:
      ValueError: an unknown kind, a threshold without tau or with tau outside
        `[0, 1)`, or a tau given to another kind.
    """
    if kind is None:
        kind = reported_kind(solver, state)
    if kind not in FINAL_KINDS:
        raise ArgumentError(f"final_policy: unknown final policy kind {kind!r}; expected one "
                            f"of {', '.join(FINAL_KINDS)}")
    if kind == "threshold":
        if tau is None:
            raise ArgumentError("final_policy: final policy 'threshold' needs tau, the "
                                "probability below which actions are dropped (e.g. tau=0.05)")
        tau = validate.tau(tau, "final_policy")
    elif tau is not None:
        raise ArgumentError(f"final_policy: tau applies to the 'threshold' final policy only, "
                            f"not {kind!r}")
    if kind == "current":
        return current_policy(tree, state, solver)
    average = average_policy(tree, state)
    if kind == "threshold":
        return threshold(tree, average, tau)
    if kind == "purify":
        return purify(tree, average)
    return average
