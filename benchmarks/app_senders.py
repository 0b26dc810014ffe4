"""Benchmark-only senders through the app's Gradio API: its HTTP events (SSE) and gradio_client.

The app's own `python -m app bench` goes straight to Triton or to an OpenAI-compatible API
(app.bench.targets); these measure what Gradio's queue adds, for the overhead and soak runs.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable

from app.bench.load import BenchRequest
from app.bench.messages import MSG_BENCH_HUNG
from app.bench.stats import RequestRecord
from app.bench.targets import HttpSessionSender, Timeline, counted, error_text
from app.core.sampling import SamplingParams


def _api_args(request: BenchRequest, p: SamplingParams) -> dict[str, object]:
    """Keyword arguments of the app's `generate(text, max_tokens, temperature, top_p, top_k, seed,
    repetition_penalty, system_prompt, presence_penalty, frequency_penalty)` endpoint."""
    return {"text": request.prompt, "max_tokens": request.max_tokens, "temperature": p.temperature,
            "top_p": p.top_p, "top_k": p.top_k, "seed": p.seed, "repetition_penalty": p.repetition_penalty,
            "system_prompt": "", "presence_penalty": p.presence_penalty, "frequency_penalty": p.frequency_penalty}


class SseApiSender(HttpSessionSender):
    """Sends each request through the app's `/generate` endpoint over Gradio's HTTP API
    (POST /gradio_api/call/generate, then its server-sent events), one connection per chat session."""

    def __init__(self, url: str, sessions: int, params: SamplingParams | None = None,
                 timeout: float = 60.0, count_tokens: Callable[[str], int] | None = None):
        super().__init__(url, sessions, params, timeout, count_tokens)
        self.url = self.base + "/gradio_api/call/generate"
        self._info_url = self.base + "/gradio_api/info"
        self._parameters: list[dict] | None = None
        # One Gradio session per chat, as a browser tab has: without a session hash every call would be
        # a new session, and the app would build (and keep) a new session state for each request.
        tag = uuid.uuid4().hex[:8]
        self._sessions = [f"bench-{tag}-{i}" for i in range(sessions)]

    def _data(self, args: dict[str, object]) -> list:
        """Positional data for the endpoint, in its declared order, defaults for what we do not set."""
        if self._parameters is None:
            response = self._clients[0].get(self._info_url)
            response.raise_for_status()
            self._parameters = response.json()["named_endpoints"]["/generate"]["parameters"]
        return [args.get(p["parameter_name"], p.get("parameter_default")) for p in self._parameters]

    def _read(self, session: int, request: BenchRequest, timeline: Timeline) -> None:
        client = self._clients[session]
        args = _api_args(request, self.params)
        response = client.post(self.url, json={"data": self._data(args), "session_hash": self._sessions[session]})
        response.raise_for_status()
        event_id = response.json()["event_id"]
        event = None
        with client.stream("GET", f"{self.url}/{event_id}") as stream:
            for line in stream.iter_lines():
                now = time.monotonic()
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data = json.loads(line[5:].strip() or "null")
                    if event == "error":
                        raise RuntimeError(error_text(data))
                    if event in ("generating", "complete") and isinstance(data, list) and data:
                        timeline.update(data[0], now)
                    if event == "complete":
                        return
                if now - timeline.changed > self.timeout:
                    raise TimeoutError(MSG_BENCH_HUNG.format(seconds=self.timeout))
        raise RuntimeError("The app closed the reply stream before it completed.")


class AppApiSender:
    """Sends each request through the app's `/generate` endpoint with gradio_client, one Client per
    chat session (each its own Gradio session), as `send(session, request)`.

    gradio_client itself delivers updates in batches (its reader polls every 50 ms), so first-token
    and gap figures carry up to 50 ms of the client's own delay; SseApiSender does not.
    """

    POLL_SECONDS = 0.005

    def __init__(self, url: str, sessions: int, params: SamplingParams | None = None,
                 timeout: float = 60.0, count_tokens: Callable[[str], int] | None = None):
        self.url, self.timeout, self.count_tokens = url, timeout, count_tokens
        self.params = params or SamplingParams()
        self._clients: list = [None] * sessions
        self._lock = threading.Lock()

    def client(self, session: int):
        from gradio_client import Client

        with self._lock:
            if self._clients[session] is None:
                self._clients[session] = Client(self.url, verbose=False, download_files=False)
            return self._clients[session]

    def connect_all(self) -> None:
        """Open every session's client up front, so connecting is not timed."""
        for index in range(len(self._clients)):
            self.client(index)

    def __call__(self, session: int, request: BenchRequest) -> RequestRecord:
        record = RequestRecord(started=time.monotonic())
        job = None
        try:
            client = self.client(session)
            record.started = time.monotonic()
            timeline = Timeline(record)
            job = client.submit(**_api_args(request, self.params), api_name="/generate")
            seen = 0
            while True:
                done = job.done()
                outputs = job.outputs()
                now = time.monotonic()
                for text in outputs[seen:]:
                    timeline.update(text, now)
                seen = len(outputs)
                if done:
                    break
                if now - timeline.changed > self.timeout:
                    job.cancel()
                    raise TimeoutError(MSG_BENCH_HUNG.format(seconds=self.timeout))
                time.sleep(self.POLL_SECONDS)
            job.result(timeout=self.timeout)  # raises the endpoint's error, if any
            record.text = timeline.text
        except TimeoutError as exc:
            record.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - gradio_client raises AppError with the app's message
            record.error = str(exc) or type(exc).__name__
        finally:
            record.ended = time.monotonic()
        return counted(record, self.count_tokens)

    def close(self) -> None:
        for client in self._clients:
            if client is not None:
                try:
                    client.close()
                except Exception:  # noqa: BLE001
                    pass
