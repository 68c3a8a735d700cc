"""Progress bars write a log file a few lines, not one per update, and a terminal
as usual; the final state is always written."""

import io
import time

from jaxsolve import progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _run(stream, updates=30, **options):
    """`updates` steps 20 ms apart: a bar redrawing every 0.1 s redraws ~6 times."""
    with progress.bar(total=updates, file=stream, desc="work", **options) as bar:
        for _ in range(updates):
            time.sleep(0.02)
            bar.update(1)
    return stream.getvalue()


def test_a_log_gets_the_start_and_the_end_not_every_update():
    text = _run(io.StringIO())
    assert text.count("\r") <= 3 and "30/30" in text  # start, (one redraw), close
    # The same bar at a terminal's rate writes several more: what the log is spared.
    assert _run(io.StringIO(), mininterval=0.1).count("\r") >= 5


def test_a_terminal_keeps_the_usual_redraw_rate():
    bar = progress.bar(total=1, file=_Terminal())
    assert bar.mininterval == 0.1
    bar.close()
    assert progress.bar(total=1, file=io.StringIO()).mininterval == progress.LOG_INTERVAL
