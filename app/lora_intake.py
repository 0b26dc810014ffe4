"""Adding adapters: what an adapter folder is, allowed names, and the checks on a copied folder or a zip.

A zip is size-limited (packed and unpacked), may hold no absolute paths, '..' or links, and must hold one
adapter (its files at the top or in one folder); only the known adapter files are unpacked.
"""

from __future__ import annotations

import re
import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath

from app.errors import ChatError
from setup.lora import CONFIG_FILE, PEFT_BIN, PEFT_CONFIG, PEFT_SAFETENSORS, WEIGHTS_FILE

ADAPTER_FILES = (PEFT_CONFIG, PEFT_SAFETENSORS, PEFT_BIN, WEIGHTS_FILE, CONFIG_FILE, "README.md")
MAX_ZIP_BYTES = 256 * 1024 * 1024
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ZIP_JUNK = ("__MACOSX/", ".DS_Store")

MSG_BAD_NAME = ("Adapter name '{name}' is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit.")
MSG_NOT_ADAPTER = ("{where} is not an adapter: it needs adapter_config.json with adapter_model.safetensors "
                   "(or .bin), or model.lora_weights.npy with model.lora_config.npy.")
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


def adapter_kind(folder: Path) -> str | None:
    """'peft', 'converted' or None for a folder that is not an adapter."""
    if (folder / PEFT_CONFIG).is_file() and ((folder / PEFT_SAFETENSORS).is_file() or (folder / PEFT_BIN).is_file()):
        return "peft"
    if (folder / WEIGHTS_FILE).is_file() and (folder / CONFIG_FILE).is_file():
        return "converted"
    return None


def check_name(name: str) -> str:
    """`name` when it is an allowed adapter name; AdapterError otherwise."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise AdapterError(MSG_BAD_NAME.format(name=name))
    return name


def copy_adapter_files(source: Path, target: Path) -> None:
    """Copy the known adapter files of `source` into `target`, refusing symbolic links."""
    for file_name in ADAPTER_FILES:
        path = source / file_name
        if path.is_symlink():
            raise AdapterError(MSG_FOLDER_SYMLINK.format(where=path))
        if path.is_file():
            shutil.copyfile(path, target / file_name)


def check_zip_size(zip_path: Path, max_zip_bytes: int) -> None:
    size = zip_path.stat().st_size if zip_path.is_file() else 0
    if size > max_zip_bytes:
        raise AdapterError(MSG_ZIP_TOO_BIG.format(size=size / 1e6, limit=max_zip_bytes / 1e6))


def open_zip(zip_path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError):
        raise AdapterError(MSG_NOT_ZIP.format(where=zip_path.name)) from None


def unpack_adapter(archive: zipfile.ZipFile, target: Path, max_unpacked_bytes: int) -> None:
    """Unpack the adapter files of `archive` into `target` (flat); refuses unsafe or oversized archives."""
    for info, file_name in _zip_members(archive, max_unpacked_bytes):
        _extract(archive, info, target / file_name, max_unpacked_bytes)


def _zip_members(archive: zipfile.ZipFile, max_unpacked_bytes: int) -> list[tuple[zipfile.ZipInfo, str]]:
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
    if total > max_unpacked_bytes:
        raise AdapterError(MSG_UNPACKED_TOO_BIG.format(size=total / 1e6, limit=max_unpacked_bytes / 1e6))
    out = []
    for info, parts in entries:
        if len(parts) - strip != 1:
            raise AdapterError(MSG_ZIP_NESTED.format(member=info.filename))
        if parts[-1] in ADAPTER_FILES:
            out.append((info, parts[-1]))
    return out


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, max_unpacked_bytes: int) -> None:
    written = 0
    with archive.open(info) as source, target.open("wb") as sink:
        for block in iter(lambda: source.read(1 << 20), b""):
            written += len(block)
            if written > max_unpacked_bytes:
                raise AdapterError(MSG_UNPACKED_TOO_BIG.format(size=written / 1e6, limit=max_unpacked_bytes / 1e6))
            sink.write(block)
