"""benchmarks.scratch: a run's scratch folder is TMPDIR for it and its children, and goes when the run ends, however."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from benchmarks.scratch import scratch_folder


@pytest.fixture
def tmpdir_here(tmp_path, monkeypatch) -> Path:
    """TMPDIR at `tmp_path` for this test; TMPDIR and tempfile's cached folder as they were afterwards."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return tmp_path


def test_the_folder_is_tmpdir_for_this_process_and_its_children_and_goes_afterwards(tmpdir_here):
    tmp_path = tmpdir_here
    with scratch_folder() as scratch:
        assert scratch.parent == tmp_path and os.environ["TMPDIR"] == str(scratch)
        assert Path(tempfile.mkdtemp()).parent == scratch
        child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                               capture_output=True, text=True, check=True)
        assert child.stdout.strip() == str(scratch)
        (scratch / "left").mkdir()
        (scratch / "left" / "file").write_text("x")
        (scratch / "left").chmod(0o500)  # a read-only folder goes too
    assert list(tmp_path.iterdir()) == []
    assert os.environ["TMPDIR"] == str(tmp_path) and tempfile.gettempdir() == str(tmp_path)


def test_the_folder_goes_on_an_exception(tmpdir_here):
    tmp_path = tmpdir_here
    with pytest.raises(KeyboardInterrupt), scratch_folder() as scratch:
        (scratch / "file").write_text("x")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_sigterm_ends_the_run_through_its_cleanup(tmp_path):
    """A run stopped with SIGTERM (as a job runner stops it) leaves no folder either, and says it was stopped."""
    code = ("import os, signal, time\nfrom benchmarks.scratch import scratch_folder\n"
            "with scratch_folder() as scratch:\n"
            "    (scratch / 'file').write_text('x')\n"
            "    print(scratch, flush=True)\n"
            "    time.sleep(60)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    with subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) as run:
        folder = Path(run.stdout.readline().strip())
        assert folder.parent == tmp_path and folder.is_dir()
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == 128 + signal.SIGTERM
    assert list(tmp_path.iterdir()) == []
