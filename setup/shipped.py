"""The project's own data files under setup/data/, read once each (may import setup.paths only)."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from setup.paths import DATA_DIR


@cache
def shipped_yaml(name: str) -> Any:
    """The parsed YAML file `name` (a path under setup/data/). The result is shared: callers must not change it."""
    return yaml.safe_load((DATA_DIR / name).read_text(encoding="utf-8"))
