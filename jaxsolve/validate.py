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

Settings of configs and search policies are checked by `Rule`s (`integer_rule`,
`number_rule`, ...; `require`, `static` and `unless_traced` apply one): the search
(`jaxsolve.mcts._checks`), the AlphaZero trainer (`jaxsolve.alphazero.checks`) and
the pursuit game's `Params` share them, so a setting they share obeys one rule.
This module is the one place that knows what an integer, a real number, a flag or a
choice is and how a message about one reads.

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
from typing import Any, Callable, NamedTuple, NoReturn, Sequence

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


# as_int and as_finite raise plain TypeError and ValueError: they are converters whose
# callers (`integer`, `require`, the game walk) catch those and raise an error of the
# hierarchy naming the argument; no user sees them.
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


def integer(name: str, value: Any, where: str, *, minimum: int | None = 0,
            maximum: int | None = None) -> int:
    """`value` as a Python int (`as_int`), at least `minimum` and at most `maximum`.

    Args:
      name: the argument's name, for messages.
      value: the argument.
      where: the public function's name, which starts the error's message.
      minimum: the least value allowed, None for no bound.
      maximum: the largest value allowed, None for no bound.

    Returns:
      The Python int.

    Raises:
      ArgumentTypeError: `value` is no integer.
      ArgumentError: `value` is out of range.
    """
    try:
        index = as_int(value)
    except TypeError:
        fail(where, f"{name} must be an integer, got {value!r}", ArgumentTypeError)
    if minimum is not None and index < minimum:
        fail(where, f"{name} must be at least {minimum}, got {index}")
    if maximum is not None and index > maximum:
        fail(where, f"{name} must be at most {maximum:,}, got {index:,}")
    return index


def _interval(low: float, high: float, closed_above: bool) -> str:
    closed = closed_above and high < math.inf  # values are finite: never "inf]"
    return f"[{low:g}, {high:g}{']' if closed else ')'}"


def _real_scalar(value: Any) -> bool:
    """A real number: Python, NumPy or a concrete 0-d array of integers or floats."""
    if isinstance(value, (np.ndarray, jax.Array)) and not traced(value):
        return value.ndim == 0 and (jnp.issubdtype(value.dtype, jnp.integer)
                                    or jnp.issubdtype(value.dtype, jnp.floating))
    return is_real(value)


def finite_real(name: str, value: Any, where: str, *, low: float = -math.inf,
                high: float = math.inf, closed_above: bool = True) -> float:
    """`value` as a float: a finite real number in [low, high] (or [low, high)).

    Args:
      name: the argument's name, for messages.
      value: the argument: not a bool, not a string, not traced.
      where: the public function's name, which starts the error's message.
      low: the least value allowed.
      high: the bound above.
      closed_above: whether `high` itself is allowed.

    Returns:
      The Python float.

    Raises:
      ArgumentTypeError: `value` is no real number.
      ArgumentError: `value` is not finite or out of range.
    """
    bounded = low > -math.inf or high < math.inf
    within = f" in {_interval(low, high, closed_above)}" if bounded else ""
    if not _real_scalar(value):
        fail(where, f"{name} must be a number{within}, got {value!r}", ArgumentTypeError)
    number = float(value)
    above = number > high if closed_above else number >= high
    if not math.isfinite(number) or number < low or above:
        fail(where, f"{name} must lie in {_interval(low, high, closed_above)}, got {value!r}"
             if bounded else f"{name} must be finite, got {value!r}")
    return number


def flag(name: str, value: Any, where: str) -> bool:
    """`value` as a bool; anything else (a string, 0/1) is refused, since bool("no") is True.

    Args:
      name: the argument's name, for messages.
      value: the argument.
      where: the public function's name, which starts the error's message.

    Returns:
      The bool.

    Raises:
      ArgumentTypeError: `value` is not a bool.
    """
    return static(where, name, value, FLAG_RULE)


def choice(name: str, value: Any, where: str, *, choices: Sequence[str]) -> str:
    """`value`, checked to be one of the strings `choices`.

    Args:
      name: the argument's name, for messages.
      value: the argument.
      where: the public function's name, which starts the error's message.
      choices: the allowed strings.

    Returns:
      `value`.

    Raises:
      ArgumentError: `value` is not one of `choices`.
    """
    if not isinstance(value, str) or value not in choices:
        fail(where, f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


# ---------------------------------------------------------------------- rules
# A setting of a config or a search policy is checked by a `Rule`: tables of
# (field, Rule) pairs check whole dataclasses (`jaxsolve.alphazero.checks`), and a
# setting the search and the trainer share obeys one rule.
class Rule(NamedTuple):
    """What one setting must be.

    Attributes:
      convert: returns the value in its canonical form (a Python int, float or tuple);
        raises TypeError for a value of the wrong kind, ValueError for one it cannot
        convert.
      ok: whether the canonical value is in range.
      text: completes "<name> ...", e.g. "must be an integer >= 1".
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


def integer_rule(low: int, high: int | None = None, text: str | None = None) -> Rule:
    """The rule of an integer in [low, high).

    Args:
      low: the least value allowed.
      high: the bound above (excluded), None for unbounded.
      text: the rule's text, if not the default ("must be an integer >= low" or
        "must be an integer in [low, high)").

    Returns:
      The `Rule`.
    """
    default = (f"must be an integer >= {low}" if high is None
               else f"must be an integer in [{low}, {high})")
    return Rule(as_int, lambda v: v >= low and (high is None or v < high), text or default)


def number_rule(low: float, *, strict: bool = False) -> Rule:
    """The rule of a finite number >= `low` (> `low` when `strict`).

    Args:
      low: the bound below.
      strict: whether `low` itself is refused.

    Returns:
      The `Rule`.
    """
    ok = (lambda v: v > low) if strict else (lambda v: v >= low)
    return Rule(as_finite, ok, f"must be a finite number {'>' if strict else '>='} {low:g}")


def interval_rule(low: float, high: float, *, closed_above: bool = True) -> Rule:
    """The rule of a finite number in [low, high] (in [low, high) when not `closed_above`).

    Args:
      low: the least value allowed.
      high: the bound above.
      closed_above: whether `high` itself is allowed.

    Returns:
      The `Rule`.
    """
    ok = (lambda v: low <= v <= high) if closed_above else (lambda v: low <= v < high)
    return Rule(as_finite, ok, f"must lie in {_interval(low, high, closed_above)}")


def _as_flag(value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError("not a bool")
    return bool(value)


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
    """The rule of one of the given values (names, usually).

    Args:
      *choices: the allowed values.

    Returns:
      The `Rule`.
    """
    return Rule(lambda v: v, lambda v: v in choices,
                "must be " + " or ".join(repr(c) for c in choices))


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


def require(label: str, value: Any, rule: Rule) -> Any:
    """`value` in its canonical form, checked against `rule`.

    Args:
      label: what the message calls the value; it starts the message
        "{label} {rule.text}, got {value!r}".
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
        raise error(f"{label} {rule.text}, got {value!r}")
    return canonical


def static(where: str, name: str, value: Any, rule: Rule) -> Any:
    """A setting that must be a concrete value (a size, a count, a name), checked by `rule`.

    Args:
      where: the public function's name, which starts the error's message.
      name: the setting's name.
      value: the setting.
      rule: the `Rule` it must obey.

    Returns:
      The canonical value.

    Raises:
      ArgumentTypeError: `value` is of the wrong kind ("{where}: {name} {rule},
        got ...").
      ArgumentError: `value` is out of range.
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


def iterations(num_iterations: Any, where: str) -> Any:
    """A number of iterations: a concrete count must be an integer in [0, 2**31 - 1].

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
        integer("num_iterations", num_iterations, where, minimum=0, maximum=INT32_MAX)
    return num_iterations


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
    return finite_real("tau", value, where, low=0.0, high=1.0, closed_above=False)


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
