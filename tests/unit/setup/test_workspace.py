"""Workspace roots: resolved paths, symbolic links and '..' cannot leave them; system folders are no roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from setup.workspace import Workspace, WorkspaceError, check_root, default_roots


@pytest.mark.parametrize("path", ["/", "/etc", "/usr/lib", "/proc/self", "/var", "/home", "/tmp"])
def test_system_folders_cannot_be_roots(path):
    with pytest.raises(WorkspaceError, match="system folder"):
        check_root(path)


def test_ordinary_folders_can_be_roots(tmp_path):
    assert check_root(tmp_path / "a" / ".." / "b") == (tmp_path / "b").resolve()
    assert check_root("/var/lib/models") == Path("/var/lib/models")


def test_default_roots_are_cwd_and_home_but_never_system(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_roots() == (tmp_path.resolve(), (tmp_path / "home").resolve())
    monkeypatch.chdir("/")
    assert Path("/") not in default_roots()


def test_resolve_confines_dotdot_and_links(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "escape").symlink_to(tmp_path, target_is_directory=True)
    ws = Workspace.from_paths([str(root)])
    assert ws.resolve(str(root / "sub" / "new")) == (root / "sub" / "new").resolve()
    assert ws.resolve(str(root)) == root.resolve()
    for bad in (str(root / ".." / "other"), str(root / "escape" / "x"), "/etc", str(tmp_path / "root2")):
        with pytest.raises(WorkspaceError, match="outside the folders this app may use"):
            ws.resolve(bad, what="output folder")
    with pytest.raises(WorkspaceError, match="empty"):
        ws.resolve("  ")


def test_message_names_the_folder_kind_and_the_roots(tmp_path):
    ws = Workspace.from_paths([str(tmp_path)])
    with pytest.raises(WorkspaceError) as err:
        ws.resolve("/etc/x", what="TensorRT-LLM source tree")
    assert "TensorRT-LLM source tree '/etc/x'" in str(err.value) and str(tmp_path) in str(err.value)
    assert "--workspace" in str(err.value)
