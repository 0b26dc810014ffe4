"""The guard's answers: JSON errors with one sentence, sizes in words."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from app.api.messages import MSG_GUARD_BODY_TOO_LARGE, MSG_GUARD_BODY_TOO_LARGE_KB


def error_json(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()


async def send_json_error(send, status: int, message: str, kind: str,
                          headers: Iterable[tuple[bytes, bytes]] = (), close: bool = False) -> None:
    body = error_json(message, kind)
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"), *headers]
    if close:
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _at_most_one_decimal(value: float) -> str:
    """`value` rounded down to one decimal, without a trailing ".0": the refused body is larger than
    the limit, so a limit shown rounded up could be false for it."""
    tenths = math.floor(value * 10 + 1e-9)
    return str(tenths // 10) if tenths % 10 == 0 else f"{tenths / 10:.1f}"


def size_text(limit: int) -> str:
    if limit >= 1024 * 1024:
        return MSG_GUARD_BODY_TOO_LARGE.format(limit_mb=_at_most_one_decimal(limit / 2**20))
    return MSG_GUARD_BODY_TOO_LARGE_KB.format(limit_kb=_at_most_one_decimal(max(1, limit / 1024)))
