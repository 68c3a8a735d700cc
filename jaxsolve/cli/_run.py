"""How a long command runs: chunks of work under a progress bar, a checkpoint at each
chunk's end, and Ctrl-C.

    run = Run(state, save=lambda state: save_checkpoint(path, state, meta), bar=bar)
    with run:
        while more_to_do(run.state):
            result = work(run.state)          # Ctrl-C here drops this chunk
            run.complete(result, advance=n)   # saved, then taken: never one alone
    if run.interrupted:
        return stop("", f"at iteration {i}", path=path, resume=words)

`solve` and `sweep` run their chunks through `Run`; `pursuit train` runs the
AlphaZero trainer, whose loop holds Ctrl-C with the same `jaxsolve.interrupt`
primitive, and ends an interrupted run with the same `stop`. The rule is one for all:
a Ctrl-C while a chunk works drops that chunk (its input is intact, so the run's
state is the last completed chunk's), a Ctrl-C while a chunk's result is saved and
taken is held until both are done, and a second Ctrl-C is obeyed at once (the
checkpoint is written atomically, so it then keeps the previous chunk's). The run
then saves what is not saved yet, prints one line with the command that resumes it
(`resume_command`, the one place such a command is written) and exits with
EXIT_INTERRUPTED.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from jaxsolve.cli._base import EXIT_INTERRUPTED
from jaxsolve.interrupt import HeldInterrupt


def resume_command(words: Sequence[str]) -> str:
    """The command line of `words` as a POSIX shell reads it back (each word quoted
    where it needs to be): how every command prints the command that resumes a run."""
    return " ".join(shlex.quote(str(w)) for w in words)


class Run:
    """One long command's loop of chunks: `state` is the result of the last completed
    chunk (the starting state before any), `save(state)` writes the checkpoint (None:
    the command keeps no checkpoint), `bar` a progress bar that `complete` advances and
    the end of the `with` block closes. A Ctrl-C in the `with` block ends it and sets
    `interrupted`; any other exception passes through."""

    def __init__(self, state: Any, save: Callable[[Any], object] | None = None, *,
                 bar=None):
        self.state = state
        self.interrupted = False
        self._save, self._bar = save, bar
        self._interrupt = HeldInterrupt()

    def __enter__(self) -> Run:
        self._interrupt.__enter__()
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        self._interrupt.__exit__(kind, error, traceback)
        if self._bar is not None:
            self._bar.close()
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            self.interrupted = True
            return True
        return False

    def complete(self, state: Any, advance: int = 0) -> None:
        """Takes a completed chunk's result: saves it (with `save`) and makes it the
        run's state, with Ctrl-C held back until both are done; then moves the bar on
        by `advance`."""
        with self._interrupt.hold():
            if self._save is not None:
                self._save(state)
            self.state = state
        if self._bar is not None:
            self._bar.update(advance)


def _save_held(save: Callable[[], object]) -> bool:
    """Runs `save()` with a Ctrl-C held back until it ends; a second Ctrl-C abandons
    it (an atomic write then leaves the file as it was). Returns whether it ended."""
    saved = False
    try:
        with HeldInterrupt() as interrupt, interrupt.hold():
            save()
            saved = True
    except KeyboardInterrupt:
        pass
    return saved


def stop(who: str, when: str, *, path: str | Path | None = None,
         save: Callable[[], object] | None = None,
         resume: Sequence[str] | None = None) -> int:
    """Ends an interrupted run: calls `save()` if given (what the last chunk's end did
    not save yet), prints one line on stderr, "{who}: interrupted {when}; saved
    {path}. Resume with: COMMAND" ("Interrupted ..." without `who`; "nothing saved"
    without `path`; no command without `resume`, the words of the command that
    continues the run), and returns EXIT_INTERRUPTED."""
    head = f"\n{who}: interrupted" if who else "\nInterrupted"
    if path is None:
        text = f"{head} {when}; nothing saved"
    elif save is not None and not _save_held(save):
        text = f"{head} {when}, and again while saving; {path} is as it was before"
    else:
        text = f"{head} {when}; saved {path}"
        if resume:
            text += ". Resume with:\n  " + resume_command(resume)
    print(text, file=sys.stderr)
    return EXIT_INTERRUPTED


__all__ = ["Run", "resume_command", "stop"]
