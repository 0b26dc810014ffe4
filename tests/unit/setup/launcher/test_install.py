"""setup/launcher/install.py: the order tritonserver is looked for in (explicit, $TRITONSERVER, NVIDIA's
container, the nvidia-pytriton wheel), the clear message when there is none, and the wheel's backends copy,
made once in the cache. The wheel is a stand-in package tree in tmp_path put first on sys.path."""

from __future__ import annotations

import importlib
import os
import stat
import sys
from pathlib import Path

import pytest

from setup.launcher import install
from setup.launcher.install import find_tritonserver
from setup.launcher.options import LaunchError

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def no_container(tmp_path, monkeypatch):
    """No NVIDIA container binary and no $TRITONSERVER on this 'machine'; the cache in tmp_path."""
    monkeypatch.setattr(install, "NVIDIA_CONTAINER_BINARY", tmp_path / "opt" / "tritonserver")
    monkeypatch.delenv("TRITONSERVER", raising=False)
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))


def fake_wheel(tmp_path, monkeypatch, binary=True, stub=True) -> Path:
    """A pytriton package on sys.path (before the real one); returns its tritonserver folder."""
    site = tmp_path / "site"
    root = site / "pytriton" / "tritonserver"
    (site / "pytriton").mkdir(parents=True)
    (site / "pytriton" / "__init__.py").write_text("")
    if binary:
        executable(root / "bin" / "tritonserver")
    (root / "backends" / "python").mkdir(parents=True)
    (root / "backends" / "python" / "libtriton_python.so").write_bytes(b"lib")
    if stub:
        executable(root / "python_backend_stubs" / VERSION / "triton_python_backend_stub")
    monkeypatch.delitem(sys.modules, "pytriton", raising=False)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    return root


def test_nothing_found_says_every_way_to_get_one(tmp_path, monkeypatch, no_container):
    fake_wheel(tmp_path, monkeypatch, binary=False)  # a pytriton without its server counts as none
    with pytest.raises(LaunchError) as raised:
        find_tritonserver()
    message = str(raised.value)
    assert message.startswith("No tritonserver found")
    for way in ("--tritonserver PATH", "$TRITONSERVER", "NVIDIA's Triton container", "nvidia-pytriton"):
        assert way in message


@pytest.mark.parametrize("make", ["folder", "plain file", "missing"])
def test_a_given_path_must_be_an_executable_file(tmp_path, no_container, make):
    path = tmp_path / "tritonserver"
    if make == "folder":
        path.mkdir()
    elif make == "plain file":
        path.write_text("not executable")
    with pytest.raises(LaunchError, match=f"given by explicit is not an executable file: {path}"):
        find_tritonserver(path)


def test_a_bad_environment_variable_is_named(tmp_path, monkeypatch, no_container):
    monkeypatch.setenv("TRITONSERVER", str(tmp_path / "nope"))
    with pytest.raises(LaunchError, match=r"given by \$TRITONSERVER is not an executable file"):
        find_tritonserver()
    good = executable(tmp_path / "bin" / "tritonserver")
    assert find_tritonserver(str(good)).binary == good  # an explicit path wins over the variable


def test_the_container_binary_comes_before_the_wheel(tmp_path, monkeypatch, no_container):
    fake_wheel(tmp_path, monkeypatch)
    container = executable(tmp_path / "opt" / "tritonserver")
    found = find_tritonserver()
    assert found.binary == container and found.source == "NVIDIA container" and found.env == {}


def test_a_wheel_without_a_stub_for_this_python_is_refused(tmp_path, monkeypatch, no_container):
    fake_wheel(tmp_path, monkeypatch, stub=False)
    with pytest.raises(LaunchError, match=f"no python-backend stub for Python {VERSION}"):
        find_tritonserver()


def test_the_wheel_gets_a_backends_copy_with_its_stub_and_the_venvs_paths(tmp_path, monkeypatch, no_container):
    root = fake_wheel(tmp_path, monkeypatch)
    found = find_tritonserver()
    assert found.source == "nvidia-pytriton wheel" and found.binary == root / "bin" / "tritonserver"
    assert found.backend_dir == tmp_path / "cache" / "triton_backends" / VERSION
    assert (found.backend_dir / "python" / "libtriton_python.so").read_bytes() == b"lib"
    stub = found.backend_dir / "python" / "triton_python_backend_stub"
    assert os.access(stub, os.X_OK)
    assert found.env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert found.env["LD_LIBRARY_PATH"].split(os.pathsep)[0] == str(tmp_path / "site" / "nvidia_pytriton.libs")
    assert not (tmp_path / "cache" / "triton_backends" / f"{VERSION}.tmp").exists()

    (found.backend_dir / "python" / "marker").write_text("made once")
    again = find_tritonserver()
    assert again.backend_dir == found.backend_dir and (again.backend_dir / "python" / "marker").exists()


def test_starts_at_the_same_time_copy_the_backends_once(tmp_path, monkeypatch, no_container):
    """Parallel test workers (or a demo beside a test run) start tritonservers at once: one copies, the others
    wait for its copy and use it."""
    import threading

    fake_wheel(tmp_path, monkeypatch)
    copies = []
    real_copytree = install.shutil.copytree
    monkeypatch.setattr(install.shutil, "copytree", lambda src, dst, *a, **k: copies.append(dst) or real_copytree(src, dst, *a, **k))
    found, errors = [], []

    def start():
        try:
            found.append(find_tritonserver().backend_dir)
        except Exception as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and [Path(c).name for c in copies].count(f"{VERSION}.tmp") == 1 and len(set(found)) == 1 and len(found) == 4
    assert os.access(found[0] / "python" / "triton_python_backend_stub", os.X_OK)
    assert sorted(p.name for p in found[0].parent.iterdir()) == [f".{VERSION}.lock", VERSION]
