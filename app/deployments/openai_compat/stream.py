"""One streamed chat completion from an OpenAI-compatible server; closing the connection cancels it there."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx

from app.core.errors import ChatError, ServerUnreachable, StreamStalled
from app.core.streams import StreamDefaults
from app.deployments.messages import MSG_OPENAI_CUT, MSG_OPENAI_STALLED, MSG_OPENAI_UNREACHABLE
from app.deployments.openai_compat.wire import http_error, stream_event

CONNECT_SECONDS = 10.0


class OpenAIStream(StreamDefaults):
    """Iterate for text deltas; `cancel()` (any thread) closes the connection, which ends the request on the
    server. `chunks` is the server's completion token count when it reports usage, else the deltas seen."""

    def __init__(self, http: httpx.Client, url: str, body: dict, stall_timeout: float):
        self.text = ""
        self.cancelled = False
        self.request_id = ""
        self.started_at = time.monotonic()
        self.first_token_at: float | None = None
        self.finish_reason: str | None = None  # the stream's own ("length", "stop", ...); None when it gave none
        self._deltas = 0
        self._usage: int | None = None
        self._stall = stall_timeout
        self._model = str(body.get("model", ""))
        self._lock = threading.Lock()
        self._closed = False
        self._response = self._send(http, url, body)
        self.request_id = self._response.headers.get("x-request-id", "")
        self._lines = self._response.iter_lines()

    def _send(self, http: httpx.Client, url: str, body: dict) -> httpx.Response:
        timeout = httpx.Timeout(CONNECT_SECONDS, read=self._stall)
        try:
            response = http.send(http.build_request("POST", url, json=body, timeout=timeout), stream=True)
        except httpx.TimeoutException:
            raise StreamStalled(MSG_OPENAI_STALLED.format(seconds=self._stall)) from None
        except httpx.HTTPError as exc:
            raise ServerUnreachable(MSG_OPENAI_UNREACHABLE.format(url=url, detail=exc)) from None
        if response.status_code != 200:
            try:
                text = response.read().decode("utf-8", "replace")
            finally:
                response.close()
            raise http_error(response.status_code, text, self._model)
        return response

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while True:
            if self.cancelled or self._closed:
                raise StopIteration
            line = self._read_line()
            if line.strip() == "data: [DONE]":
                self._close()
                raise StopIteration
            event = stream_event(line)
            if event is None:
                continue
            delta = self._take(event)
            if delta:
                return delta

    def _read_line(self) -> str:
        try:
            return next(self._lines)
        except StopIteration:
            self._close()
            if self.cancelled or self.finish_reason:
                raise
            raise ServerUnreachable(MSG_OPENAI_CUT) from None
        except httpx.ReadTimeout:
            self._close()
            if self.cancelled:
                raise StopIteration from None
            raise StreamStalled(MSG_OPENAI_STALLED.format(seconds=self._stall)) from None
        except Exception as exc:  # noqa: BLE001 - a connection closed by cancel() ends in many ways
            self._close()
            if self.cancelled:
                raise StopIteration from None
            raise ServerUnreachable(MSG_OPENAI_UNREACHABLE.format(url="the server", detail=exc)) from None

    def _take(self, event: dict) -> str:
        """Record one event; return its text."""
        if "error" in event:
            self._close()
            error = event["error"] if isinstance(event["error"], dict) else {"message": str(event["error"])}
            code = error.get("code")
            raise self._typed(int(code) if isinstance(code, int) else 400, {"error": error})
        usage = event.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self._usage = usage["completion_tokens"]
        choices = event.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            return ""
        self.finish_reason = choices[0].get("finish_reason") or self.finish_reason
        delta = (choices[0].get("delta") or {}).get("content") or ""
        if delta:
            self._deltas += 1
            self.text += delta
            if self.first_token_at is None:
                self.first_token_at = time.monotonic()
        return delta

    def _typed(self, status: int, error: dict) -> ChatError:
        import json

        return http_error(status, json.dumps(error), self._model)

    @property
    def chunks(self) -> int:
        return self._usage if self._usage is not None else self._deltas

    @property
    def responses(self) -> int:
        return self._deltas

    @property
    def time_to_first_token(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.started_at

    def cancel(self) -> None:
        """Close the connection: the server aborts the request."""
        if self._closed or self.cancelled:
            return
        self.cancelled = True
        self._close()

    def _close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._response.close()
        except Exception:  # noqa: BLE001 - closing a broken connection must not raise
            pass

    def __del__(self) -> None:
        if hasattr(self, "_response"):
            self._close()
