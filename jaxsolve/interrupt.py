"""Ctrl-C held back while a step runs, so that a long loop stops between steps.

    with HeldInterrupt() as interrupt:
        for _ in range(n):
            with interrupt.hold():
                state = step(state)   # a Ctrl-C here is raised once the step is done
            save(state)               # a Ctrl-C here is raised at once

A step whose result must not be lost half-way (a jitted call that consumes its input,
a checkpoint and the state it records) runs under `hold()`: the first Ctrl-C is kept
until the step ends and then raised as KeyboardInterrupt; a second one is raised at
once, for a user who does not want to wait. Shared by the AlphaZero trainer and the
command line's run loop.
"""

from __future__ import annotations

import contextlib
import signal
import threading


class HeldInterrupt:
    """Holds a Ctrl-C back while a step runs (`hold()`) and raises it as
    KeyboardInterrupt when the step is done. Outside `hold()`, and at a second Ctrl-C,
    it is raised at once. Active only in the main thread over Python's own SIGINT
    handler (signals reach only the main thread; a handler someone installed is left
    alone, and then Ctrl-C is that handler's business)."""

    def __init__(self):
        self.holding = self.pending = False
        self._previous = None

    def _handler(self, signum, frame):
        if self.holding and not self.pending:
            self.pending = True
            return
        raise KeyboardInterrupt

    def __enter__(self) -> HeldInterrupt:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> bool:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        return False

    @contextlib.contextmanager
    def hold(self):
        """Runs the `with` body with Ctrl-C held back.

        Yields:
          Nothing; the body runs while the context is open.

        Raises:
          KeyboardInterrupt: when a Ctrl-C came while the body ran, once it completes.
        """
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        if self.pending:  # reached only when the body completed
            self.pending = False
            raise KeyboardInterrupt


__all__ = ["HeldInterrupt"]
