"""Checks of the arguments of jaxsolve's public functions, where they enter.

A wrong argument to array code rarely fails where it was passed. A [48, 2] policy
on a [12, 2] tree is gathered with clamped indices and gives a plausible number; a
solver state from another game fails in a broadcast deep inside `fori_loop`; a game
passed instead of its compiled tree fails with an AttributeError three calls down.
The functions here check such arguments on entry and raise an `ArgumentError` (a
GameError, so a ValueError) or, for an argument of the wrong kind, an
`ArgumentTypeError` (also a TypeError). Every message starts with `where`, the
public function's name, and says what was expected. The checks of arguments that
are trees, players and policies of a tree build on these and live beside the tree
(`jaxsolve.tree.arguments`); those of solvers and their states with the types they
know: `jaxsolve.base` (`solver_state`, `state_of`) and `jaxsolve.solvers`
(`check_solver`). This module imports no tree, so the search (`jaxsolve.mcts`) uses
it without the CFR half.

Every setting is checked one way: a `Rule` says what it must be, and `require`
applies the rule (`static` labels the message with the function's and the
argument's names, `unless_traced` lets an array through unchecked). The rules:
`integer_rule(minimum, maximum)` and `number_rule(minimum, maximum, above=, below=)`
(a bound given as `minimum` or `maximum` is itself allowed, one given as `above` or
`below` is not), `FLAG_RULE`, `one_of_rule(*choices)`, `optional_rule(rule)`,
`instance_rule(cls, what)`, or a `Rule` of one's own built on `as_int`, `as_ints` or
`as_finite`. A value of the wrong kind raises `ArgumentTypeError`, one out of range
`ArgumentError`, both with the one message "{where}: {name} {rule.text}, got
{value}":

    static("run", "num_iterations", -5, integer_rule(0, INT32_MAX))
    # ArgumentError: run: num_iterations must be an integer in [0, 2,147,483,647], got -5
    static("threshold", "tau", "0.1", number_rule(0, below=1))
    # ArgumentTypeError: threshold: tau must be a number in [0, 1), got '0.1'

The solvers, the builders, the search (`jaxsolve.mcts`), the AlphaZero trainer
(`jaxsolve.alphazero.checks`, whose configs give a table of (field, Rule) pairs) and
the pursuit game's `Params` all check their settings so, and a setting two of them
share obeys one rule. This module is the one place that knows what an integer, a
real number, a flag or a choice is and how a message about one reads.

Every check reads static information only: Python types, array shapes and dtypes
(known while tracing) and the values of concrete Python or NumPy numbers. So the
checks cost nothing at run time, work unchanged under jit, vmap (where each
argument has its unbatched shape), grad and shard_map, and never ask a traced value
for its value: a traced iteration count or player passes unchecked.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Callable, NamedTuple, NoReturn

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve.errors import ArgumentError, ArgumentTypeError


def fail(where: str, message: str, error: type[ArgumentError] = ArgumentError) -> NoReturn:
    """Raises `error` with "{where}: {message}".

    Args:
      where: the public function's name, which starts the error's message.
      message: what is wrong and what was expected.
      error: the error class, an `ArgumentError`.

    Raises:
      ArgumentError: (or the `error` given) always.
    """
    raise error(f"{where}: {message}")


def traced(value: Any) -> bool:
    """Whether `value` is a JAX tracer (inside jit, vmap or grad).

    Such values pass the checks here unchecked, since their contents are not known yet.

    Args:
      value: anything.

    Returns:
      True for a tracer.
    """
    return isinstance(value, jax.core.Tracer)


def kind_of(value: Any) -> str:
    """How a message names an unexpected argument: strings by value, the rest by type.

    Args:
      value: the argument.

    Returns:
      Its repr for a string, else its type's name.
    """
    return repr(value) if isinstance(value, str) else type(value).__name__


# ---------------------------------------------------------------------- numbers
# The predicates and converters below are shared by every edge of the library (the
# game walk in compile.py, the AlphaZero settings in alphazero/checks.py): one
# definition of "an integer" and "a real number", with bools excluded from both
# (True is no action id, count or probability).
def is_int(value: Any) -> bool:
    """Whether `value` is a Python or NumPy integer, not a bool.

    Args:
      value: anything.

    Returns:
      True for an integer.
    """
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_real(value: Any) -> bool:
    """Whether `value` is a Python or NumPy real number (integer or float), not a bool.

    Args:
      value: anything.

    Returns:
      True for a real number.
    """
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _real_scalar(value: Any) -> bool:
    """A real number: Python, NumPy or a concrete 0-d array of integers or floats."""
    if isinstance(value, (np.ndarray, jax.Array)) and not traced(value):
        return value.ndim == 0 and (jnp.issubdtype(value.dtype, jnp.integer)
                                    or jnp.issubdtype(value.dtype, jnp.floating))
    return is_real(value)


# as_int and as_finite raise plain TypeError and ValueError: they are the converters of
# the rules below, and `require`, which applies a rule, catches those and raises an
# error of the hierarchy naming the argument; no user sees them.
def as_int(value: Any) -> int:
    """`value` as a Python int.

    Ints, NumPy integers and anything with `__index__` (concrete 0-d integer arrays)
    convert; bools, floats (2.5 is no count, and 2.0 hides a computation gone wrong)
    and strings do not.

    Args:
      value: the value to convert.

    Returns:
      The Python int.

    Raises:
      TypeError: `value` is no integer.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("a bool is not an integer")
    return operator.index(value)


def as_finite(value: Any) -> float:
    """`value` as a Python float.

    Args:
      value: a real number (`is_real`, or a concrete 0-d integer or float array).

    Returns:
      The Python float.

    Raises:
      TypeError: `value` is no real number.
      ValueError: `value` is not finite.
    """
    if not _real_scalar(value):
        raise TypeError("not a real number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("not finite")
    return number


INT32_MAX = 2 ** 31 - 1  # counts that reach jitted code travel as int32


# ---------------------------------------------------------------------- rules
# Every setting is checked by a `Rule`, applied by `require` (or `static` and
# `unless_traced`, which call it): a single setting at a public function's entry, and
# tables of (field, Rule) pairs for whole dataclasses (`jaxsolve.alphazero.checks`).
class Rule(NamedTuple):
    """What one setting must be.

    Attributes:
      convert: returns the value in its canonical form (a Python int, float, bool or
        tuple); raises TypeError for a value of the wrong kind, ValueError for one it
        cannot convert.
      ok: whether the canonical value is in range.
      text: completes "<name> ...", e.g. "must be an integer >= 1"; a message says it
        for a value of the wrong kind and for one out of range alike.
    """

    convert: Callable[[Any], Any]
    ok: Callable[[Any], bool]
    text: str


def as_ints(value: Any) -> tuple:
    """A tuple, list, range or 1-D array of integers as a tuple of Python ints.

    An internal converter, as `as_int`.

    Args:
      value: the sequence.

    Returns:
      The tuple of Python ints.

    Raises:
      TypeError: `value` is no such sequence, or holds a non-integer.
    """
    if not isinstance(value, (tuple, list, range, np.ndarray)):
        raise TypeError("not a sequence of integers")
    return tuple(as_int(v) for v in value)


def _bounded(convert: Callable[[Any], Any], kind: str, low: Any, high: Any, *,
             low_open: bool, high_open: bool, show: Callable[[Any], str]) -> Rule:
    """The rule of a value `convert` accepts, between `low` and `high` (None: no bound).

    Its text is "must be {kind}", then ">= low", "<= high" or "in [low, high]" (with
    ">", "<", "(" and ")" for an open bound), each bound written by `show`.
    """
    def ok(v):
        return ((low is None or (v > low if low_open else v >= low))
                and (high is None or (v < high if high_open else v <= high)))
    if low is None and high is None:
        bounds = ""
    elif high is None:
        bounds = f" {'>' if low_open else '>='} {show(low)}"
    elif low is None:
        bounds = f" {'<' if high_open else '<='} {show(high)}"
    else:
        bounds = (f" in {'(' if low_open else '['}{show(low)}, "
                  f"{show(high)}{')' if high_open else ']'}")
    return Rule(convert, ok, f"must be {kind}{bounds}")


def integer_rule(minimum: int | None = None, maximum: int | None = None, *,
                 note: str | None = None) -> Rule:
    """The rule of an integer (`as_int`: no bool, no float) in [minimum, maximum].

    Args:
      minimum: the least value allowed, None for no bound.
      maximum: the largest value allowed (included), None for no bound.
      note: what the integer is, added to the text in parentheses, e.g. "2 players".

    Returns:
      The `Rule`, whose text reads "must be an integer", "must be an integer >= 1" or
      "must be an integer in [0, 2,147,483,647]" (then " (note)"); its canonical
      value is a Python int.
    """
    rule = _bounded(as_int, "an integer", minimum, maximum, low_open=False,
                    high_open=False, show=lambda bound: f"{bound:,}")
    return rule._replace(text=f"{rule.text} ({note})") if note else rule


def number_rule(minimum: float | None = None, maximum: float | None = None, *,
                above: float | None = None, below: float | None = None) -> Rule:
    """The rule of a finite real number (`as_finite`: no bool, no NaN, no infinity).

    `minimum` and `maximum` are included, `above` and `below` excluded: learning rates
    are `number_rule(above=0)`, probabilities `number_rule(0, 1)`, thresholds that must
    stay below 1 `number_rule(0, below=1)`. The text reads "must be a number in [0, 1)"
    with two bounds, else "must be a finite number >= 0" (infinity is >= 0) or "must be
    a finite number".

    Args:
      minimum: the least value allowed, None for none.
      maximum: the largest value allowed, None for none.
      above: the bound below, itself refused (instead of `minimum`).
      below: the bound above, itself refused (instead of `maximum`).

    Returns:
      The `Rule`; its canonical value is a Python float.

    Raises:
      ValueError: both `minimum` and `above`, or both `maximum` and `below`, are given.
    """
    if (minimum is not None and above is not None) or (maximum is not None
                                                         and below is not None):
        raise ValueError("number_rule: give minimum or above, maximum or below, not both")
    low = minimum if above is None else above
    high = maximum if below is None else below
    kind = "a number" if low is not None and high is not None else "a finite number"
    return _bounded(as_finite, kind, low, high, low_open=above is not None,
                    high_open=below is not None, show=lambda bound: f"{bound:g}")


def _as_flag(value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError("not a bool")
    return bool(value)


# A flag is a bool; anything else (a string, 0/1) is refused, since bool("no") is True.
FLAG_RULE = Rule(_as_flag, lambda v: True, "must be True or False")


def optional_rule(rule: Rule) -> Rule:
    """The rule of None or what `rule` accepts.

    Args:
      rule: the rule a value other than None obeys.

    Returns:
      The `Rule`.
    """
    return Rule(lambda v: None if v is None else rule.convert(v),
                lambda v: v is None or rule.ok(v),
                "must be None or " + rule.text.removeprefix("must be "))


def one_of_rule(*choices: Any) -> Rule:
    """The rule of one of the given values (names, usually); any other value, of
    whatever kind, is out of range.

    Args:
      *choices: the allowed values.

    Returns:
      The `Rule`: "must be one of 'a', 'b'".
    """
    return Rule(lambda v: v, lambda v: v in choices,
                "must be one of " + ", ".join(repr(c) for c in choices))


def instance_rule(cls: type, what: str) -> Rule:
    """The rule of an instance of `cls`.

    Args:
      cls: the class.
      what: how messages describe it.

    Returns:
      The `Rule`.
    """
    def same_kind(value):
        if not isinstance(value, cls):
            raise TypeError(f"not a {cls.__name__}")
        return value
    return Rule(same_kind, lambda v: True, f"must be {what}")


def _shown(value: Any) -> str:
    """How a message shows the value it refuses: an integer as the bounds are written
    (2,147,483,648), anything else by its repr."""
    return f"{value:,}" if is_int(value) else repr(value)


def require(label: str, value: Any, rule: Rule) -> Any:
    """`value` in its canonical form, checked against `rule`: the one function that
    applies a `Rule`.

    Args:
      label: what the message calls the value; it starts the message
        "{label} {rule.text}, got {value}".
      value: the value.
      rule: the `Rule` it must obey.

    Returns:
      The canonical value (`rule.convert(value)`).

    Raises:
      ArgumentTypeError: `value` is of the wrong kind.
      ArgumentError: `value` is out of range or cannot be converted.
    """
    error: type[ArgumentError] = ArgumentError
    try:
        canonical = rule.convert(value)
        good = bool(rule.ok(canonical))
    except TypeError:
        good, error = False, ArgumentTypeError
    except ValueError:
        good = False
    if not good:
        raise error(f"{label} {rule.text}, got {_shown(value)}")
    return canonical


def static(where: str, name: str, value: Any, rule: Rule) -> Any:
    """An argument of a public function that must be a concrete value (a size, a
    count, a name, a flag), checked by `rule` (`require` labelled "{where}: {name}").

    Args:
      where: the public function's name, which starts the error's message.
      name: the argument's name.
      value: the argument.
      rule: the `Rule` it must obey.

    Returns:
      The canonical value.

    Raises:
      ArgumentTypeError: `value` is of the wrong kind ("{where}: {name} {rule.text},
        got ...").
      ArgumentError: `value` is out of range, likewise.
    """
    return require(f"{where}: {name}", value, rule)


def unless_traced(where: str, name: str, value: Any, rule: Rule) -> Any:
    """A numeric setting that may also be an array, traced under jit or concrete.

    An array is returned unchecked (its value is not known when the function is traced,
    and reading it would force it); anything else is checked as by `static`.

    Args:
      where: the public function's name, which starts the error's message.
      name: the setting's name.
      value: the setting.
      rule: the `Rule` a non-array value must obey.

    Returns:
      An array unchanged, else the canonical value.

    Raises:
      ArgumentTypeError: a non-array `value` is of the wrong kind.
      ArgumentError: a non-array `value` is out of range.
    """
    if isinstance(value, (jax.Array, np.ndarray)):
        return value
    return static(where, name, value, rule)


# A number of iterations reaches jitted code as an int32 loop bound.
ITERATIONS_RULE = integer_rule(0, INT32_MAX)


def iterations(num_iterations: Any, where: str) -> Any:
    """A number of iterations: a concrete count must be an integer in [0, 2**31 - 1]
    (`ITERATIONS_RULE`).

    A negative count would silently run no iteration, 2.5 would fail inside fori_loop;
    a traced count passes as it is.

    Args:
      num_iterations: the count.
      where: the public function's name, which starts the error's message.

    Returns:
      `num_iterations` unchanged, so the loop sees what the caller passed.

    Raises:
      ArgumentTypeError: a concrete count is no integer.
      ArgumentError: a concrete count is out of range.
    """
    if not traced(num_iterations):  # the loop bound is an int32 inside jit
        static(where, "num_iterations", num_iterations, ITERATIONS_RULE)
    return num_iterations


_TAU_RULE = number_rule(0, below=1)


def tau(value: Any, where: str) -> Any:
    """The threshold of `jaxsolve.threshold`: a number in [0, 1) (at 1 every action
    would be dropped); a traced one passes as it is.

    Args:
      value: the threshold.
      where: the public function's name, which starts the error's message.

    Returns:
      A traced value unchanged, else the Python float.

    Raises:
      ArgumentTypeError: `value` is no real number.
      ArgumentError: `value` is outside [0, 1).
    """
    if traced(value):
        return value
    return static(where, "tau", value, _TAU_RULE)


# ---------------------------------------------------------------------- keys
def prng_key(key: Any, where: str) -> Any:
    """A JAX PRNG key: a typed key (`jax.random.key`, shape []) or a raw
    `jax.random.PRNGKey` ([2] uint32).

    Plain numbers would fail inside JAX's samplers with "invalid PRNG key data", which
    names neither the argument nor the fix.

    Args:
      key: the argument.
      where: the public function's name, which starts the error's message.

    Returns:
      `key`.

    Raises:
      ArgumentTypeError: `key` is no PRNG key.
    """
    dtype = getattr(key, "dtype", None)
    typed = dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)
    if (typed and np.ndim(key) == 0) or (not typed and dtype == np.uint32
                                        and np.shape(key) == (2,)):
        return key
    got = f"{dtype} array of shape {np.shape(key)}" if dtype is not None else kind_of(key)
    fail(where, "key must be a jax.random key, e.g. jax.random.key(0) or "
                f"jax.random.PRNGKey(0), got {got}", ArgumentTypeError)
