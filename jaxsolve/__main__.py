"""`python -m jaxsolve ...`: the `jaxsolve` command, for an environment whose
scripts folder is not on PATH."""

import sys

from jaxsolve.cli import program

sys.exit(program())
