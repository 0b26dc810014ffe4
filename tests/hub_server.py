"""A Hugging Face Hub on loopback, in the URL layout and with the headers the real hub sends, for the download
tests (no hub is reachable here): the real `huggingface_hub` client talks to it through HF_ENDPOINT.

Facts it follows (huggingface_hub 2.4 and the hub's answers): `GET /api/models/{id}/revision/{rev}?blobs=true`
gives `id`, `sha`, `gated` and `siblings` (`rfilename`, `size`, `blobId`, `lfs` {size, sha256, pointerSize});
`HEAD|GET /{id}/resolve/{rev}/{file}` answers with `X-Repo-Commit`, a quoted `ETag` and `Content-Length`, and
serves `Range: bytes=N-` with 206 and `Content-Range`. Errors carry `X-Error-Code` (RepoNotFound,
RevisionNotFound, GatedRepo, EntryNotFound) and `X-Error-Message`; an invalid token gets 401 with
"Invalid credentials in Authorization header"; a gated model's files answer 401 GatedRepo without a token and
403 GatedRepo with a token not granted access, while its listing stays public.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_FROM = 1024  # files this large are listed as LFS files (sha256 in the listing and the ETag)
API = re.compile(r"^/api/models/([^/]+/[^/]+)/revision/([^?]+)")
RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")


@dataclass
class HubRepo:
    files: dict[str, bytes]
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    gated: bool = False
    granted: set[str] = field(default_factory=set)  # tokens given access to a gated repo


@dataclass
class LoopbackHub:
    """The hub's state: repositories, valid tokens, what to break, and every request seen."""

    repos: dict[str, HubRepo] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    drop: dict[str, int] = field(default_factory=dict)  # file -> bytes sent before the connection drops (once)
    down_after_drop: bool = False  # a drop also takes the file server down (`down`)
    down: bool = False  # file downloads answer 503 Service Unavailable
    requests: list[dict] = field(default_factory=list)
    url: str = ""

    def seen(self, method: str, path_part: str) -> list[dict]:
        return [r for r in self.requests if r["method"] == method and path_part in r["path"]]


def _etag(name: str, data: bytes) -> str:
    if len(data) >= LFS_FROM:
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _handler(hub: LoopbackHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args) -> None:
            pass

        def _error(self, status: int, code: str | None, message: str) -> None:
            body = json.dumps({"error": message}).encode()
            self.send_response(status)
            if code:
                self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", message)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _token(self) -> str | None:
            value = self.headers.get("Authorization") or ""
            return value[len("Bearer "):] if value.startswith("Bearer ") else None

        def _repo(self, model_id: str, revision: str) -> HubRepo | None:
            """The repository, or None after answering the error the hub gives."""
            token = self._token()
            if token is not None and token not in hub.tokens:
                self._error(401, None, "Invalid credentials in Authorization header")
                return None
            repo = hub.repos.get(model_id)
            if repo is None:
                self._error(404, "RepoNotFound", "Repository not found")
                return None
            if revision not in ("main", repo.commit):
                self._error(404, "RevisionNotFound", "Invalid rev id: " + revision)
                return None
            return repo

        def _record(self) -> None:
            hub.requests.append({"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                                 "authorization": self.headers.get("Authorization")})

        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            self._record()
            api = API.match(self.path)
            if api:
                return self._listing(api.group(1), api.group(2))
            resolve = RESOLVE.match(self.path)
            if resolve:
                return self._file(*resolve.groups())
            return self._error(404, None, "Not found")

        def do_HEAD(self) -> None:  # noqa: N802
            self._record()
            resolve = RESOLVE.match(self.path)
            if resolve:
                return self._file(*resolve.groups())
            return self._error(404, None, "Not found")

        def _listing(self, model_id: str, revision: str) -> None:
            repo = self._repo(model_id, revision)
            if repo is None:
                return
            siblings = []
            for name, data in repo.files.items():
                entry = {"rfilename": name, "size": len(data), "blobId": _etag(name, data)}
                if len(data) >= LFS_FROM:
                    entry["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
                siblings.append(entry)
            body = json.dumps({"id": model_id, "modelId": model_id, "sha": repo.commit, "private": False,
                               "gated": "manual" if repo.gated else False, "siblings": siblings}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _file(self, model_id: str, revision: str, name: str) -> None:
            repo = self._repo(model_id, revision)
            if repo is None:
                return
            token = self._token()
            if repo.gated and token is None:
                return self._error(401, "GatedRepo", f"Access to model {model_id} is restricted. You must have "
                                   "access to it and be authenticated to access it. Please log in.")
            if repo.gated and token not in repo.granted:
                return self._error(403, "GatedRepo", f"Access to model {model_id} is restricted and you are not "
                                   "in the authorized list.")
            if name not in repo.files:
                return self._error(404, "EntryNotFound", f"{name} does not exist on \"{revision}\"")
            if self.command == "GET" and hub.down:
                return self._error(503, None, "Service Unavailable")
            data = repo.files[name]
            start = 0
            ranged = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            if ranged and self.command == "GET":
                start = int(ranged.group(1))
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("ETag", f'"{_etag(name, data)}"')
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(data) - start))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if self.command == "HEAD":
                return
            cut = hub.drop.pop(name, None)
            if cut is not None:  # the connection drops mid-file
                hub.down = hub.down_after_drop
                self.wfile.write(data[start:start + cut])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(data[start:])

    return Handler


def serve(hub: LoopbackHub) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start `hub` on a free loopback port (its address in `hub.url`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread
