"""Registry (JSON) of built engines: config hash, TensorRT-LLM version, date; staleness against the install."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from setup.catalog import messages as M
from setup.paths import cache_dir


def installed_trtllm_version() -> str | None:
    """The installed tensorrt_llm package version, or None when it is not installed."""
    try:
        return metadata.version("tensorrt_llm")
    except metadata.PackageNotFoundError:
        return None


def _parts(version: str) -> tuple[str, ...]:
    return tuple(str(version).strip().lstrip("v").split("+")[0].split("."))


def same_version(built: str, installed: str) -> bool:
    """Equal to the precision both give: '0.19' matches '0.19.0' and '0.19.1'; '0.19.0' differs from '0.19.1'."""
    a, b = _parts(built), _parts(installed)
    n = min(len(a), len(b))
    return a[:n] == b[:n]


@dataclass(frozen=True)
class EngineRecord:
    engine_dir: str
    family: str
    config_hash: str
    trtllm_version: str
    built_at: str
    dtype: str = ""
    world_size: int = 1


def default_registry_path() -> Path:
    return cache_dir() / "engine_registry.json"


class EngineRegistry:
    """Built engines by folder; a rebuild of the same folder replaces its record."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else default_registry_path()
        self._lock = threading.Lock()

    def entries(self) -> list[EngineRecord]:
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []
        fields = EngineRecord.__dataclass_fields__
        return [EngineRecord(**{k: v for k, v in r.items() if k in fields}) for r in raw if isinstance(r, dict)]

    def record(self, engine_dir: str | Path, family: str, config_hash: str, trtllm_version: str,
               dtype: str = "", world_size: int = 1) -> EngineRecord:
        entry = EngineRecord(str(Path(engine_dir).resolve()), family, config_hash, trtllm_version,
                             time.strftime("%Y-%m-%dT%H:%M:%S%z"), dtype, world_size)
        with self._lock:
            kept = [e for e in self.entries() if e.engine_dir != entry.engine_dir]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps([asdict(e) for e in (*kept, entry)], indent=1))
            tmp.replace(self.path)
        return entry

    def find(self, engine_dir: str | Path) -> EngineRecord | None:
        target = str(Path(engine_dir).resolve())
        return next((e for e in self.entries() if e.engine_dir == target), None)

    @staticmethod
    def is_stale(entry: EngineRecord, installed: str | None) -> bool | None:
        """True when the installed TensorRT-LLM differs from the one that built it; None when not installed."""
        if installed is None:
            return None
        return not same_version(entry.trtllm_version, installed)

    def status(self, entry: EngineRecord, installed: str | None = None, probe: bool = True) -> str:
        installed = installed if installed is not None or not probe else installed_trtllm_version()
        stale = self.is_stale(entry, installed)
        if stale is None:
            return M.ENGINE_UNKNOWN
        return M.ENGINE_STALE.format(built=entry.trtllm_version, installed=installed) if stale else M.ENGINE_CURRENT
