"""The pytest-xdist scheduler of the server pass: `--dist loadgroup` with the groups of tests/server_groups.py.

xdist 3.8 hands a test's `xdist_group` to its scheduler by appending "@group" to the test id, which pytest 9.2's
structured ids no longer take (pytest-xdist issue #1386): the tests would spread as if unmarked. So each worker
writes the groups it computed into the run's temporary folder, and this scheduler reads them by test id; ids that
carry "@group" (an xdist that works again) are split as xdist does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from xdist.scheduler import LoadGroupScheduling

GROUPS_FILE = "server-groups.json"


def write_groups(folder: Path, groups: dict[str, str]) -> None:
    """Write `groups` (test id -> group) for the scheduler, whole or not at all (workers write the same)."""
    staging = folder / f".{GROUPS_FILE}.{os.getpid()}"
    staging.write_text(json.dumps(groups), encoding="utf-8")
    staging.replace(folder / GROUPS_FILE)


class GroupsFile:
    """The workers' groups, read once when first asked (the file is then removed: nothing is left in the run's
    temporary folder)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._groups: dict[str, str] | None = None

    def group(self, nodeid: str) -> str | None:
        if self._groups is None:
            self._groups = {}
            path = self.folder / GROUPS_FILE if self.folder else None
            if path is not None and path.is_file():
                self._groups = json.loads(path.read_text(encoding="utf-8"))
                path.unlink()
        return self._groups.get(nodeid)


class ServerGroupScheduling(LoadGroupScheduling):
    """LoadGroupScheduling whose groups come from the workers' file; ids with "@group" are split as xdist does."""

    def __init__(self, config, log=None, folder: Path | None = None) -> None:
        super().__init__(config, log)
        self._file = GroupsFile(folder)

    def _split_scope(self, nodeid: str) -> str:
        return self._file.group(nodeid) or super()._split_scope(nodeid)
