"""`--solver-param KEY=VALUE`: a solver's own settings on the command line.

    jaxsolve solve leduc_poker --algo dcfr --solver-param alpha=2 gamma=3
    jaxsolve solve leduc_poker --algo os-mccfr --solver-param exploration=0.4
    jaxsolve sweep spoof --vary max_rounds=1:3:3 --algo pcfr+ --solver-param gamma=1

The settable keys of a solver are its constructor's keyword arguments (`dcfr`'s
alpha, beta, gamma; `pcfr_plus`'s gamma; `sapcfr_plus`'s prediction_weight and
gamma; `outcome_sampling`'s exploration; the sampling solvers' rule, traversal and
split), found from the constructor itself so that this list cannot drift from the
library. The batch size has its own option
(`--batch`). The constructor checks the values; its refusal becomes one CLIError.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Sequence

from jaxsolve.cli._base import CLIError
from jaxsolve.cli._game_spec import parse_params
from jaxsolve.errors import GameError, one_line
from jaxsolve.sampling import SAMPLING_SOLVERS
from jaxsolve.solvers import SOLVERS, Solver

OPTION = "--solver-param"
# Keyword arguments the sampling wrappers pass on to `sampled_cfr` (their **kwargs;
# the scheme's knobs are fixed by each wrapper and refused).
SAMPLING_KEYWORDS = ("rule", "traversal", "split")
# Settings with an option of their own, or that name nothing the user chooses.
_ELSEWHERE = {"batch_size": "--batch", "alternating": "--algo cfr-alt", "name": None}


def settable(algo: str) -> list[str]:
    """The keys `--solver-param` accepts for the solver named `algo` (a SOLVERS key)."""
    make = SOLVERS[algo]
    fixed = make.keywords if isinstance(make, functools.partial) else {}  # cfr-alt's
    named = [p.name for p in inspect.signature(make).parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
             and p.name not in fixed and p.name not in _ELSEWHERE]
    return named + [k for k in SAMPLING_KEYWORDS if algo in SAMPLING_SOLVERS
                    and k not in named]


def parse(algo: str, items: Sequence[str]) -> dict[str, Any]:
    """{key: value} from `--solver-param` words, every key one `algo` takes."""
    settings = parse_params(items, option=OPTION)
    allowed = settable(algo)
    for key in settings:
        if key in _ELSEWHERE and _ELSEWHERE[key]:
            raise CLIError(f"{OPTION} {key}: set it with {_ELSEWHERE[key]}")
        if key not in allowed:
            takes = (f"takes {', '.join(allowed)}" if allowed else "has no settings")
            raise CLIError(f"{OPTION} {key}: --algo {algo} {takes}")
    return settings


def make(algo: str, settings: dict[str, Any], batch: int | None = None) -> Solver:
    """The solver `algo` built with `settings` (and `batch` samples per player for the
    sampling solvers); a value its constructor refuses is one CLIError."""
    extra = {"batch_size": batch} if algo in SAMPLING_SOLVERS else {}
    try:
        return SOLVERS[algo](**extra, **settings)
    except GameError as e:  # ArgumentError: the constructor names the bad value
        raise CLIError(f"{OPTION}: {one_line(e)}") from None


def label(algo: str, settings: dict[str, Any]) -> str:
    """`dcfr (alpha=2, gamma=3)`: the algorithm as printed and plotted."""
    if not settings:
        return algo
    shown = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in settings.items()]
    return f"{algo} ({', '.join(shown)})"


def words(items: Sequence[str]) -> list[str]:
    """The option as it goes back into a printed command (a resume hint)."""
    return [OPTION, *items] if items else []


def add_argument(parser, algos: Sequence[str]) -> None:
    """Adds `--solver-param` to a subcommand's parser; its help lists the keys each
    of `algos` takes."""
    keys = "; ".join(f"{a}: {', '.join(settable(a))}" for a in algos if settable(a))
    parser.add_argument(OPTION, dest="solver_param", action="extend", nargs="+", default=[],
                        metavar="KEY=VALUE",
                        help=f"a setting of --algo (repeatable; see the solver's docstring, "
                        f"e.g. help(jaxsolve.dcfr)): {keys}")
