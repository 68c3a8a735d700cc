"""Progress bars: one definition of how jaxsolve shows long work.

Every bar (compiling a game, `jaxsolve solve`, `sweep`, AlphaZero training) goes to
stderr, so stdout keeps the results and JSON. In a notebook `tqdm.auto` draws a
widget. When stderr is not a terminal (a log file, a batch job), a bar that redraws
ten times a second would write a carriage-return update per redraw into the log, so
there it redraws at most every `LOG_INTERVAL` seconds; its final state is always
written when it closes.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm.auto import tqdm

LOG_INTERVAL = 30.0  # seconds between redraws of a bar written to a file


def bar(iterable=None, **options) -> tqdm:
    """A progress bar on stderr: `tqdm(iterable, **options)` with jaxsolve's defaults.

    The bar takes the terminal's width and redraws at most every `LOG_INTERVAL` seconds
    where its stream is not a terminal.

    Args:
      iterable: what the bar iterates over, or None for a bar updated by hand.
      **options: tqdm's keyword arguments; they override the defaults.

    Returns:
      The `tqdm.auto.tqdm` bar.
    """
    from tqdm.auto import tqdm  # noqa: PLC0415 - tqdm loads when a bar is drawn

    stream = options.get("file", sys.stderr)
    interactive = bool(getattr(stream, "isatty", lambda: False)())
    defaults = {"file": sys.stderr, "dynamic_ncols": True,
                "mininterval": 0.1 if interactive else LOG_INTERVAL}
    return tqdm(iterable, **{**defaults, **options})
