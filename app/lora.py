"""LoRA adapters by name: a folder of adapters, stable task ids, and streams that manage the server cache.

Each subfolder of the adapters folder is one adapter: a PEFT folder (adapter_config.json +
adapter_model.safetensors/.bin) or an already converted pair (model.lora_weights.npy +
model.lora_config.npy). Task ids live in `task_ids.json` in that folder: an adapter keeps its id while
its files are unchanged; new or changed adapters get the next id (ids start at 1 and are never reused,
so a server never mixes up an old adapter's cached weights with a new one's).

The registry remembers which task ids the server holds as far as it knows: the first request with an
adapter sends id + weights + config, later ones the id alone. When the server answers that the task
is not in its cache (evicted, or the server restarted), `AdapterStream` re-sends the weights and
retries once, before any text was shown. Weights are sent as float16 (the backend's TYPE_FP16 input).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from app.errors import ChatError, LoraCacheFull, LoraNotInCache, ServerUnreachable
from setup.lora import (
    CONFIG_FILE,
    FILE_MODE,
    PEFT_BIN,
    PEFT_CONFIG,
    PEFT_SAFETENSORS,
    WEIGHTS_FILE,
    ConvertedLora,
    LoraConvertError,
    check_against_engine,
    convert_peft,
    load_converted,
    load_engine_spec,
    save_converted,
)
from setup.paths import PROJECT_ROOT

DEFAULT_ADAPTERS_DIR = PROJECT_ROOT / "adapters"
TASK_IDS_FILE = "task_ids.json"
BASE_MODEL = "base model"  # the dropdown entry for no adapter
ADAPTER_FILES = (PEFT_CONFIG, PEFT_SAFETENSORS, PEFT_BIN, WEIGHTS_FILE, CONFIG_FILE, "README.md")
MAX_ZIP_BYTES = 256 * 1024 * 1024
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ZIP_JUNK = ("__MACOSX/", ".DS_Store")
LORA_INPUTS = ("lora_task_id", "lora_weights", "lora_config")

MSG_BAD_NAME = ("Adapter name '{name}' is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit.")
MSG_EXISTS = "An adapter named '{name}' already exists; remove it first or pick another name."
MSG_UNKNOWN = "There is no adapter named '{name}'."
MSG_NOT_ADAPTER = ("{where} is not an adapter: it needs adapter_config.json with adapter_model.safetensors "
                   "(or .bin), or model.lora_weights.npy with model.lora_config.npy.")
MSG_BF16 = ("{where} holds bfloat16 weights (uint16 bit patterns); the server's lora_weights input is float16. "
            "Convert the PEFT adapter again with --dtype float16.")
MSG_ZIP_TOO_BIG = "The zip file is {size:.0f} MB; the limit is {limit:.0f} MB."
MSG_UNPACKED_TOO_BIG = "The zip would unpack to {size:.0f} MB; the limit is {limit:.0f} MB."
MSG_NOT_ZIP = "{where} is not a valid zip file."
MSG_ZIP_ABSOLUTE = "The zip holds an absolute path ('{member}'); refusing to unpack it."
MSG_ZIP_TRAVERSAL = "The zip holds a path that leaves its folder ('{member}'); refusing to unpack it."
MSG_ZIP_SYMLINK = "The zip holds a symbolic link ('{member}'); refusing to unpack it."
MSG_ZIP_NESTED = "The zip must hold one adapter (files at the top or in one folder), found '{member}'."
MSG_FOLDER_SYMLINK = "{where} is a symbolic link; copy the real file into the adapter folder."


class AdapterError(ChatError):
    """An adapter cannot be added, found or used; the message says why."""


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


def adapter_kind(folder: Path) -> str | None:
    """'peft', 'converted' or None for a folder that is not an adapter."""
    if (folder / PEFT_CONFIG).is_file() and ((folder / PEFT_SAFETENSORS).is_file() or (folder / PEFT_BIN).is_file()):
        return "peft"
    if (folder / WEIGHTS_FILE).is_file() and (folder / CONFIG_FILE).is_file():
        return "converted"
    return None


def lora_bytes(inputs: Mapping[str, object]) -> int:
    """Bytes the LoRA inputs of a request put on the wire (task id, weights, config)."""
    total = 0
    for name in LORA_INPUTS:
        value = inputs.get(name)
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif value is not None:
            total += 8
    return total


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise AdapterError(MSG_BAD_NAME.format(name=name))
    return name


def _fingerprint(folder: Path, kind: str) -> str:
    names = (PEFT_CONFIG, PEFT_SAFETENSORS, PEFT_BIN) if kind == "peft" else (WEIGHTS_FILE, CONFIG_FILE)
    digest = hashlib.sha256()
    for name in names:
        path = folder / name
        if path.is_file():
            digest.update(name.encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


class TaskIds:
    """name -> (task id, fingerprint), persisted as JSON; ids start at 1 and are never reused."""

    def __init__(self, path: Path):
        self.path = path
        self.next_id = 1
        self.entries: dict[str, dict] = {}
        self._load()

    def _load(self) -> None:
        try:
            raw = json.loads(self.path.read_text())
            self.entries = {k: v for k, v in raw.get("adapters", {}).items() if int(v.get("task_id", 0)) > 0}
            used = [int(v["task_id"]) for v in self.entries.values()]
            self.next_id = max([int(raw.get("next_id", 1)), *(i + 1 for i in used), 1])
        except (OSError, ValueError, TypeError, AttributeError, KeyError):
            self.entries, self.next_id = {}, 1

    def save(self) -> None:
        data = {"next_id": self.next_id, "adapters": dict(sorted(self.entries.items()))}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            with os.fdopen(fd, "w") as handle:
                handle.write(json.dumps(data, indent=2) + "\n")
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only adapters folder: ids stay stable for this process only

    def id_for(self, name: str, fingerprint: str) -> int:
        entry = self.entries.get(name)
        if entry is not None and entry.get("fingerprint") == fingerprint:
            return int(entry["task_id"])
        task_id, self.next_id = self.next_id, self.next_id + 1
        self.entries[name] = {"task_id": task_id, "fingerprint": fingerprint}
        self.save()
        return task_id

    def drop(self, name: str) -> None:
        if self.entries.pop(name, None) is not None:
            self.save()


class AdapterRegistry:
    """The adapters folder, each adapter's task id and tensors, and what the server holds."""

    def __init__(self, folder: Path = DEFAULT_ADAPTERS_DIR, engine_dir: Path | None = None,
                 max_zip_bytes: int = MAX_ZIP_BYTES, max_unpacked_bytes: int = MAX_UNPACKED_BYTES):
        self.folder = Path(folder)
        self.engine_dir = Path(engine_dir) if engine_dir else None
        self.max_zip_bytes = max_zip_bytes
        self.max_unpacked_bytes = max_unpacked_bytes
        self._lock = threading.RLock()
        self._ids = TaskIds(self.folder / TASK_IDS_FILE)
        self._loaded: dict[str, _Loaded] = {}
        self._stamps: dict[str, tuple] = {}
        self._held: set[int] = set()

    # ---- reading adapters ----------------------------------------------------------------------
    def names(self) -> list[str]:
        """Adapter names in the folder (sorted); folders that are not adapters are left out."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.iterdir()
                      if p.is_dir() and not p.name.startswith(".") and adapter_kind(p) is not None)

    def _folder_of(self, name: str) -> Path:
        _check_name(name)
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
                check_against_engine(converted, load_engine_spec(self.engine_dir))
        except LoraConvertError as exc:
            raise AdapterError(f"Adapter '{where}': {exc}") from None
        return _Loaded(fingerprint=_fingerprint(path, kind), kind=kind, weights=converted.weights,
                       config=converted.config, converted=converted)

    def task_id(self, name: str) -> int:
        """The adapter's stable task id (>= 1)."""
        loaded = self._load(name)
        with self._lock:
            return self._ids.id_for(name, loaded.fingerprint)

    def tensors(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(lora_weights float16 [1, rows, row_len], lora_config int32 [1, rows, 3])."""
        loaded = self._load(name)
        return loaded.weights, loaded.config

    def info(self, name: str) -> AdapterInfo:
        loaded = self._load(name)
        task_id = self.task_id(name)
        converted = loaded.converted
        return AdapterInfo(
            name=name, task_id=task_id, rank=converted.rank, target_modules=converted.hf_modules,
            size_bytes=int(loaded.weights.nbytes + loaded.config.nbytes), held_by_server=self.is_held(task_id),
            kind=loaded.kind, path=self.folder / name,
        )

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

    def choices(self) -> list[str]:
        """Dropdown entries: "base model" then every usable adapter."""
        return [BASE_MODEL, *(a.name for a in self.list())]

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

    def observe_server(self, live: bool) -> None:
        """Feed the app's server status polls: an unreachable server forgets everything it held."""
        if not live:
            self.forget_server_state()

    def extra_inputs(self, name: str, first_use: bool | None = None) -> dict[str, object]:
        """Request inputs for an adapter: the task id, plus weights and config on first use.

        first_use=None decides from what the server is known to hold.
        """
        task_id = self.task_id(name)
        if first_use is None:
            first_use = not self.is_held(task_id)
        inputs: dict[str, object] = {"lora_task_id": task_id}
        if first_use:
            weights, config = self.tensors(name)
            inputs.update(lora_weights=weights, lora_config=config)
        return inputs

    # ---- streaming -------------------------------------------------------------------------------
    def stream(self, client, adapter: str | None, prompt: str, params,
               extra: Mapping[str, object] | None = None) -> AdapterStream:
        """Start a streaming request with an adapter (None, "" or "base model" for the base model)."""
        return AdapterStream(self, client, adapter, prompt, params, extra)

    def generate(self, client, adapter: str | None, prompt: str, params,
                 extra: Mapping[str, object] | None = None) -> str:
        stream = self.stream(client, adapter, prompt, params, extra)
        for _ in stream:
            pass
        return stream.text

    # ---- adding and removing -------------------------------------------------------------------
    def add_folder(self, source: Path, name: str | None = None) -> AdapterInfo:
        """Copy an adapter folder (PEFT or converted pair) into the registry after checking it."""
        source = Path(source)
        if not source.is_dir():
            raise AdapterError(f"{source} is not a folder.")
        name = _check_name(name or source.name)
        if adapter_kind(source) is None:
            raise AdapterError(MSG_NOT_ADAPTER.format(where=source))
        with self._staging(name) as staging:
            for file_name in ADAPTER_FILES:
                path = source / file_name
                if path.is_symlink():
                    raise AdapterError(MSG_FOLDER_SYMLINK.format(where=path))
                if path.is_file():
                    shutil.copyfile(path, staging / file_name)
            return self._install(staging, name)

    def add_zip(self, zip_path: Path, name: str | None = None) -> AdapterInfo:
        """Unpack an uploaded zip (size-limited; no absolute paths, '..' or links) and add it."""
        zip_path = Path(zip_path)
        size = zip_path.stat().st_size if zip_path.is_file() else 0
        if size > self.max_zip_bytes:
            raise AdapterError(MSG_ZIP_TOO_BIG.format(size=size / 1e6, limit=self.max_zip_bytes / 1e6))
        name = _check_name(name or zip_path.stem)
        try:
            archive = zipfile.ZipFile(zip_path)
        except (zipfile.BadZipFile, OSError):
            raise AdapterError(MSG_NOT_ZIP.format(where=zip_path.name)) from None
        with archive, self._staging(name) as staging:
            members = self._zip_members(archive)
            for info, file_name in members:
                self._extract(archive, info, staging / file_name)
            if adapter_kind(staging) is None:
                raise AdapterError(MSG_NOT_ADAPTER.format(where=zip_path.name))
            return self._install(staging, name)

    def _zip_members(self, archive: zipfile.ZipFile) -> list[tuple[zipfile.ZipInfo, str]]:
        """Safe (ZipInfo, file name) pairs of the adapter files in the archive; refuses unsafe entries."""
        entries = []
        for info in archive.infolist():
            member = info.filename
            if member.startswith(ZIP_JUNK) or PurePosixPath(member).name == ".DS_Store":
                continue
            if member.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", member):
                raise AdapterError(MSG_ZIP_ABSOLUTE.format(member=member))
            parts = PurePosixPath(member.replace("\\", "/")).parts
            if ".." in parts:
                raise AdapterError(MSG_ZIP_TRAVERSAL.format(member=member))
            if stat.S_ISLNK(info.external_attr >> 16):
                raise AdapterError(MSG_ZIP_SYMLINK.format(member=member))
            if not info.is_dir():
                entries.append((info, parts))
        tops = {parts[0] for _, parts in entries if len(parts) > 1}
        strip = 1 if len(tops) == 1 and all(len(parts) > 1 for _, parts in entries) else 0
        total = sum(info.file_size for info, _ in entries)
        if total > self.max_unpacked_bytes:
            raise AdapterError(MSG_UNPACKED_TOO_BIG.format(size=total / 1e6, limit=self.max_unpacked_bytes / 1e6))
        out = []
        for info, parts in entries:
            if len(parts) - strip != 1:
                raise AdapterError(MSG_ZIP_NESTED.format(member=info.filename))
            if parts[-1] in ADAPTER_FILES:
                out.append((info, parts[-1]))
        return out

    def _extract(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> None:
        written = 0
        with archive.open(info) as source, target.open("wb") as sink:
            for block in iter(lambda: source.read(1 << 20), b""):
                written += len(block)
                if written > self.max_unpacked_bytes:
                    raise AdapterError(MSG_UNPACKED_TOO_BIG.format(size=written / 1e6,
                                                                   limit=self.max_unpacked_bytes / 1e6))
                sink.write(block)

    @contextmanager
    def _staging(self, name: str) -> Iterator[Path]:
        """A hidden folder inside the adapters folder, removed afterwards unless it was installed."""
        if (self.folder / name).exists():
            raise AdapterError(MSG_EXISTS.format(name=name))
        self.folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".adding-{name}-", dir=self.folder) as staging:
            yield Path(staging)

    def _install(self, staging: Path, name: str) -> AdapterInfo:
        self._read(staging, adapter_kind(staging), name)  # refuse before it appears in the folder
        target = self.folder / name
        with self._lock:
            if target.exists():
                raise AdapterError(MSG_EXISTS.format(name=name))
            staging.rename(target)
            staging.mkdir()  # TemporaryDirectory cleans up this empty folder
        return self.info(name)

    def remove(self, name: str) -> None:
        """Delete an adapter folder; its task id is retired (never given to another adapter)."""
        path = self._folder_of(name)
        with self._lock:
            self._loaded.pop(name, None)
            self._stamps.pop(name, None)
            entry = self._ids.entries.get(name)
            if entry is not None:
                self._held.discard(int(entry["task_id"]))
            self._ids.drop(name)
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


class AdapterStream:
    """A streaming request with an adapter; iterate it for text deltas like `TokenStream`.

    The first attempt sends the weights unless the server is known to hold them. If the server
    answers that the task is not in its cache before any text arrived, the weights are sent again
    once. `lora_bytes_sent` counts the LoRA bytes of all attempts.
    """

    def __init__(self, registry: AdapterRegistry, client, adapter: str | None, prompt: str, params,
                 extra: Mapping[str, object] | None = None):
        self.registry = registry
        self.adapter = None if not adapter or adapter == BASE_MODEL else adapter
        self.task_id = registry.task_id(self.adapter) if self.adapter else None
        self.started_at = time.monotonic()
        self.first_token_at: float | None = None
        self.lora_bytes_sent = 0
        self.weights_sent = False
        self.retried = False
        self._client, self._prompt, self._params, self._extra = client, prompt, params, dict(extra or {})
        self._stream = None
        self._start(first_use=None)

    def _start(self, first_use: bool | None) -> None:
        inputs = self.registry.extra_inputs(self.adapter, first_use) if self.adapter else {}
        self._sent_weights_now = "lora_weights" in inputs
        self.weights_sent |= self._sent_weights_now
        self.lora_bytes_sent += lora_bytes(inputs)
        try:
            self._stream = self._client.stream(self._prompt, self._params, {**self._extra, **inputs})
        except ChatError as exc:
            self._stream = None
            self._failed(exc)

    def _failed(self, exc: ChatError) -> None:
        """Retry once on 'not in cache' before any text; otherwise re-raise."""
        if isinstance(exc, ServerUnreachable):
            self.registry.forget_server_state()
        if self.task_id is not None and isinstance(exc, LoraNotInCache | LoraCacheFull):
            self.registry.mark_not_held(self.task_id)
            shown = self._stream is not None and bool(self._stream.text)
            if isinstance(exc, LoraNotInCache) and not self.retried and not shown and not self._sent_weights_now:
                self.retried = True
                self._start(first_use=True)
                return
        raise exc

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while True:
            try:
                delta = next(self._stream)
            except StopIteration:
                self._succeeded()
                raise
            except ChatError as exc:
                self._failed(exc)  # either raises or has started the retry
                continue
            self._succeeded()
            if delta and self.first_token_at is None:
                self.first_token_at = time.monotonic()
            return delta

    def _succeeded(self) -> None:
        if self.task_id is not None and not self._stream.cancelled:
            self.registry.mark_held(self.task_id)

    def cancel(self) -> None:
        if self._stream is not None:
            self._stream.cancel()

    @property
    def text(self) -> str:
        return self._stream.text if self._stream is not None else ""

    @property
    def cancelled(self) -> bool:
        return self._stream is not None and self._stream.cancelled

    @property
    def request_id(self) -> str:
        return self._stream.request_id if self._stream is not None else ""

    @property
    def responses(self) -> int:
        return self._stream.responses if self._stream is not None else 0

    @property
    def time_to_first_token(self) -> float | None:
        """Seconds from the first attempt's start to the first text (includes a retry)."""
        return None if self.first_token_at is None else self.first_token_at - self.started_at
