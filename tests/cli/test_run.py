"""The run of a long command (`jaxsolve.cli._run`): a Ctrl-C while a chunk works drops
that chunk, one while its result is saved is held until the save is done, a second one
leaves the checkpoint as it was, the run prints one line with the command that resumes
it, and a resumed run goes on from the saved iteration count."""

import json
import os
import shlex
import signal

import pytest

from jaxsolve.cli._base import EXIT_INTERRUPTED
from jaxsolve.cli._run import Run, resume_command, stop


@pytest.fixture
def ctrl_c(request):
    """Python's own SIGINT handler for the test (a background job ignores SIGINT), the
    previous one restored after it; calling the fixture's value sends a real Ctrl-C."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    return lambda: os.kill(os.getpid(), signal.SIGINT)


def _write(path, iteration: int) -> None:
    """An atomic checkpoint of a counter: written aside, then moved into place."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"iteration": iteration}))
    os.replace(tmp, path)


def _saved(path) -> int:
    return json.loads(path.read_text())["iteration"]


def _count(path, to: int, interrupt_in=None, resume=False) -> int:
    """A command in miniature: counts to `to` in chunks of one iteration, checkpointed
    at `path`; `interrupt_in(iteration)` runs inside each chunk's work. Returns the
    exit code, as a command would."""
    start = _saved(path) if resume else 0
    run = Run(start, lambda it: _write(path, it))
    with run:
        while run.state < to:
            if interrupt_in is not None:
                interrupt_in(run.state + 1)
            run.complete(run.state + 1)
    if run.interrupted:
        return stop("count", f"at iteration {run.state}", path=path,
                    resume=["count", "--to", str(to), "--checkpoint", str(path), "--resume"])
    return 0


def test_ctrl_c_mid_chunk_saves_and_prints_one_resume_line(tmp_path, capsys):
    path = tmp_path / "run dir" / "ckpt.json"
    path.parent.mkdir()

    def cut(iteration):
        if iteration == 4:
            raise KeyboardInterrupt  # in the fourth chunk's work: the chunk is dropped

    assert _count(path, 10, interrupt_in=cut) == EXIT_INTERRUPTED
    assert _saved(path) == 3
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines[0] == f"count: interrupted at iteration 3; saved {path}. Resume with:"
    assert len(lines) == 2 and err.count("Resume with") == 1
    # The command is one a shell reads back (the folder's space quoted).
    assert shlex.split(lines[1]) == ["count", "--to", "10", "--checkpoint", str(path),
                                     "--resume"]


def test_resume_continues_from_the_saved_iteration_count(tmp_path, capsys):
    path = tmp_path / "ckpt.json"
    seen = []

    def cut(iteration):
        seen.append(iteration)
        if iteration == 6:
            raise KeyboardInterrupt

    assert _count(path, 9, interrupt_in=cut) == EXIT_INTERRUPTED
    command = shlex.split(capsys.readouterr().err.strip().splitlines()[-1])
    assert command[-1] == "--resume" and _saved(path) == 5
    seen.clear()
    assert _count(path, 9, interrupt_in=seen.append, resume=True) == 0
    assert seen == [6, 7, 8, 9] and _saved(path) == 9


# One Ctrl-C during the save of iteration 2 is held: that save completes and its state
# is taken. A second one during the save of iteration 3 is obeyed at once: that write
# never happens, and the run's state and checkpoint stay those of iteration 2.
@pytest.mark.parametrize("at, presses", [(2, 1), (3, 2)])
def test_a_ctrl_c_while_saving_is_held_and_a_second_one_leaves_the_checkpoint(
        at, presses, tmp_path, ctrl_c):
    path = tmp_path / "ckpt.json"

    def save(iteration):
        if iteration == at:
            for _ in range(presses):
                ctrl_c()
        _write(path, iteration)

    run = Run(0, save)
    with run:
        for iteration in range(1, 5):
            run.complete(iteration)
    assert run.interrupted and run.state == 2 and _saved(path) == 2
    assert not path.with_suffix(".tmp").exists()


def test_stop_saves_what_is_not_saved_yet_and_says_so(tmp_path, capsys, ctrl_c):
    path = tmp_path / "ckpt.json"
    assert stop("train", "at iteration 7", path=path, save=lambda: _write(path, 7),
                resume=["train", "--resume"]) == EXIT_INTERRUPTED
    assert _saved(path) == 7
    assert capsys.readouterr().err == (f"\ntrain: interrupted at iteration 7; saved {path}. "
                                       "Resume with:\n  train --resume\n")

    def cut_twice():  # the user presses Ctrl-C twice during the save
        ctrl_c()
        ctrl_c()
        _write(path, 8)

    assert stop("train", "at iteration 8", path=path, save=cut_twice) == EXIT_INTERRUPTED
    assert _saved(path) == 7
    assert "and again while saving" in capsys.readouterr().err
    assert stop("", "before the first chunk completed") == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "\nInterrupted before the first chunk completed; nothing saved\n"


def test_other_errors_pass_through_and_the_bar_closes():
    class Bar:
        closed, n = False, 0

        def update(self, k):
            self.n += k

        def close(self):
            self.closed = True

    bar = Bar()
    run = Run(0, bar=bar)
    with pytest.raises(OSError):
        with run:
            run.complete(1, advance=1)
            raise OSError("disk full")
    assert not run.interrupted and run.state == 1 and bar.n == 1 and bar.closed


def test_resume_command_quotes_what_a_shell_would_split():
    words = ["jaxsolve", "solve", "my game.py:G", "--param", "xs=[1, 2]"]
    assert shlex.split(resume_command(words)) == words
    assert resume_command(["jaxsolve", "solve", "kuhn_poker"]) == "jaxsolve solve kuhn_poker"
