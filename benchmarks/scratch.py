"""One scratch folder per benchmark run: everything the run and its servers write to the temporary folder lands in it,
and it is removed when the run ends, however it ends (done, an exception, Ctrl-C, SIGTERM or SIGHUP).

    with scratch_folder() as scratch:   # every entry point's main() (benchmarks.foundation, lora, images, ...)
        ...

The folder is made under the system's temporary folder (TMPDIR's, when set) and TMPDIR points at it for this
process (tempfile reads it afresh) and so for every child it starts: tritonserver and its Python stubs, the app,
vLLM's CPU build (its `vllm_dist_*` folders, its ZMQ sockets, PyTorch's `torchinductor_<user>` cache), Dynamo. A run
leaves nothing in /tmp but what a program writes there by a fixed path: Triton's Python backend makes
/tmp/python_env_XXXXXX (it removes it when it stops, the launcher's reaper when it was killed).

The benchmarks stand on the product's packages, never on tests/ (pyproject.toml's import contract): the test suite's
own run folder (tests/run_folder.py) is not theirs.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIX = "triton-vlm-bench-"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # Ctrl-C is KeyboardInterrupt already


def _exit_on_signal(signum: int, _frame) -> None:
    """A stop signal ends the run through the `finally` blocks (servers stopped, the folder removed)."""
    raise SystemExit(128 + signum)


@contextmanager
def scratch_folder(prefix: str = PREFIX) -> Iterator[Path]:
    """A new folder under the temporary folder, TMPDIR for this process and its children while the block runs;
    removed afterwards, with TMPDIR and the signal handlers as they were."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR afresh
    handlers = {}
    if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
        handlers = {sig: signal.signal(sig, _exit_on_signal) for sig in STOP_SIGNALS}
    try:
        yield folder
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        tempfile.tempdir = None
        remove(folder)


def remove(folder: Path) -> None:
    """rmtree, making read-only folders writable on the way (a pip or model cache may leave some)."""
    def writable_then_again(function, path, _exc) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            function(path)
        except OSError:
            pass

    shutil.rmtree(folder, onerror=writable_then_again)  # onexc from Python 3.12 on; the project runs 3.11
    if folder.exists():
        print(f"Could not remove the run's scratch folder {folder}", file=sys.stderr)
