"""Adding adapters: what an adapter folder is, allowed names, and the checks on a copied folder or a zip.

A zip is size-limited (packed and unpacked), may hold no absolute paths, '..', links, encrypted members or
unknown compression, and must hold one adapter (its files at the top or in one folder); only the known
adapter files are unpacked. The unpacked size is counted across all members as their bytes are written
(the sizes a zip declares are checked first but never trusted), so a zip bomb stops at the limit. zipfile's
errors (bad checksum, truncated or corrupt data, password, compression) become one plain sentence that names
the zip's own file name or a member, never a folder of the server.
"""

from __future__ import annotations

import lzma
import re
import shutil
import stat
import struct
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from app.adapters.messages import (
    MSG_BAD_NAME,
    MSG_FOLDER_SYMLINK,
    MSG_NOT_ZIP,
    MSG_UNPACK_FAILED,
    MSG_UNPACKED_OVER_LIMIT,
    MSG_UNPACKED_TOO_BIG,
    MSG_ZIP_ABSOLUTE,
    MSG_ZIP_BAD_CRC,
    MSG_ZIP_CORRUPT,
    MSG_ZIP_CUT_OFF,
    MSG_ZIP_DUPLICATE,
    MSG_ZIP_ENCRYPTED,
    MSG_ZIP_METHOD,
    MSG_ZIP_NESTED,
    MSG_ZIP_RATIO,
    MSG_ZIP_SYMLINK,
    MSG_ZIP_TOO_BIG,
    MSG_ZIP_TRAVERSAL,
    MSG_ZIP_UNSUPPORTED,
)
from app.core.errors import ChatError
from setup.lora.convert import CONFIG_FILE, PEFT_BIN, PEFT_CONFIG, PEFT_SAFETENSORS, WEIGHTS_FILE
from setup.lora.record import RECORD_FILE

# RECORD_FILE: the pairs an adapter trained by this app learnt (its check probes with them)
ADAPTER_FILES = (PEFT_CONFIG, PEFT_SAFETENSORS, PEFT_BIN, WEIGHTS_FILE, CONFIG_FILE, "README.md", RECORD_FILE)
MAX_ZIP_BYTES = 256 * 1024 * 1024
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ZIP_JUNK = ("__MACOSX/", ".DS_Store")
ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)
ZIP_ENCRYPTED_FLAGS = 0x01 | 0x40  # traditional (ZipCrypto/AES) and strong encryption
ZIP_MAGIC = b"PK\x03\x04"
READ_BLOCK = 1 << 20

# Weights barely compress (fp16/fp32: under 2:1); a big member packed far tighter is a zip bomb.
MAX_COMPRESSION_RATIO = 50
RATIO_CHECK_FROM_BYTES = 16 * 1024 * 1024


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


def copy_adapter_files(source: Path, target: Path, shown: str | None = None) -> None:
    """Copy the known adapter files of `source` into `target`, refusing symbolic links.

    Messages name `source` as `shown` (what the user gave) when given.
    """
    for file_name in ADAPTER_FILES:
        path = source / file_name
        if path.is_symlink():
            raise AdapterError(MSG_FOLDER_SYMLINK.format(where=f"{shown or source}/{file_name}"))
        if path.is_file():
            shutil.copyfile(path, target / file_name)


def size_text(n: float) -> str:
    """Bytes as a short text: '891 MB', '1.5 MB', '969 KB', '12 bytes'."""
    if n >= 10e6:
        return f"{n / 1e6:.0f} MB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.0f} KB"
    return f"{n:.0f} bytes"


def os_reason(exc: OSError) -> str:
    """An OSError's reason without the file names it carries ('No space left on device')."""
    return exc.strerror or type(exc).__name__


def check_zip_size(zip_path: Path, max_zip_bytes: int) -> None:
    size = zip_path.stat().st_size if zip_path.is_file() else 0
    if size > max_zip_bytes:
        raise AdapterError(MSG_ZIP_TOO_BIG.format(size=size_text(size), limit=size_text(max_zip_bytes)))


def open_zip(zip_path: Path, where: str | None = None) -> zipfile.ZipFile:
    """The opened zip; AdapterError naming `where` (default: the file's base name) when it cannot be read."""
    where = where or zip_path.name
    try:
        return zipfile.ZipFile(zip_path)
    except NotImplementedError as exc:  # e.g. "zip file version 6.3"
        raise AdapterError(MSG_ZIP_UNSUPPORTED.format(where=where, feature=exc)) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, struct.error):
        raise AdapterError((MSG_ZIP_CUT_OFF if _starts_like_zip(zip_path) else MSG_NOT_ZIP).format(where=where)) \
            from None


def _starts_like_zip(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(ZIP_MAGIC)) == ZIP_MAGIC
    except OSError:
        return False


def unpack_adapter(archive: zipfile.ZipFile, target: Path, max_unpacked_bytes: int) -> None:
    """Unpack the adapter files of `archive` into `target` (flat); refuses unsafe, damaged or oversized archives.

    The bytes written are counted across all members and unpacking stops as soon as they pass
    `max_unpacked_bytes`, whatever the zip declares. On an error `target` may hold partly written files:
    whoever owns `target` removes it (AdapterRegistry unpacks into a staging folder it deletes).
    """
    left = max_unpacked_bytes
    for info, file_name in _zip_members(archive, max_unpacked_bytes):
        left -= _extract(archive, info, target / file_name, left, max_unpacked_bytes)


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
    total = sum(info.file_size for info, _ in entries)  # declared: refuses early, but is not trusted
    if total > max_unpacked_bytes:
        raise AdapterError(MSG_UNPACKED_TOO_BIG.format(size=size_text(total), limit=size_text(max_unpacked_bytes)))
    for info, _ in entries:
        packed = max(info.compress_size, 1)
        if info.file_size > RATIO_CHECK_FROM_BYTES and info.file_size > MAX_COMPRESSION_RATIO * packed:
            raise AdapterError(MSG_ZIP_RATIO.format(member=info.filename, size=size_text(info.file_size),
                                                    packed=size_text(packed), ratio=info.file_size / packed))
    out = []
    for info, parts in entries:
        if len(parts) - strip != 1:
            raise AdapterError(MSG_ZIP_NESTED.format(member=info.filename))
        if parts[-1] in ADAPTER_FILES:
            if any(name == parts[-1] for _, name in out):
                raise AdapterError(MSG_ZIP_DUPLICATE.format(member=info.filename))
            if info.flag_bits & ZIP_ENCRYPTED_FLAGS:
                raise AdapterError(MSG_ZIP_ENCRYPTED.format(member=info.filename))
            if info.compress_type not in ZIP_METHODS:
                raise AdapterError(MSG_ZIP_METHOD.format(member=info.filename, method=_method(info.compress_type)))
            out.append((info, parts[-1]))
    return out


def _method(number: int) -> str:
    name = zipfile.compressor_names.get(number)
    return f"{number} ({name})" if name else str(number)


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, left: int, limit: int) -> int:
    """Write one member to `target`; the bytes written. Refuses once they pass `left` (what the limit leaves)."""
    member = info.filename
    source = _open_member(archive, info)
    written = 0
    with source:
        try:
            sink = target.open("wb")
        except OSError as exc:
            raise AdapterError(MSG_UNPACK_FAILED.format(member=member, reason=os_reason(exc))) from None
        with sink:
            while True:
                block = _read_member(source, member, min(READ_BLOCK, left - written + 1))
                if not block:
                    return written
                written += len(block)
                if written > left:
                    raise AdapterError(MSG_UNPACKED_OVER_LIMIT.format(limit=size_text(limit)))
                try:
                    sink.write(block)
                except OSError as exc:
                    raise AdapterError(MSG_UNPACK_FAILED.format(member=member, reason=os_reason(exc))) from None


def _open_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    member = info.filename
    try:
        return archive.open(info)
    except RuntimeError:  # zipfile: "File ... is encrypted, password required for extraction"
        raise AdapterError(MSG_ZIP_ENCRYPTED.format(member=member)) from None
    except NotImplementedError as exc:  # unknown compression, patched data, strong encryption
        if info.compress_type not in ZIP_METHODS or "compression" in str(exc):
            raise AdapterError(MSG_ZIP_METHOD.format(member=member, method=_method(info.compress_type))) from None
        if "encryption" in str(exc):
            raise AdapterError(MSG_ZIP_ENCRYPTED.format(member=member)) from None
        raise AdapterError(MSG_ZIP_UNSUPPORTED.format(where=f"'{member}'", feature=exc)) from None
    except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError, struct.error):
        raise AdapterError(MSG_ZIP_CORRUPT.format(member=member)) from None


def _read_member(source, member: str, size: int) -> bytes:
    try:
        return source.read(size)
    except zipfile.BadZipFile as exc:
        message = MSG_ZIP_BAD_CRC if str(exc).startswith("Bad CRC-32") else MSG_ZIP_CORRUPT
        raise AdapterError(message.format(member=member)) from None
    # zlib/lzma: bad data; EOFError: the data ends early; OSError: bz2's "Invalid data stream"
    except (zlib.error, lzma.LZMAError, EOFError, OSError, ValueError, struct.error):
        raise AdapterError(MSG_ZIP_CORRUPT.format(member=member)) from None
