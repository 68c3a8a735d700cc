"""What the command-line tests share: a quiet `jaxsolve solve` into a folder, and the
state its checkpoint holds."""

import numpy as np

from jaxsolve import cli
from jaxsolve.checkpoint import load_checkpoint
from jaxsolve.cli import solve as solve_command


def solve(out, *extra, game="kuhn_poker"):
    """`jaxsolve solve GAME --out OUT --quiet EXTRA...`; its exit code."""
    return cli.main(["solve", game, "--out", str(out), "--quiet", *extra])


def final_state(out):
    """The solver state in OUT's checkpoint."""
    state, _ = load_checkpoint(out / solve_command.CHECKPOINT)
    return state


def assert_same_state(a, b):
    """Two solver states of one type, every field bit for bit."""
    assert type(a) is type(b)
    for field in type(a)._fields:
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and np.array_equal(x, y), field
