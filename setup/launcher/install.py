"""Where tritonserver is: explicit, $TRITONSERVER, NVIDIA's container, or the nvidia-pytriton wheel."""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setup.launcher.options import ENV_BINARY, NVIDIA_CONTAINER_BINARY, LaunchError, TritonInstall
from setup.paths import cache_dir


def _pytriton_root() -> Path | None:
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0]) / "tritonserver"
    return root if (root / "bin" / "tritonserver").is_file() else None


def _copy_backends(source: Path, stub: Path, backends: Path) -> None:
    """Copy the backends tree with the stub into `backends` once. Several processes may start a tritonserver at
    once (parallel test workers, a demo beside a test run): one copies under a lock, the others wait for it."""
    backends.parent.mkdir(parents=True, exist_ok=True)
    with open(backends.parent / f".{backends.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if (backends / "python" / stub.name).is_file():
            return
        staging = backends.with_name(backends.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source, staging)
        shutil.copy2(stub, staging / "python" / stub.name)
        shutil.rmtree(backends, ignore_errors=True)
        staging.rename(backends)


def _wheel_install() -> TritonInstall | None:
    """The tritonserver inside the nvidia-pytriton wheel, with the fixes it needs outside PyTriton.

    The python backend wants its stub beside `libtriton_python.so`, so the small backends tree is
    copied into the cache with the stub for this interpreter. The stub embeds libpython and must load
    the venv's own (LIBDIR first on LD_LIBRARY_PATH) and find the venv's `python3` first on PATH.
    """
    root = _pytriton_root()
    if root is None:
        return None
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = root / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise LaunchError(f"The nvidia-pytriton wheel has no python-backend stub for Python {version}.")
    backends = cache_dir() / "triton_backends" / version
    target_stub = backends / "python" / "triton_python_backend_stub"
    if not target_stub.is_file():
        _copy_backends(root / "backends", stub, backends)
    libs = root.parent.parent / "nvidia_pytriton.libs"
    pylibdir = sysconfig.get_config_var("LIBDIR") or ""
    ld_path = os.pathsep.join(p for p in (str(libs), pylibdir, os.environ.get("LD_LIBRARY_PATH", "")) if p)
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join([venv_bin, os.environ.get("PATH", "/usr/bin:/bin")])
    return TritonInstall(
        binary=root / "bin" / "tritonserver",
        backend_dir=backends,
        env={"LD_LIBRARY_PATH": ld_path, "PATH": path},
        source="nvidia-pytriton wheel",
    )


def find_tritonserver(explicit: str | os.PathLike | None = None) -> TritonInstall:
    """Explicit path, then $TRITONSERVER, then NVIDIA's container path, then the pytriton wheel."""
    for candidate, source in ((explicit, "explicit"), (os.environ.get(ENV_BINARY), f"${ENV_BINARY}")):
        if candidate:
            path = Path(candidate)
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise LaunchError(f"tritonserver given by {source} is not an executable file: {path}")
            return TritonInstall(binary=path, source=source)
    if NVIDIA_CONTAINER_BINARY.is_file():
        return TritonInstall(binary=NVIDIA_CONTAINER_BINARY, source="NVIDIA container")
    wheel = _wheel_install()
    if wheel is not None:
        return wheel
    raise LaunchError(
        "No tritonserver found: pass --tritonserver PATH, set $TRITONSERVER, run inside NVIDIA's "
        "Triton container, or install the pinned requirements (nvidia-pytriton ships one)."
    )
