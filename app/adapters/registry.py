"""LoRA adapters by name: a folder of adapters, stable task ids, and streams that manage the server cache.

Each subfolder of the adapters folder is one adapter: a PEFT folder (adapter_config.json +
adapter_model.safetensors/.bin) or an already converted pair (model.lora_weights.npy +
model.lora_config.npy). An adapter's task id comes from its files (app/adapters/task_ids.py): the same weights
have the same id in every app and folder, changed weights a new one.

The registry remembers which task ids the server holds as far as it knows: the first request with an
adapter sends id + weights + config, later ones the id alone; `AdapterStream` (app/adapters/stream.py)
re-sends the weights and retries once when the server answers that the task is not in its cache.
Weights are sent as float16 (the backend's TYPE_FP16 input). Adding adapters from a folder or an
uploaded zip is checked by app/adapters/intake.py.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.adapters.audit import AdapterAudit, AuditBook, LoraTarget, refuse_unusable
from app.adapters.cache_watch import CacheWatch
from app.adapters.intake import (
    MAX_UNPACKED_BYTES,
    MAX_ZIP_BYTES,
    AdapterError,
    adapter_kind,
    check_name,
    check_zip_size,
    copy_adapter_files,
    open_zip,
    os_reason,
    unpack_adapter,
)
from app.adapters.messages import MSG_ADD_FAILED, MSG_BF16, MSG_EXISTS, MSG_NOT_ADAPTER, MSG_UNKNOWN
from app.adapters.stream import AdapterStream, lora_bytes
from app.adapters.task_ids import fingerprint, task_id_of
from setup.lora.convert import (
    TRT_MODULE_IDS,
    ConvertedLora,
    LoraConvertError,
    convert_peft,
    load_converted,
    save_converted,
)
from setup.lora.engine import check_against_engine, load_engine_spec
from setup.lora.record import TrainingPair, read_record
from setup.paths import PROJECT_ROOT

__all__ = ["DEFAULT_ADAPTERS_DIR", "AdapterError", "AdapterInfo", "AdapterRegistry",
           "AdapterStream", "adapter_kind", "lora_bytes"]

DEFAULT_ADAPTERS_DIR = PROJECT_ROOT / "adapters"



@dataclass(frozen=True)
class AdapterInfo:
    """One adapter as the UI lists it."""

    name: str
    task_id: int
    rank: int
    target_modules: tuple[str, ...]
    size_bytes: int  # bytes of lora_weights + lora_config sent on first use
    held_by_server: bool  # as far as this client knows
    kind: str  # "peft" or "converted"
    path: Path


@dataclass(frozen=True)
class _Loaded:
    fingerprint: str
    kind: str
    weights: np.ndarray  # [1, rows, row_len] float16
    config: np.ndarray  # [1, rows, 3] int32
    converted: ConvertedLora


class AdapterRegistry:
    """The adapters folder, each adapter's task id and tensors, and what the server holds."""

    def __init__(self, folder: Path = DEFAULT_ADAPTERS_DIR, engine_dir: Path | None = None,
                 max_zip_bytes: int = MAX_ZIP_BYTES, max_unpacked_bytes: int = MAX_UNPACKED_BYTES):
        self.folder = Path(folder)
        self.engine_dir = Path(engine_dir) if engine_dir else None
        self.max_zip_bytes = max_zip_bytes
        self.max_unpacked_bytes = max_unpacked_bytes
        self._lock = threading.RLock()
        self._loaded: dict[str, _Loaded] = {}
        self._stamps: dict[str, tuple] = {}
        self._held: set[int] = set()
        self.audits = AuditBook()
        self.cache_watch = CacheWatch()  # what the server's LoRA cache holds, as the streams saw it

    # ---- reading adapters ----------------------------------------------------------------------
    def names(self) -> list[str]:
        """Adapter names in the folder (sorted); folders that are not adapters are left out."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.iterdir()
                      if p.is_dir() and not p.name.startswith(".") and adapter_kind(p) is not None)

    def _folder_of(self, name: str) -> Path:
        check_name(name)
        path = self.folder / name
        if not path.is_dir() or adapter_kind(path) is None:
            raise AdapterError(MSG_UNKNOWN.format(name=name))
        return path

    def _stamp(self, path: Path) -> tuple:
        return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(path.iterdir()) if p.is_file())

    def _load(self, name: str) -> _Loaded:
        """Convert (or read) an adapter once per content; checked against the engine when known."""
        with self._lock:
            path = self._folder_of(name)
            stamp = self._stamp(path)
            cached = self._loaded.get(name)
            if cached is not None and self._stamps.get(name) == stamp:
                return cached
            kind = adapter_kind(path)
            loaded = self._read(path, kind, name)
            self._loaded[name], self._stamps[name] = loaded, stamp
            return loaded

    def _read(self, path: Path, kind: str, where: str) -> _Loaded:
        try:
            if kind == "peft":
                converted = convert_peft(path, "float16")
            else:
                converted = load_converted(path)
                if converted.dtype == "bfloat16":
                    raise AdapterError(MSG_BF16.format(where=where))
                converted = ConvertedLora(weights=converted.weights.astype(np.float16), config=converted.config,
                                          dtype="float16")
            if self.engine_dir is not None:
                check_against_engine(converted, load_engine_spec(self.engine_dir), dropping=True)  # as the audit
        except LoraConvertError as exc:
            raise AdapterError(f"Adapter '{where}': {exc}") from None
        return _Loaded(fingerprint=fingerprint(path, kind), kind=kind, weights=converted.weights,
                       config=converted.config, converted=converted)

    def task_id(self, name: str) -> int:
        """The adapter's stable task id (>= 1)."""
        return task_id_of(self._load(name).fingerprint)

    def tensors(self, name: str, modules: frozenset[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(lora_weights float16 [1, rows, row_len], lora_config int32 [1, rows, 3]); with `modules` (TensorRT-LLM
        module names), only their rows: what the deployment applies (the audit names the rest dropped)."""
        loaded = self._load(name)
        if modules is None:
            return loaded.weights, loaded.config
        keep = np.isin(loaded.config[0, :, 0], [TRT_MODULE_IDS[m] for m in modules if m in TRT_MODULE_IDS])
        return loaded.weights[:, keep], loaded.config[:, keep]

    def audit(self, name: str, target: LoraTarget) -> AdapterAudit:
        """What `target` applies of the adapter (setup/lora/audit.py), kept while its files do not change."""
        path = self._folder_of(name)
        return self.audits.of(path, self._stamp(path), target)

    def audit_at(self, folder: Path, target: LoraTarget) -> AdapterAudit:
        """What `target` applies of an adapter folder outside the adapters folder (a runner engine's copy of a
        built-in adapter), kept the same way."""
        return self.audits.of(Path(folder), self._stamp(Path(folder)), target)

    def info(self, name: str) -> AdapterInfo:
        loaded = self._load(name)
        task_id = self.task_id(name)
        converted = loaded.converted
        return AdapterInfo(
            name=name, task_id=task_id, rank=converted.rank, target_modules=converted.hf_modules,
            size_bytes=int(loaded.weights.nbytes + loaded.config.nbytes), held_by_server=self.is_held(task_id),
            kind=loaded.kind, path=self.folder / name,
        )

    def training_pairs(self, name: str) -> tuple[TrainingPair, ...]:
        """The pairs the adapter was trained on when this app trained it (read from its folder), else ()."""
        try:
            return read_record(self._folder_of(name))
        except AdapterError:
            return ()

    def list(self) -> list[AdapterInfo]:
        """Every usable adapter; see `problems()` for folders that failed to load."""
        out = []
        for name in self.names():
            try:
                out.append(self.info(name))
            except AdapterError:
                continue
        return out

    def problems(self) -> dict[str, str]:
        """name -> message for adapter folders that cannot be used (bad files, wrong engine)."""
        out = {}
        for name in self.names():
            try:
                self._load(name)
            except AdapterError as exc:
                out[name] = str(exc)
        return out

    # ---- what the server holds ----------------------------------------------------------------------
    def is_held(self, task_id: int) -> bool:
        with self._lock:
            return task_id in self._held

    def mark_held(self, task_id: int) -> None:
        with self._lock:
            self._held.add(task_id)

    def mark_not_held(self, task_id: int) -> None:
        with self._lock:
            self._held.discard(task_id)

    def forget_server_state(self) -> None:
        """The server restarted (or may have): assume it holds no adapter."""
        with self._lock:
            self._held.clear()
        self.cache_watch.forget()

    def saw_cache(self, event: str, name: str, task_id: int) -> None:
        """A stream's cache outcome (app/adapters/cache_watch.py) for the Server tab."""
        self.cache_watch.record(event, name, task_id)

    def observe_server(self, live: bool) -> None:
        """Feed the app's server status polls: an unreachable server forgets everything it held."""
        if not live:
            self.forget_server_state()

    def extra_inputs(self, name: str, first_use: bool | None = None,
                     modules: frozenset[str] | None = None) -> dict[str, object]:
        """Request inputs for an adapter: the task id, plus weights and config on first use (only the rows of
        `modules` when given). first_use=None decides from what the server is known to hold.
        """
        task_id = self.task_id(name)
        if first_use is None:
            first_use = not self.is_held(task_id)
        inputs: dict[str, object] = {"lora_task_id": task_id}
        if first_use:
            weights, config = self.tensors(name, modules)
            inputs.update(lora_weights=weights, lora_config=config)
        return inputs

    # ---- streaming -------------------------------------------------------------------------------
    def stream(self, client, adapter: str | None, prompt: str, params,
               extra: Mapping[str, object] | None = None, modules: frozenset[str] | None = None) -> AdapterStream:
        """Start a streaming request with an adapter (None or "" for the base model); `modules`: see tensors()."""
        return AdapterStream(self, client, adapter, prompt, params, extra, modules)

    def generate(self, client, adapter: str | None, prompt: str, params,
                 extra: Mapping[str, object] | None = None) -> str:
        stream = self.stream(client, adapter, prompt, params, extra)
        for _ in stream:
            pass
        return stream.text

    # ---- adding and removing -------------------------------------------------------------------
    def add_folder(self, source: Path, name: str | None = None, shown_name: str | None = None,
                   target: LoraTarget | None = None) -> AdapterInfo:
        """Copy an adapter folder (PEFT or converted pair) into the registry after checking it.

        Messages name the folder by `shown_name` (the path as the user typed it, when the caller resolved it
        to another path) or `source`, never the staging or adapters folder. An adapter `target` (what the deployment
        applies) would refuse is refused here.
        """
        source = Path(source)
        shown = shown_name or str(source)
        if not source.is_dir():
            raise AdapterError(f"{shown} is not a folder.")
        name = check_name(name or source.name)
        if adapter_kind(source) is None:
            raise AdapterError(MSG_NOT_ADAPTER.format(where=shown))
        with self._staging(name, shown=shown) as staging:
            copy_adapter_files(source, staging, shown)
            return self._install(staging, name, shown=shown, target=target)

    def add_zip(self, zip_path: Path, name: str | None = None, shown_name: str | None = None,
                target: LoraTarget | None = None) -> AdapterInfo:
        """Unpack an uploaded zip (size-limited; no absolute paths, '..', links or passwords) and add it.

        Messages name the zip by `shown_name` (the name it was uploaded as, when the caller knows it) or its
        base name, never the server folder it was uploaded to or the adapters folder; a refused zip leaves
        nothing behind (it is unpacked into a staging folder that is removed).
        """
        zip_path = Path(zip_path)
        shown = Path(shown_name).name if shown_name else zip_path.name
        check_zip_size(zip_path, self.max_zip_bytes)
        name = check_name(name or Path(shown).stem)
        archive = open_zip(zip_path, shown)
        with archive, self._staging(name, shown=shown) as staging:
            unpack_adapter(archive, staging, self.max_unpacked_bytes)
            if adapter_kind(staging) is None:
                raise AdapterError(MSG_NOT_ADAPTER.format(where=shown))
            return self._install(staging, name, shown=shown, target=target)

    @contextmanager
    def _staging(self, name: str, shown: str) -> Iterator[Path]:
        """A hidden folder inside the adapters folder, removed afterwards unless it was installed.

        An OSError (disk full, no permission) becomes an AdapterError naming `shown` (what the user gave),
        not the server's folders.
        """
        if (self.folder / name).exists():
            raise AdapterError(MSG_EXISTS.format(name=name))
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix=f".adding-{name}-", dir=self.folder) as staging:
                yield Path(staging)
        except OSError as exc:
            raise AdapterError(MSG_ADD_FAILED.format(where=shown, reason=os_reason(exc))) from None

    def _install(self, staging: Path, name: str, shown: str, target: LoraTarget | None = None) -> AdapterInfo:
        try:
            self._read(staging, adapter_kind(staging), name)  # refuse before it appears in the folder
            refuse_unusable(staging, target, shown)
        except AdapterError as exc:  # its message names files in the staging folder: name what the user gave
            message = str(exc)
            for folder in {str(staging.resolve()), str(staging)}:
                message = message.replace(folder, shown)
            raise AdapterError(message) from None
        destination = self.folder / name
        with self._lock:
            if destination.exists():
                raise AdapterError(MSG_EXISTS.format(name=name))
            staging.rename(destination)
            staging.mkdir()  # TemporaryDirectory cleans up this empty folder
        return self.info(name)

    def remove(self, name: str) -> None:
        """Delete an adapter folder."""
        path = self._folder_of(name)
        with self._lock:
            self._loaded.pop(name, None)
            self._stamps.pop(name, None)
            shutil.rmtree(path)

    # ---- prefetch folder for the repository writer ----------------------------------------------------
    def write_prefetch_dir(self, out: Path, names: list[str] | None = None) -> Path:
        """Write `<out>/<task id>/model.lora_{weights,config}.npy` for the backend's lora_prefetch_dir."""
        out = Path(out)
        for name in names if names is not None else self.names():
            loaded = self._load(name)
            save_converted(ConvertedLora(weights=loaded.weights, config=loaded.config, dtype="float16"),
                           out / str(self.task_id(name)))
        out.mkdir(parents=True, exist_ok=True)
        return out
