"""A tritonserver we started does not outlive its starter, even when the starter is killed with SIGKILL
(no atexit, no signal handler runs): the launcher's reaper ends the server's process group and removes the
folder Triton's python backend made in /tmp (which a killed server cannot remove itself)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from setup.launcher.reaper import members, python_env_dirs
from setup.paths import PROJECT_ROOT
from tests.servers import free_port

STARTER = """
import sys, time
from pathlib import Path
from setup.cpu.pacing import start_pacing_triton, write_pacing_repository
folder = Path(sys.argv[1])
repo = write_pacing_repository(folder / "repo")
process = start_pacing_triton(repo, *map(int, sys.argv[2:5]), folder / "triton.log")
print(process.pid, *process.backend_folders, flush=True)
time.sleep(600)
"""


def test_sigkill_of_the_starter_ends_tritonserver(tmp_path):
    ports = [str(free_port()) for _ in range(3)]
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path), *ports], stdout=subprocess.PIPE,
                               text=True, cwd=PROJECT_ROOT)
    triton_pid = None
    try:
        pid, *folders = starter.stdout.readline().split()
        triton_pid = int(pid)
        assert members(triton_pid), "tritonserver should be running in its own group"
        # the server is ready: its backend has made its folder. The launcher names it (a look at /tmp from
        # here would also see the folders of servers the other worker started meanwhile)
        made = {Path(folder) for folder in folders}
        assert made and made <= python_env_dirs(), "the python backend should have made its /tmp/python_env_* folder"
        starter.kill()  # SIGKILL: only the kernel closing the reaper's pipe tells anyone
        starter.wait(timeout=10)
        deadline = time.monotonic() + 30
        # the reaper ends the group, then removes the folder: wait for both (a fresh-clone run once looked in
        # between the two)
        while (members(triton_pid) or any(folder.exists() for folder in made)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert members(triton_pid) == []
        assert not [folder for folder in made if folder.exists()], "the reaper removes the backend's folder"
    finally:
        if starter.poll() is None:
            starter.kill()
        if triton_pid and members(triton_pid):
            os.killpg(triton_pid, signal.SIGKILL)
