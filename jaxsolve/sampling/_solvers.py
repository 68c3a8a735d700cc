"""The sampling solvers as `Solver`s: their settings checked once, `sampled_cfr` with a
scheme of one's own, and the named schemes (external, outcome and chance sampling)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from jaxsolve import validate
from jaxsolve.base import MCCFRState, Solver
from jaxsolve.sampling._iteration import _init, _step
from jaxsolve.sampling._scheme import make_scheme, scheme_masks
from jaxsolve.tree import GameTree
from jaxsolve.visit_counts import SPLITS

AVERAGING = ("traverser", "opponents")
TRAVERSALS = ("auto", "frontier", "counts")

# Regret and averaging rules a sampling solver can use (knobs of `_iteration._step`).
RULES = {
    "cfr": dict(floor=False, alpha=None, beta=None, gamma=0.0),  # plain sums, uniform average
    "cfr+": dict(floor=True, alpha=None, beta=None, gamma=1.0),  # floored, linear average
    "dcfr": dict(floor=False, alpha=1.5, beta=0.0, gamma=2.0),  # discounted (1.5, 0, 2)
}


# What each setting of a sampling solver must be; its canonical value is what the
# solver's knobs get. mask and chance_mask are checked by init, against the tree.
_SETTINGS = {
    "batch_size": validate.integer_rule(1, validate.INT32_MAX),
    "expand_own": validate.FLAG_RULE,
    "expand_opponents": validate.FLAG_RULE,
    "expand_chance": validate.FLAG_RULE,
    "exploration": validate.number_rule(0, 1),
    "averaging": validate.one_of_rule(*AVERAGING),
    "rule": validate.one_of_rule(*RULES),
    "traversal": validate.one_of_rule(*TRAVERSALS),
    "split": validate.one_of_rule(*SPLITS),
    "name": validate.optional_rule(validate.instance_rule(str, "a string")),
}


def _checked_settings(where: str, **settings) -> dict:
    """`settings` checked (see _SETTINGS) and converted; unknown keys pass unchanged,
    for sampled_cfr's signature to refuse."""
    return {key: validate.static(where, key, value, _SETTINGS[key]) if key in _SETTINGS
            else value for key, value in settings.items()}


# Samples per player per step where none is given, in Python and on the command line
# alike (`jaxsolve solve --batch`).
DEFAULT_BATCH_SIZE = 256


def sampled_cfr(batch_size: int = DEFAULT_BATCH_SIZE, *, expand_own: bool = True,
                expand_opponents: bool = True, expand_chance: bool = False,
                mask: npt.ArrayLike | None = None, chance_mask: npt.ArrayLike | None = None,
                exploration: float = 0.0, averaging: str = "traverser",
                rule: str = "cfr", traversal: str = "auto", split: str = "systematic",
                name: str | None = None) -> Solver:
    """Monte-Carlo CFR with a scheme of one's own: which nodes sample, which expand all.

    Args:
      batch_size: B samples per player per step, walked in parallel; the regret
        and average increments are their mean (default DEFAULT_BATCH_SIZE, 256, as
        `jaxsolve solve --batch`).
      expand_own: whether the traverser expands its own infosets where no mask is
        given (default True: with the next two, chance-sampled CFR).
      expand_opponents: whether the traverser expands the opponents' infosets where
        no mask is given (default True).
      expand_chance: whether the traverser expands chance nodes where no
        chance_mask is given (default False).
      mask: bool [I] or [P, I] (row p: when p traverses); True expands the infoset.
      chance_mask: bool [C] or [P, C] per chance node.
      exploration: weight of the uniform policy mixed into the traverser's own
        sampling policy (needed > 0 wherever the traverser samples).
      averaging: whose infosets a traversal adds to the average strategy:
        "traverser" or "opponents" (see `jaxsolve.sampling`; in a one-player
        game "opponents" averages the traverser's, as there are no others).
        Where opponents are sampled, prefer "opponents": "traverser" weights each
        visit by 1/q of the sampled opponents' actions, a high-variance average
        (Leduc, own infosets expanded, B=256, 300 steps: exploitability 0.33
        against 0.057).
      rule: "cfr" (plain regret sums, uniform average), "cfr+" (floored at zero,
        linear average) or "dcfr" (discounted with 1.5, 0, 2).
      traversal: how a batch is drawn: "frontier" (B independent breadth-first
        walks; cost grows with B times the histories one sample reaches), "counts"
        (one pass over the tree splitting B visit counts, `jaxsolve.visit_counts`;
        cost independent of B) or "auto" (the cheaper: see `choose_traversal`).
      split: how "counts" splits a count at a sampled node: "systematic"
        (default, cheap, unbiased, negatively correlated samples) or "multinomial"
        (exactly B independent samples, slower).
      name: the solver's name; default "sampled-cfr".

    Returns:
      Solver with init(tree, key=None) -> MCCFRState and step(tree, state).

    Raises:
      ArgumentError: a setting out of range or of the wrong kind (masks are checked
        by init, against the tree).
    """
    checked = _checked_settings(
        "sampled_cfr", batch_size=batch_size, expand_own=expand_own,
        expand_opponents=expand_opponents, expand_chance=expand_chance,
        exploration=exploration, averaging=averaging, rule=rule, traversal=traversal,
        split=split, name=name)
    knobs = (checked["batch_size"], checked["expand_own"], checked["expand_opponents"],
             checked["expand_chance"], checked["exploration"], averaging, rule, traversal,
             split, name or "sampled-cfr")
    if mask is None and chance_mask is None:  # hashable knobs: share one Solver
        return _cached(*knobs)
    return _make(*knobs, mask=mask, chance_mask=chance_mask)


def _make(batch_size, expand_own, expand_opponents, expand_chance, exploration, averaging,
          rule, traversal, split, name, mask=None, chance_mask=None) -> Solver:
    settings = dict(expand_own=expand_own, expand_opponents=expand_opponents,
                    expand_chance=expand_chance, mask=mask, chance_mask=chance_mask)
    scheme = functools.partial(make_scheme, **settings)
    init = functools.partial(_init, scheme=scheme, exploration=exploration, solver_name=name)
    step = functools.partial(_step, batch_size=batch_size, exploration=exploration,
                             averaging=averaging, traversal=traversal, split=split,
                             solver_name=name, **RULES[rule])
    check = functools.partial(_check_scheme, masks=functools.partial(scheme_masks, **settings),
                              solver_name=name)
    return Solver(init, step, name, MCCFRState, check_state=check, samples=True)


def _check_scheme(tree: GameTree, state: MCCFRState, where: str, *, masks: Callable,
                  solver_name: str) -> None:
    """The state's sampling scheme is this solver's: which infosets and chance nodes
    each traverser expands lives in the state (`expand`, `expand_chance`, from init),
    so a state of another sampling solver would run that solver's scheme, or one this
    solver's init refuses, under this solver's name. Concrete states only."""
    if validate.traced(state.expand) or validate.traced(state.expand_chance):
        return
    expand, expand_c = masks(tree)
    if not (np.array_equal(np.asarray(state.expand), expand)
            and np.array_equal(np.asarray(state.expand_chance), expand_c)):
        validate.fail(where, f"the state samples other nodes than {solver_name} does (its "
                             "expand masks come from another sampling solver's init); "
                             f"continue it with that solver, or start from "
                             f"{solver_name}'s own init(tree, key)")


_cached = functools.cache(_make)


# What each named scheme fixes: passing one of these to its wrapper is refused
# (sampled_cfr takes them all). exploration is fixed where the traverser samples
# none of its own actions, so it would change nothing.
_SCHEME_KNOBS = ("expand_own", "expand_opponents", "expand_chance", "mask", "chance_mask",
                 "averaging")


def _refuse_fixed(where: str, kwargs: dict, fixed: tuple) -> None:
    clash = [key for key in fixed if key in kwargs]
    if clash:
        validate.fail(where, f"{where} fixes {', '.join(clash)} (they define its sampling "
                             "scheme); for another scheme use jaxsolve.sampled_cfr(...)")


def external_sampling(batch_size: int = DEFAULT_BATCH_SIZE, **kwargs: Any) -> Solver:
    """External-sampling MCCFR: the traverser expands all its actions, opponents and
    chance are sampled once per visited history; opponents' averages updated (in a
    one-player game, which has none, the traverser's).

    Args:
      batch_size: B samples per player per step.
      **kwargs: `rule`, `traversal`, `split`, `name` as in `sampled_cfr`; the scheme
        (expand_*, masks, averaging, exploration) is fixed and refused.
    Returns:
      Solver "es-mccfr" with init(tree, key=None) -> MCCFRState (key None means
      jax.random.PRNGKey(0)) and step(tree, state).
    """
    _refuse_fixed("external_sampling", kwargs, _SCHEME_KNOBS + ("exploration",))
    _checked_settings("external_sampling", batch_size=batch_size, **kwargs)
    return sampled_cfr(batch_size, expand_own=True, expand_opponents=False,
                       expand_chance=False, averaging="opponents",
                       name=kwargs.pop("name", "es-mccfr"), **kwargs)


def outcome_sampling(batch_size: int = DEFAULT_BATCH_SIZE, exploration: float = 0.6,
                     **kwargs: Any) -> Solver:
    """Outcome-sampling MCCFR: one trajectory per sample, the traverser's own actions
    sampled with `exploration` (OpenSpiel's default 0.6); the traverser's average
    updated with weight own reach / sampling probability.

    Args:
      batch_size: B trajectories per player per step.
      exploration: in (0, 1], the uniform policy's weight in the traverser's
        sampling policy.
      **kwargs: `rule`, `traversal`, `split`, `name` as in `sampled_cfr`; the scheme
        (expand_*, masks, averaging) is fixed and refused.
    Returns:
      Solver "os-mccfr" with init(tree, key=None) -> MCCFRState (key None means
      jax.random.PRNGKey(0)) and step(tree, state).
    """
    _refuse_fixed("outcome_sampling", kwargs, _SCHEME_KNOBS)
    _checked_settings("outcome_sampling", batch_size=batch_size, exploration=exploration,
                      **kwargs)
    return sampled_cfr(batch_size, expand_own=False, expand_opponents=False,
                       expand_chance=False, exploration=exploration, averaging="traverser",
                       name=kwargs.pop("name", "os-mccfr"), **kwargs)


def chance_sampling(batch_size: int = DEFAULT_BATCH_SIZE, **kwargs: Any) -> Solver:
    """Chance-sampled CFR: full width over decisions, one chance outcome per sample.

    Args:
      batch_size: B chance samples per player per step.
      **kwargs: `rule`, `traversal`, `split`, `name` as in `sampled_cfr`; the scheme
        (expand_*, masks, averaging, exploration) is fixed and refused.
    Returns:
      Solver "cs-cfr" with init(tree, key=None) -> MCCFRState (key None means
      jax.random.PRNGKey(0)) and step(tree, state).
    """
    _refuse_fixed("chance_sampling", kwargs, _SCHEME_KNOBS + ("exploration",))
    _checked_settings("chance_sampling", batch_size=batch_size, **kwargs)
    return sampled_cfr(batch_size, expand_own=True, expand_opponents=True,
                       expand_chance=False, averaging="traverser",
                       name=kwargs.pop("name", "cs-cfr"), **kwargs)


# By CLI name. Chance sampling is left out: on games with a wide decision tree its
# frontier is nearly the whole tree per sample (use it through the API).
SAMPLING_SOLVERS = {"os-mccfr": outcome_sampling, "es-mccfr": external_sampling}
