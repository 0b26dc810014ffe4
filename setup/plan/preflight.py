"""Preflight before a build: host, GPU and disk memory estimates from the checkpoint size, and the tools.

The estimates are rules of thumb, not measurements: converting holds about twice the checkpoint in
host memory, each GPU holds its share of the weights plus a fifth for the builder's workspace, and the
output folder receives a converted checkpoint and an engine, each about the checkpoint's size.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from setup.catalog import messages as M
from setup.catalog.checkpoint import tree_size
from setup.plan.planner import Plan

GIB = 2**30
HOST_FACTOR = 2.0
GPU_FACTOR = 1.2
DISK_FACTOR = 2.0


@dataclass(frozen=True)
class Gpu:
    index: int
    free_bytes: int
    total_bytes: int


def host_available_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable from /proc/meminfo, in bytes."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """Rows of `nvidia-smi --query-gpu=index,memory.free,memory.total --format=csv,noheader,nounits` (MiB)."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        try:
            gpus.append(Gpu(int(parts[0]), int(float(parts[1])) * 2**20, int(float(parts[2])) * 2**20))
        except (ValueError, IndexError):
            continue
    return gpus


def query_gpus(binary: str = "nvidia-smi") -> list[Gpu] | None:
    """GPUs reported by nvidia-smi; None when it is not installed or fails."""
    path = shutil.which(binary)
    if path is None:
        return None
    try:
        result = subprocess.run(
            [path, "--query-gpu=index,memory.free,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_nvidia_smi(result.stdout) if result.returncode == 0 else None


def memory_warnings(checkpoint_bytes: int, world_size: int, host_free: int | None, gpus: list[Gpu] | None,
                    disk_free: int | None, out: Path) -> list[str]:
    """Warnings for a build of `checkpoint_bytes` of weights over `world_size` GPUs."""
    warnings = []
    ckpt = checkpoint_bytes / GIB
    need_host = checkpoint_bytes * HOST_FACTOR
    if host_free is not None and need_host > host_free:
        warnings.append(M.WARN_HOST_MEMORY.format(need=need_host / GIB, ckpt=ckpt, free=host_free / GIB))
    if gpus is None:
        warnings.append(M.WARN_GPU_MISSING)
    else:
        if len(gpus) < world_size:
            warnings.append(M.WARN_GPU_COUNT.format(world=world_size, count=len(gpus)))
        need_gpu = checkpoint_bytes / max(world_size, 1) * GPU_FACTOR
        for gpu in gpus[:world_size]:
            if need_gpu > gpu.free_bytes:
                warnings.append(M.WARN_GPU_MEMORY.format(index=gpu.index, need=need_gpu / GIB, ckpt=ckpt,
                                                         world=world_size, free=gpu.free_bytes / GIB))
    need_disk = checkpoint_bytes * DISK_FACTOR
    if disk_free is not None and need_disk > disk_free:
        warnings.append(M.WARN_DISK.format(need=need_disk / GIB, path=out, free=disk_free / GIB))
    return warnings


def _disk_free(path: Path) -> int | None:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return shutil.disk_usage(candidate).free
    return None


def tool_warnings(plan: Plan) -> list[str]:
    """Programs and scripts the build steps need that are not there."""
    warnings, seen = [], set()
    for step in plan.build_steps():
        program = step.argv[0]
        if program not in seen and shutil.which(program) is None and not Path(program).is_file():
            warnings.append(M.WARN_TOOL_MISSING.format(what="Program", path=program))
        seen.add(program)
        if len(step.argv) > 1 and step.argv[1].endswith(".py") and not Path(step.argv[1]).is_file():
            warnings.append(M.WARN_TOOL_MISSING.format(what="Script", path=step.argv[1]))
    return list(dict.fromkeys(warnings))


def preflight(plan: Plan, gpus: list[Gpu] | None = None, probe_gpus: bool = True) -> list[str]:
    """Every warning for this plan on this machine (nothing blocks; the UI shows them before Run)."""
    checkpoint_bytes = tree_size(Path(plan.config.checkpoint))
    if gpus is None and probe_gpus:
        gpus = query_gpus()
    warnings = memory_warnings(checkpoint_bytes, plan.derived["world_size"], host_available_bytes(), gpus,
                               _disk_free(plan.out), plan.out)
    return warnings + tool_warnings(plan)
