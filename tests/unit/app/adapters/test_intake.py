"""app/adapters/intake.py through AdapterRegistry.add_zip: zip bombs, lying headers, damaged, encrypted or oddly
compressed zips are refused with one plain sentence that names no server folder, and leave nothing behind."""

from __future__ import annotations

import struct
import warnings
import zipfile
from pathlib import Path

import pytest

from app.adapters.messages import (
    MSG_NOT_ZIP,
    MSG_UNPACK_FAILED,
    MSG_UNPACKED_OVER_LIMIT,
    MSG_UNPACKED_TOO_BIG,
    MSG_ZIP_BAD_CRC,
    MSG_ZIP_CORRUPT,
    MSG_ZIP_CUT_OFF,
    MSG_ZIP_DUPLICATE,
    MSG_ZIP_ENCRYPTED,
    MSG_ZIP_METHOD,
)
from app.adapters.registry import AdapterError, AdapterRegistry
from tests.lora_helpers import TINY, write_peft

LIMIT = 1_000_000  # unpacked-size limit for these tests (the default is 1 GiB)
BOMB_BYTES = 300 * 2**20  # zeros: deflates to about 300 KB
CONFIG, WEIGHTS = "adapter_config.json", "adapter_model.safetensors"

# offsets of the fields in a local file header (PK\3\4) and a central directory entry (PK\1\2)
LOCAL = {"flags": 6, "method": 8, "crc": 14, "compressed": 18, "size": 22}
CENTRAL = {"flags": 8, "method": 10, "crc": 16, "compressed": 20, "size": 24}


# ---- building and patching zips --------------------------------------------------------------------------
def _adapter_files(tmp_path: Path) -> dict[str, bytes]:
    source = write_peft(tmp_path / "src", shape=TINY, seed=5)
    return {p.name: p.read_bytes() for p in source.iterdir()}


def _zip(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name"
        with zipfile.ZipFile(path, "w", compression) as archive:
            for name, data in (members.items() if isinstance(members, dict) else members):
                archive.writestr(name, data)
    return path


def _zeros_zip(path: Path, members: dict[str, int]) -> Path:
    """Members of `n` zero bytes each, deflated, written 1 MB at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, size in members.items():
            with archive.open(name, "w") as sink:
                for start in range(0, size, len(chunk)):
                    sink.write(chunk[:min(len(chunk), size - start)])
    return path


def _headers(data: bytes) -> dict[str, tuple[int, int]]:
    """member -> (offset of its local header, offset of its central directory entry)."""
    cd_count, _, cd_offset = struct.unpack("<HII", data[-12:-2])
    out, pos = {}, cd_offset
    for _ in range(cd_count):
        assert data[pos:pos + 4] == b"PK\x01\x02"
        name_len, extra_len, comment_len = struct.unpack("<HHH", data[pos + 28:pos + 34])
        local = struct.unpack("<I", data[pos + 42:pos + 46])[0]
        out[data[pos + 46:pos + 46 + name_len].decode()] = (local, pos)
        pos += 46 + name_len + extra_len + comment_len
    return out


def _patch(path: Path, member: str, field: str, value: int) -> Path:
    """Set a header field of `member` in both its local header and its central directory entry."""
    data = bytearray(path.read_bytes())
    local, central = _headers(bytes(data))[member]
    fmt = "<H" if field in ("flags", "method") else "<I"
    struct.pack_into(fmt, data, local + LOCAL[field], value)
    struct.pack_into(fmt, data, central + CENTRAL[field], value)
    path.write_bytes(bytes(data))
    return path


def _data_offset(path: Path, member: str) -> int:
    data = path.read_bytes()
    local = _headers(data)[member][0]
    name_len, extra_len = struct.unpack("<HH", data[local + 26:local + 30])
    return local + 30 + name_len + extra_len


# ---- fixtures and checks -------------------------------------------------------------------------------
@pytest.fixture
def adapters(tmp_path) -> Path:
    folder = tmp_path / "adapters"
    write_peft(folder / "alpha", shape=TINY, seed=1)
    return folder


@pytest.fixture
def registry(adapters) -> AdapterRegistry:
    return AdapterRegistry(adapters, max_unpacked_bytes=LIMIT)


@pytest.fixture
def uploads(tmp_path) -> Path:
    """Where Gradio would have stored the upload (a temp folder of the server)."""
    return tmp_path / "gradio" / "0f3a9c"


@pytest.fixture
def bytes_read(monkeypatch) -> list[int]:
    """[bytes read out of zip members]: an upper bound of the bytes unpacked to disk."""
    seen = [0]
    original = zipfile.ZipExtFile.read

    def counting(self, n=-1):
        data = original(self, n)
        seen[0] += len(data)
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting)
    return seen


@pytest.fixture
def trusting_reader(monkeypatch):
    """A zip reader that believes the data rather than the declared size (CPython stops at the declared
    size; the running count must not depend on that)."""
    original = zipfile.ZipExtFile.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self._left = 1 << 62

    monkeypatch.setattr(zipfile.ZipExtFile, "__init__", init)


def _refused(registry: AdapterRegistry, archive: Path, tmp_path: Path) -> str:
    """add_zip's message for a refused zip, after checking it names no server folder and left nothing."""
    before = sorted(p.name for p in registry.folder.iterdir())
    with pytest.raises(AdapterError) as info:
        registry.add_zip(archive)
    message = str(info.value)
    for server_path in ("/tmp", str(tmp_path), str(registry.folder), str(archive.parent), ".adding-"):
        assert server_path not in message, message
    assert sorted(p.name for p in registry.folder.iterdir()) == before, "a refused zip leaves nothing behind"
    assert not any(p.name.startswith(".adding") for p in registry.folder.rglob("*"))
    return message


# ---- size limits ---------------------------------------------------------------------------------------------
def test_a_zip_bomb_is_refused_before_unpacking(registry, uploads, tmp_path, bytes_read):
    bomb = _zeros_zip(uploads / "bomb.zip", {WEIGHTS: BOMB_BYTES})
    assert bomb.stat().st_size < 400_000
    assert _refused(registry, bomb, tmp_path) == MSG_UNPACKED_TOO_BIG.format(size="315 MB", limit="1.0 MB")
    assert bytes_read[0] == 0


def test_a_bomb_under_the_default_limit_is_refused_by_its_ratio(registry, uploads, tmp_path, bytes_read,
                                                               monkeypatch):
    monkeypatch.setattr(registry, "max_unpacked_bytes", 1024 * 2**20)  # the shipped 1 GiB limit
    bomb = _zeros_zip(uploads / "bomb.zip", {WEIGHTS: BOMB_BYTES})
    message = _refused(registry, bomb, tmp_path)
    assert message.startswith(f"'{WEIGHTS}' unpacks to 315 MB from ") and "zip bomb" in message
    assert bytes_read[0] == 0


def test_members_under_the_limit_whose_sum_is_over_are_refused(registry, uploads, tmp_path, bytes_read):
    archive = _zeros_zip(uploads / "pair.zip", {CONFIG: 600_000, WEIGHTS: 600_000})
    assert _refused(registry, archive, tmp_path) == MSG_UNPACKED_TOO_BIG.format(size="1.2 MB", limit="1.0 MB")
    assert bytes_read[0] == 0


def test_a_size_that_lies_in_the_header_stops_the_unpacking_at_the_declared_size(registry, uploads, tmp_path,
                                                                                 bytes_read):
    bomb = _patch(_zeros_zip(uploads / "liar.zip", {WEIGHTS: BOMB_BYTES}), WEIGHTS, "size", 1000)
    assert _refused(registry, bomb, tmp_path) == MSG_ZIP_BAD_CRC.format(member=WEIGHTS)
    assert bytes_read[0] <= 1000


def test_a_lying_bomb_stops_at_the_limit_even_when_the_reader_believes_the_data(registry, uploads, tmp_path,
                                                                                bytes_read, trusting_reader):
    bomb = _patch(_zeros_zip(uploads / "liar.zip", {WEIGHTS: BOMB_BYTES}), WEIGHTS, "size", 1000)
    assert _refused(registry, bomb, tmp_path) == MSG_UNPACKED_OVER_LIMIT.format(limit="1.0 MB")
    assert LIMIT < bytes_read[0] <= LIMIT + 1, "stops one byte past the limit"


def test_the_limit_counts_all_members_together(registry, uploads, tmp_path, bytes_read, trusting_reader):
    # each member declares 1000 bytes and holds 700 KB: each is under the limit, together they are over
    archive = _zeros_zip(uploads / "pair.zip", {CONFIG: 700_000, WEIGHTS: 700_000})
    for member in (CONFIG, WEIGHTS):
        _patch(archive, member, "size", 1000)
    assert _refused(registry, archive, tmp_path) == MSG_UNPACKED_OVER_LIMIT.format(limit="1.0 MB")
    assert LIMIT < bytes_read[0] <= LIMIT + 1


def test_a_zip_just_under_the_limit_is_added(adapters, uploads, tmp_path):
    files = _adapter_files(tmp_path)
    total = sum(len(data) for data in files.values())
    info = AdapterRegistry(adapters, max_unpacked_bytes=total).add_zip(_zip(uploads / "pirate.zip", files))
    assert info.name == "pirate" and (adapters / "pirate" / WEIGHTS).stat().st_size == len(files[WEIGHTS])
    with pytest.raises(AdapterError, match="would unpack to"):
        AdapterRegistry(adapters, max_unpacked_bytes=total - 1).add_zip(_zip(uploads / "other.zip", files))


# ---- damaged, encrypted, compressed in an unknown way ---------------------------------------------------------
def test_bad_checksum(registry, uploads, tmp_path):
    archive = _zip(uploads / "pirate.zip", _adapter_files(tmp_path), zipfile.ZIP_STORED)
    data = bytearray(archive.read_bytes())
    data[_data_offset(archive, WEIGHTS) + 100] ^= 0xFF
    archive.write_bytes(bytes(data))
    assert _refused(registry, archive, tmp_path) == MSG_ZIP_BAD_CRC.format(member=WEIGHTS)


@pytest.mark.parametrize("flag", [0x01, 0x40], ids=["password", "strong-encryption"])
def test_encrypted_member(registry, uploads, tmp_path, flag):
    archive = _patch(_zip(uploads / "pirate.zip", _adapter_files(tmp_path)), CONFIG, "flags", flag)
    assert _refused(registry, archive, tmp_path) == MSG_ZIP_ENCRYPTED.format(member=CONFIG) == (
        f"The zip is password-protected ('{CONFIG}' is encrypted); zip the adapter folder again without a password.")


@pytest.mark.parametrize("method, shown", [(99, "99"), (9, "9 (deflate64)")])
def test_unknown_compression(registry, uploads, tmp_path, method, shown):
    archive = _patch(_zip(uploads / "pirate.zip", _adapter_files(tmp_path)), WEIGHTS, "method", method)
    assert _refused(registry, archive, tmp_path) == MSG_ZIP_METHOD.format(member=WEIGHTS, method=shown)


def test_a_cut_off_zip(registry, uploads, tmp_path):
    archive = _zip(uploads / "pirate.zip", _adapter_files(tmp_path))
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    assert _refused(registry, archive, tmp_path) == MSG_ZIP_CUT_OFF.format(where="pirate.zip")


def test_member_data_that_ends_early(registry, uploads, tmp_path):
    archive = _zip(uploads / "pirate.zip", _adapter_files(tmp_path), zipfile.ZIP_STORED)
    for field in ("compressed", "size"):  # the member claims more data than the whole file holds
        _patch(archive, WEIGHTS, field, archive.stat().st_size * 2)
    assert _refused(registry, archive, tmp_path) == MSG_ZIP_CORRUPT.format(member=WEIGHTS)


def test_corrupt_deflate_data(registry, uploads, tmp_path):
    archive = _zip(uploads / "pirate.zip", _adapter_files(tmp_path))
    data = bytearray(archive.read_bytes())
    start = _data_offset(archive, WEIGHTS)
    data[start:start + 8] = b"\xff" * 8  # an invalid deflate block type
    archive.write_bytes(bytes(data))
    assert _refused(registry, archive, tmp_path) == MSG_ZIP_CORRUPT.format(member=WEIGHTS)


def test_not_a_zip(registry, uploads, tmp_path):
    fake = uploads / "pirate.zip"
    fake.parent.mkdir(parents=True)
    fake.write_bytes(b"%PDF-1.7 not a zip at all")
    assert _refused(registry, fake, tmp_path) == MSG_NOT_ZIP.format(where="pirate.zip")
    assert _refused(registry, fake, tmp_path) == "pirate.zip is not a valid zip file."


def test_the_same_file_twice(registry, uploads, tmp_path):
    files = _adapter_files(tmp_path)
    archive = _zip(uploads / "pirate.zip", [*files.items(), (CONFIG, files[CONFIG])])
    assert _refused(registry, archive, tmp_path) == MSG_ZIP_DUPLICATE.format(member=CONFIG)


# ---- messages name what the user gave, never a server folder ---------------------------------------------------
def test_the_message_names_the_zip_as_uploaded(registry, uploads, tmp_path):
    fake = uploads / "upload_1a2b.zip"
    fake.parent.mkdir(parents=True)
    fake.write_bytes(b"not a zip")
    with pytest.raises(AdapterError) as info:
        registry.add_zip(fake, shown_name="/home/me/pirate.zip")
    assert str(info.value) == "pirate.zip is not a valid zip file."


def test_a_broken_adapter_in_a_zip_names_the_zip_not_the_staging_folder(registry, uploads, tmp_path):
    files = _adapter_files(tmp_path)
    files[CONFIG] = b"{"
    message = _refused(registry, _zip(uploads / "pirate.zip", files), tmp_path)
    assert message.startswith("Adapter 'pirate': pirate.zip/adapter_config.json is not valid JSON"), message


def test_a_full_disk_names_the_member_not_the_staging_folder(registry, uploads, tmp_path, monkeypatch):
    files = _adapter_files(tmp_path)
    archive = _zip(uploads / "pirate.zip", files)
    original = Path.open

    def full_disk(self, mode="r", *args, **kwargs):
        if "w" in mode and ".adding-" in str(self):
            raise OSError(28, "No space left on device", str(self))
        return original(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full_disk)
    message = _refused(registry, archive, tmp_path)
    assert message == MSG_UNPACK_FAILED.format(member=next(iter(files)), reason="No space left on device")


def test_add_folder_messages_name_the_folder_as_the_user_gave_it(registry, tmp_path):
    broken = write_peft(tmp_path / "workspace" / "broken", shape=TINY)
    (broken / CONFIG).write_text("{")
    with pytest.raises(AdapterError) as info:
        registry.add_folder(broken, shown_name="broken")
    assert str(info.value).startswith("Adapter 'broken': broken/adapter_config.json is not valid JSON"), info.value
    assert "/tmp" not in str(info.value)
    with pytest.raises(AdapterError) as info:
        registry.add_folder(tmp_path / "workspace" / "missing", shown_name="missing")
    assert str(info.value) == "missing is not a folder."
    linked = write_peft(tmp_path / "workspace" / "linked", shape=TINY)
    (linked / WEIGHTS).rename(tmp_path / "real.safetensors")
    (linked / WEIGHTS).symlink_to(tmp_path / "real.safetensors")
    with pytest.raises(AdapterError) as info:
        registry.add_folder(linked, shown_name="linked")
    assert str(info.value) == f"linked/{WEIGHTS} is a symbolic link; copy the real file into the adapter folder."
    assert sorted(p.name for p in registry.folder.iterdir()) == ["alpha"]
