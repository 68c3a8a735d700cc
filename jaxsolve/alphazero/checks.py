"""What only the AlphaZero trainer checks: whole config dataclasses, field by field
(`config_fields`), and the comparison of a checkpoint's settings with the run's
(`mismatch`). Each setting obeys a `Rule` of `jaxsolve.validate`, the rules the
search's policies use too, so that a setting the two share obeys one rule.

Every check looks at static information only - types, shapes, concrete Python and
NumPy numbers - so it costs nothing at run time and never forces a traced value.
"""

from __future__ import annotations

from typing import Mapping, Optional

from jaxsolve.validate import require


def config_fields(name: str, rules, config) -> None:
    """Checks the fields of the frozen dataclass `config` and stores their canonical values.

    Each field's canonical value (a NumPy integer becomes an int, a list a tuple) is
    stored, so that equal configs are equal and hash alike; a bad setting stops at
    construction instead of deep inside a jitted function.

    Args:
      name: the config's name, which starts the message.
      rules: (field, `Rule`) pairs.
      config: the frozen dataclass, updated in place.

    Raises:
      ArgumentTypeError: the first bad field is of the wrong kind:
        "{name}.{field} {rule}, got ...".
      ArgumentError: the first bad field is out of range, likewise.
    """
    for field, rule in rules:
        object.__setattr__(config, field, require(f"{name}.{field}", getattr(config, field), rule))


def mismatch(old: Mapping, new: Mapping) -> Optional[tuple]:
    """The entries of `new` whose value differs in `old`.

    Args:
      old: the recorded settings.
      new: the settings now.

    Returns:
      ("a=1, b='x'" for `old`, the same for `new`) over those entries, or None when
      they agree.
    """
    keys = [k for k in new if k not in old or old[k] != new[k]]
    if not keys:
        return None
    show = lambda d: ", ".join(f"{k}={d.get(k)!r}" for k in keys)
    return show(old), show(new)


__all__ = ["config_fields", "mismatch"]
