"""Find, start, supervise and stop `tritonserver`.

The command line mirrors the TensorRT-LLM backend's `launch_triton_server.py`: one `-n 1 tritonserver`
per rank under `mpirun` when world size > 1, a python-backend shared-memory prefix per rank,
`--disable-auto-complete-config`, and rank 0 alone serving the non-engine models.
The process runs in its own session (its process group id is its pid); it is stopped through that
group, never by name, and nothing of it outlives it: no python-backend stub, no shared-memory segment.


Modules: options (LaunchOptions, ports), install (find the binary), command (the argv), instances (a folder
per running instance), procfs (/proc readings), process (TritonProcess, start_triton). The names below
are the package's public face; import them from `setup.launcher`.

Imports: setup.paths only.
"""

from setup.launcher.command import build_command
from setup.launcher.install import find_tritonserver
from setup.launcher.instances import InstanceFolder, claim_instance_folder
from setup.launcher.options import (
    ENV_BINARY,
    NVIDIA_CONTAINER_BINARY,
    PORTS,
    SHM_DIR,
    LaunchError,
    LaunchOptions,
    TritonInstall,
    check_ports_free,
    port_in_use,
    ports_or_free,
)
from setup.launcher.process import TritonProcess, start_triton
from setup.launcher.procfs import group_members

__all__ = ["ENV_BINARY", "NVIDIA_CONTAINER_BINARY", "PORTS", "SHM_DIR", "InstanceFolder", "LaunchError",
           "LaunchOptions", "TritonInstall", "TritonProcess", "build_command", "check_ports_free",
           "claim_instance_folder", "find_tritonserver", "group_members", "port_in_use", "ports_or_free", "start_triton"]
