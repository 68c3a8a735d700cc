"""jaxsolve's three .npz files - saved trees, solver checkpoints, AlphaZero training
states - are written atomically and read with one set of checks (`jaxsolve.npz`): a
write that fails midway leaves the previous file as it was, and a file that is not a
readable archive is refused with one error of the hierarchy naming it."""

import os

import numpy as np
import pytest

import jaxsolve
from conftest import builtin_tree
from jaxsolve.checkpoint import load_checkpoint, save_checkpoint
from jaxsolve.errors import CheckpointError, GameError, JaxsolveError


@pytest.fixture(scope="module")
def kuhn():
    return builtin_tree("kuhn_poker")


def _train():
    from jaxsolve.alphazero import train  # noqa: PLC0415 - loads Flax; two tests need it
    return train


def _save_tree(path, kuhn):
    kuhn.save(path)


def _save_checkpoint(path, kuhn):
    save_checkpoint(path, jaxsolve.cfr_plus().init(kuhn), {"game": "kuhn_poker"})


def _save_training_state(path, kuhn):
    # Any pytree of arrays is written leaf by leaf; the write path is what is tested.
    _train().save(str(path), {"w": np.zeros(3), "step": np.int32(0)})


WRITERS = {"tree": _save_tree, "checkpoint": _save_checkpoint,
           "training state": _save_training_state}


@pytest.mark.parametrize("writer", WRITERS)
def test_a_write_that_fails_midway_leaves_the_previous_file(writer, kuhn, tmp_path, monkeypatch):
    path = tmp_path / "file.npz"
    WRITERS[writer](path, kuhn)
    before = path.read_bytes()

    def fail_midway(file, *args, **kwargs):
        file.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(np, "savez", fail_midway)
    monkeypatch.setattr(np, "savez_compressed", fail_midway)
    with pytest.raises(OSError, match="No space left"):
        WRITERS[writer](path, kuhn)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["file.npz"]  # no temporary file left behind


def test_written_files_have_a_plain_file_s_mode(kuhn, tmp_path):
    (tmp_path / "plain.txt").write_text("")
    mode = (tmp_path / "plain.txt").stat().st_mode & 0o777
    for name, write in WRITERS.items():
        write(tmp_path / f"{name}.npz", kuhn)
        assert (tmp_path / f"{name}.npz").stat().st_mode & 0o777 == mode, name


READERS = {
    "tree": (jaxsolve.GameTree.load, GameError, "saved tree"),
    "checkpoint": (load_checkpoint, CheckpointError, "checkpoint"),
    "training state": (lambda path: _train().saved_iteration(str(path)), CheckpointError,
                       "checkpoint"),
}


@pytest.mark.parametrize("reader", READERS)
def test_each_reader_names_a_file_that_is_no_readable_archive(reader, tmp_path):
    read, error, kind = READERS[reader]
    (tmp_path / "notes.txt").write_text("a text file")
    np.savez(tmp_path / "whole.npz", a=np.arange(1000))
    (tmp_path / "truncated.npz").write_bytes((tmp_path / "whole.npz").read_bytes()[:300])
    (tmp_path / "folder.npz").mkdir()
    for name, says in [("notes.txt", f"notes.txt: not a {kind} (not an .npz archive)"),
                       ("folder.npz", f"folder.npz is a folder, not a {kind} file"),
                       ("truncated.npz", f"truncated.npz: not a readable {kind} (BadZipFile: "),
                       ("missing.npz", "missing.npz: no such file")]:
        with pytest.raises(error) as info:
            read(tmp_path / name)
        assert isinstance(info.value, JaxsolveError)
        assert says in str(info.value) and "\n" not in str(info.value), (name, str(info.value))


def test_a_write_that_cannot_start_names_the_path_given(kuhn, tmp_path):
    """Not the temporary file ('.k.npz.x1y2.tmp'), which the user never gave."""
    path = tmp_path / "nodir" / "k.npz"
    with pytest.raises(FileNotFoundError, match="does not exist") as info:
        kuhn.save(path)
    assert info.value.filename == str(path)
    (tmp_path / "folder.npz").mkdir()
    for write in WRITERS.values():
        with pytest.raises(IsADirectoryError, match="a folder is there") as info:
            write(tmp_path / "folder.npz", kuhn)
        assert info.value.filename == str(tmp_path / "folder.npz")
