"""Workspace roots: the folders a web user may make the app read from or write to.

A path is inside the workspace when, after `~`, `..` and symbolic links are resolved, it lies in one of
the roots. Roots are never `/` or a system folder. Used by the web app's Build and Adapters handlers;
the command line (run by the machine's own user) is not confined.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from setup.messages import MSG_EMPTY, MSG_OUTSIDE, MSG_SYSTEM_ROOT

# Folders (and everything under them) that may never be a root.
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin",
                "/sys", "/usr")
# Folders that may not be a root themselves (their subfolders may).
SYSTEM_FOLDERS = ("/", "/home", "/mnt", "/media", "/opt", "/srv", "/tmp", "/var")



class WorkspaceError(ValueError):
    """A folder is outside the workspace, or cannot be a workspace root; the message says which."""


def _is_system(path: Path) -> bool:
    text = str(path)
    if text in SYSTEM_FOLDERS:
        return True
    return any(text == tree or text.startswith(tree + "/") for tree in SYSTEM_TREES)


def check_root(path: str | os.PathLike) -> Path:
    """The resolved root; WorkspaceError for `/` and system folders."""
    resolved = Path(path).expanduser().resolve()
    if _is_system(resolved):
        raise WorkspaceError(MSG_SYSTEM_ROOT.format(path=path))
    return resolved


def default_roots() -> tuple[Path, ...]:
    """The current folder and the user's home, leaving out any that is / or a system folder."""
    roots = []
    for candidate in (Path.cwd(), Path.home()):
        resolved = candidate.resolve()
        if not _is_system(resolved) and resolved not in roots:
            roots.append(resolved)
    return tuple(roots)


@dataclass(frozen=True)
class Workspace:
    """The roots web users' folders must lie in."""

    roots: tuple[Path, ...]

    @classmethod
    def from_paths(cls, paths: tuple[str, ...] | list[str] | None) -> Workspace:
        """Explicit roots (checked), or the defaults when none are given."""
        if not paths:
            return cls(default_roots())
        return cls(tuple(dict.fromkeys(check_root(p) for p in paths)))

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots) or "none configured"

    def resolve(self, path: str | os.PathLike, what: str = "folder") -> Path:
        """`path` resolved (`~`, `..`, symbolic links) when it lies inside a root; WorkspaceError otherwise."""
        text = str(path).strip()
        if not text:
            raise WorkspaceError(MSG_EMPTY.format(what=what))
        resolved = Path(text).expanduser().resolve()
        if any(resolved == root or resolved.is_relative_to(root) for root in self.roots):
            return resolved
        raise WorkspaceError(MSG_OUTSIDE.format(what=what, path=text, roots=self.describe()))
