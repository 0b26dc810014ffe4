"""Download a model id's checkpoint files into a folder with the `huggingface_hub` client, resumable across runs.

One listing call (`/api/models/{id}/revision/{rev}` with file sizes) fixes the commit and the files; the disk is
checked before any byte is fetched. Each file arrives in `<folder>/.download/<file>.part` and is moved into
place only when complete (size, and the LFS sha256 when the hub lists it); an interrupted part is resumed with
an HTTP Range request the next time. `<folder>/.download.json` is written last: a folder without it is not a
complete download, and the next run checks it before contacting the hub at all.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import httpx2
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import http_get
from huggingface_hub.utils import build_hf_headers

from setup.hub import messages as M
from setup.hub.names import DEFAULT_REVISION, MARKER, scrub
from setup.shipped import shipped_yaml

PARTS = ".download"
DEFAULT_ENDPOINT = "https://huggingface.co"
PROGRESS_SECONDS = 1.0
NETWORK_ERRORS = (httpx2.ConnectError, httpx2.TimeoutException, httpx2.RemoteProtocolError, httpx2.ReadError)
Say = Callable[[str], None]


class DownloadError(RuntimeError):
    """The download cannot go on; the message is one sentence, without any token."""


@dataclass(frozen=True)
class HubFile:
    """One file of the listing: its path in the repository, size in bytes, LFS sha256 when the hub gives it."""

    name: str
    size: int | None
    sha256: str | None = None


@dataclass(frozen=True)
class Listing:
    model_id: str
    revision: str
    commit: str
    files: tuple[HubFile, ...]
    gated: bool = False


def endpoint() -> str:
    """The hub's address: HF_ENDPOINT (read at each call, as the client's own constant is read at import)."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def human_size(size: int | float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


@cache
def _rules() -> dict:
    return shipped_yaml("hub.yaml")


def choose_files(files: tuple[HubFile, ...]) -> list[HubFile]:
    """The files a conversion reads: other frameworks' weights left out, and PyTorch pickles too when the
    repository has safetensors (setup/data/hub.yaml)."""
    rules = _rules()
    kept = [f for f in files if not any(fnmatch.fnmatch(f.name, p) for p in rules["skip"])]
    if any(f.name.endswith(".safetensors") for f in kept):
        kept = [f for f in kept if not any(fnmatch.fnmatch(f.name, p) for p in rules["pickle_weights"])]
    return kept


def explain(exc: BaseException, model_id: str, revision: str, token: str | None, what: str = "the listing") -> str:
    """The sentence for a failed hub call."""
    where = endpoint()
    if isinstance(exc, GatedRepoError):
        return (M.MSG_GATED_REFUSED if token else M.MSG_GATED_NO_TOKEN).format(model_id=model_id, endpoint=where)
    if isinstance(exc, RevisionNotFoundError):
        return M.MSG_NO_REVISION.format(model_id=model_id, revision=revision)
    if isinstance(exc, RepositoryNotFoundError):
        return M.MSG_NOT_FOUND.format(model_id=model_id, endpoint=where)
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "an error"
        if status == 401:
            return M.MSG_TOKEN_REFUSED.format(endpoint=where)
        return M.MSG_HUB_ERROR.format(endpoint=where, status=status, what=what)
    reason = type(exc).__name__ if not str(exc) else str(exc).splitlines()[0]
    return M.MSG_NO_NETWORK.format(endpoint=where, reason=scrub(reason, token))


def list_files(model_id: str, revision: str, token: str | None) -> Listing:
    """The commit the revision points at and its files with their sizes."""
    try:
        info = HfApi(endpoint=endpoint()).model_info(model_id, revision=revision, files_metadata=True,
                                                     token=token or None)
    except (HfHubHTTPError, *NETWORK_ERRORS, OSError) as exc:
        raise DownloadError(explain(exc, model_id, revision, token)) from None
    files = tuple(HubFile(s.rfilename, s.size, s.lfs.sha256 if s.lfs else None) for s in info.siblings or ())
    return Listing(model_id, revision, info.sha or revision, files, bool(info.gated))


def read_marker(folder: Path) -> dict | None:
    try:
        data = json.loads((Path(folder) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_complete(folder: Path, model_id: str, revision: str) -> bool:
    """Whether `folder` holds a finished download of `model_id` at `revision` (every file at its size)."""
    marker = read_marker(folder)
    if not marker or marker.get("model_id") != model_id or marker.get("revision") != revision:
        return False
    files = marker.get("files") or {}
    return bool(files) and all((Path(folder) / name).is_file() and (Path(folder) / name).stat().st_size == size
                               for name, size in files.items())


def _present(folder: Path, file: HubFile) -> bool:
    target = folder / file.name
    return target.is_file() and (file.size is None or target.stat().st_size == file.size)


def _part(folder: Path, file: HubFile) -> Path:
    return folder / PARTS / (file.name + ".part")


def check_space(folder: Path, files: list[HubFile]) -> None:
    """DownloadError when the disk holding `folder` has less room than the bytes still to fetch."""
    need = 0
    for file in files:
        if _present(folder, file) or file.size is None:
            continue
        part = _part(folder, file)
        need += file.size - (part.stat().st_size if part.is_file() else 0)
    probe = folder
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if need > free:
        raise DownloadError(M.MSG_NO_SPACE.format(folder=folder, need=human_size(need), free=human_size(free)))


class Progress:
    """Prints "downloaded X of Y (N%)" about once a second while files arrive (the build log's progress)."""

    def __init__(self, total: int, say: Say):
        self.total, self.say = max(total, 1), say
        self.done = 0
        self.part: Path | None = None
        self._stop = threading.Event()
        self._last = -1
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def now(self) -> int:
        part = self.part
        try:
            extra = part.stat().st_size if part is not None and part.is_file() else 0
        except OSError:
            extra = 0
        return self.done + extra

    def report(self) -> None:
        now = min(self.now(), self.total)
        if now != self._last:
            self._last = now
            self.say(f"downloaded {human_size(now)} of {human_size(self.total)} ({100 * now // self.total}%)")

    def _loop(self) -> None:
        while not self._stop.wait(PROGRESS_SECONDS):
            self.report()

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_file(listing: Listing, file: HubFile, folder: Path, token: str | None, progress: Progress) -> None:
    """One file into place: its part resumed where an earlier run stopped, moved in only when complete."""
    part, tag = _part(folder, file), _part(folder, file).with_suffix(".etag")
    url = hf_hub_url(listing.model_id, file.name, revision=listing.commit, endpoint=endpoint())
    try:
        meta = get_hf_file_metadata(url, token=token or None, endpoint=endpoint())
    except (HfHubHTTPError, *NETWORK_ERRORS, OSError) as exc:
        raise DownloadError(explain(exc, listing.model_id, listing.revision, token, what=file.name)) from None
    part.parent.mkdir(parents=True, exist_ok=True)
    if not tag.is_file() or tag.read_text() != str(meta.etag):  # another version of the file: start over
        part.unlink(missing_ok=True)
        tag.write_text(str(meta.etag))
    size = meta.size if meta.size is not None else file.size
    resume = part.stat().st_size if part.is_file() else 0
    if size is not None and resume > size:
        part.unlink()
        resume = 0
    progress.part = part
    try:
        with open(part, "r+b" if part.is_file() else "wb") as handle:
            handle.seek(0, os.SEEK_END)
            http_get(meta.location, handle, resume_size=resume, headers=build_hf_headers(token=token or None),
                     expected_size=size, displayed_filename=file.name)
    except (HfHubHTTPError, *NETWORK_ERRORS, OSError) as exc:
        done = part.stat().st_size if part.is_file() else 0
        if isinstance(exc, HfHubHTTPError) and exc.response is not None and exc.response.status_code < 500:
            raise DownloadError(explain(exc, listing.model_id, listing.revision, token, what=file.name)) from None
        if isinstance(exc, HfHubHTTPError) and exc.response is not None:
            reason = f"the hub answered {exc.response.status_code}"
        else:
            reason = scrub(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, token)
        raise DownloadError(M.MSG_INTERRUPTED.format(file=file.name, done=human_size(done),
                                                     total=human_size(size or 0), reason=reason)) from None
    finally:
        progress.part = None
    if file.sha256 and _sha256(part) != file.sha256:
        part.unlink()
        raise DownloadError(M.MSG_CHECKSUM.format(file=file.name, expected=file.sha256))
    target = folder / file.name
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, target)
    tag.unlink(missing_ok=True)


def _check_folder(folder: Path, model_id: str) -> None:
    """Refuse to write into a folder that holds something else than this download (a person's own files)."""
    if not folder.is_dir() or (folder / PARTS).is_dir():
        return
    marker = read_marker(folder)
    if marker is not None and marker.get("model_id") == model_id:
        return
    if any(folder.iterdir()):
        raise DownloadError(M.MSG_NOT_EMPTY.format(folder=folder, model_id=model_id))


def download(model_id: str, folder: Path, revision: str | None = None, token: str | None = None,
             say: Say = print) -> Path:
    """`model_id` at `revision` into `folder`; nothing fetched when a complete download is there already."""
    revision = revision or DEFAULT_REVISION
    folder = Path(folder).resolve()
    if is_complete(folder, model_id, revision):
        say(M.MSG_ALREADY.format(model_id=model_id, commit=read_marker(folder).get("commit", "?")[:12],
                                 folder=folder))
        return folder
    _check_folder(folder, model_id)
    listing = list_files(model_id, revision, token)
    if listing.gated and not token:  # the listing of a gated model is public, its files are not
        raise DownloadError(M.MSG_GATED_NO_TOKEN.format(model_id=model_id, endpoint=endpoint()))
    files = choose_files(listing.files)
    if not files:
        raise DownloadError(M.MSG_NO_FILES.format(model_id=model_id, revision=revision))
    check_space(folder, files)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).unlink(missing_ok=True)  # from here on the folder is not a complete download
    total = sum(f.size or 0 for f in files)
    say(f"{model_id} at {revision} (commit {listing.commit[:12]}): {len(files)} files, {human_size(total)}")
    with Progress(total, say) as progress:
        for number, file in enumerate(files, 1):
            if _present(folder, file):
                progress.done += file.size or 0
                continue
            say(f"file {number} of {len(files)}: {file.name} ({human_size(file.size or 0)})")
            fetch_file(listing, file, folder, token, progress)
            progress.done += file.size or (folder / file.name).stat().st_size
        progress.report()
    shutil.rmtree(folder / PARTS, ignore_errors=True)
    marker = {"model_id": model_id, "revision": revision, "commit": listing.commit,
              "files": {f.name: (folder / f.name).stat().st_size for f in files}}
    tmp = folder / (MARKER + ".tmp")
    tmp.write_text(json.dumps(marker, indent=1))
    tmp.replace(folder / MARKER)
    say(M.MSG_DONE.format(model_id=model_id, commit=listing.commit[:12], count=len(files), size=human_size(total),
                          folder=folder))
    return folder
