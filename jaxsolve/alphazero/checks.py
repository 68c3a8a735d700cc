"""What the AlphaZero trainer accepts, checked at its edges: every setting - a
config's batch size, an evaluation's number of games - must be of its kind and in its
range (`Rule`; `static`, `unless_traced` and `config_fields` apply one).

The rules themselves (`Rule`, `integer`, `number`, `interval`, `optional`, ...) are the
search's (`jaxsolve.mcts._checks`, which also checks the root and the model), so that
a setting the search policies and the configs share obeys one rule; this module adds
what only the trainer needs: named choices, instances, whole config dataclasses and
the comparison of a checkpoint's settings with the run's.

Every check looks at static information only - types, shapes, concrete Python and
NumPy numbers - so it costs nothing at run time and never forces a traced value.
"""

from __future__ import annotations

from typing import Mapping, Optional

from jaxsolve.mcts._checks import (  # noqa: F401 (re-exported: one set of rules)
    Rule, as_int, as_ints, as_number, integer, interval, number, optional, require, static,
    unless_traced)


def one_of(*choices) -> Rule:
    """One of the given values (names, usually)."""
    return Rule(lambda v: v, lambda v: v in choices,
                "must be " + " or ".join(repr(c) for c in choices))


def instance(cls: type, what: str) -> Rule:
    """An instance of `cls`, described as `what`."""
    return Rule(lambda v: v, lambda v: isinstance(v, cls), f"must be {what}")


def config_fields(name: str, rules, config) -> None:
    """Checks the fields of the frozen dataclass `config`, `rules` being (field, Rule)
    pairs, and stores each one's canonical value (a NumPy integer becomes an int, a
    list a tuple), so that equal configs are equal and hash alike. Raises ValueError
    "{name}.{field} {rule}, got ..." for the first bad field: a bad setting stops at
    construction instead of deep inside a jitted function."""
    for field, rule in rules:
        object.__setattr__(config, field, require(f"{name}.{field}", getattr(config, field), rule))


def mismatch(old: Mapping, new: Mapping) -> Optional[tuple]:
    """The entries of `new` whose value differs in `old`, as "a=1, b='x'" for each side,
    or None when they agree."""
    keys = [k for k in new if k not in old or old[k] != new[k]]
    if not keys:
        return None
    show = lambda d: ", ".join(f"{k}={d.get(k)!r}" for k in keys)
    return show(old), show(new)


__all__ = ["Rule", "as_int", "as_ints", "as_number", "config_fields", "instance", "integer",
           "interval", "mismatch", "number", "one_of", "optional", "static", "unless_traced"]
