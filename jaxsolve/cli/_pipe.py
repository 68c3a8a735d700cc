"""Standard output that outlives its reader: `jaxsolve solve ... | head -1`.

When the reader of a pipe exits, the next write raises BrokenPipeError. Left alone,
that failed `solve` after its checkpoint but before strategy.json and the plot
(blamed on the output folder), and gave `sweep` and `pursuit` a traceback. A
command's files matter more than its printout, so once the reader is gone the rest
of the printout is dropped and the command carries on.
"""

from __future__ import annotations

import os


class PipeSafeStdout:
    """Wraps a text stream: writes and flushes that find the pipe closed are dropped
    (and so are all later ones); everything else is the stream's."""

    def __init__(self, stream):
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop_the_rest()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop_the_rest()

    def _drop_the_rest(self) -> None:
        self.reader_gone = True
        try:  # the interpreter flushes stdout at exit: let that go to /dev/null
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass  # not a file descriptor (a captured stream): nothing is flushed at exit

    def __getattr__(self, name):
        return getattr(self._stream, name)
