"""The run's own temporary folder and the servers still stopping when it ends.

Everything the run and the servers it starts write to the temporary folder (pytest's tmp_path, Gradio's uploads,
Chromium's profile, tritonserver's and the peers' scratch files) lands in one folder made for this run, removed when
the run ends: a run leaves nothing in /tmp, whatever a test forgot.

A tritonserver or peer takes seconds to shut down (its models unload, the peers drain); a fixture done with one
hands its stop to a thread (`stop_in_background`), and the run waits for every such stop before it ends, so no
process of the run outlives it.

Only the test suite imports this module (tests/conftest.py wires it into pytest's hooks); it imports nothing of the app.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

RUN_TMP_ENV = "TRITON_DEMO_TEST_TMP"

_STOPPING: list[threading.Thread] = []
STOP_ERRORS: list[str] = []


def enter_run_folder() -> bool:
    """Point TMPDIR (this process and its children) at the run's folder, made now unless a controller of a parallel
    run made it already; True when this process made it (and removes it at the end)."""
    folder = os.environ.get(RUN_TMP_ENV)
    made = not folder or not Path(folder).is_dir()
    if made:
        folder = tempfile.mkdtemp(prefix="triton-vlm-test-run-")
        os.environ[RUN_TMP_ENV] = folder
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # gettempdir() reads TMPDIR afresh
    return made


def run_folder() -> Path:
    return Path(os.environ[RUN_TMP_ENV])


def left_in_run_folder() -> list[str]:
    """What the run left in its folder besides pytest's own tmp_path tree."""
    folder = Path(os.environ.get(RUN_TMP_ENV, ""))
    if not folder.name or not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("pytest-of-"))


def remove_run_folder() -> None:
    shutil.rmtree(os.environ.pop(RUN_TMP_ENV), ignore_errors=True)


def stop_in_background(stop: Callable[[], object], what: str) -> None:
    """Call `stop()` (a server's own stop: by the process group it started) on a thread of its own."""
    def run() -> None:
        try:
            stop()
        except Exception as exc:  # noqa: BLE001 - named at the end of the run
            STOP_ERRORS.append(f"{what}: {exc!r}")

    thread = threading.Thread(target=run, name=f"stop {what}")
    thread.start()
    _STOPPING.append(thread)


def wait_for_stops() -> list[str]:
    """Wait for every stop handed to a thread; the ones that failed, one line each."""
    while _STOPPING:
        _STOPPING.pop().join()
    return list(STOP_ERRORS)
