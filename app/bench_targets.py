"""Where benchmark requests go: straight to Triton (the app's own client) or through the app's Gradio API.

Each sender turns one BenchRequest into a RequestRecord: time to first streamed text, the gaps
between streamed chunks, the end, the output token count, or the error message. No sender raises.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace

from app.bench_load import BenchRequest
from app.bench_stats import RequestRecord
from app.client import ModelInfo, SamplingParams, TritonChatClient
from app.constants import MSG_BENCH_HUNG
from app.errors import ChatError
from app.images import image_format

# (hook value, prompt, model info) -> (prompt, extra inputs); see app.bench.register_extra_hook
RequestHook = Callable[[str, ModelInfo], tuple[str, Mapping[str, object]]]


def word_count(text: str) -> int:
    """Tokens of the pacing model's replies (one word per token)."""
    return len(text.split())


class TritonSender:
    """Streams each request with TritonChatClient (the client the app uses), as `send(request)`."""

    def __init__(self, client: TritonChatClient, params: SamplingParams | None = None,
                 hooks: list[RequestHook] = (), count_tokens: Callable[[str], int] | None = None):
        self.client, self.hooks, self.count_tokens = client, list(hooks), count_tokens
        self.params = params or SamplingParams()

    def __call__(self, request: BenchRequest) -> RequestRecord:
        record = RequestRecord(started=time.monotonic())
        stream = None
        try:
            info = self.client.model_info()
            prompt, extra = request.prompt, {}
            if request.min_tokens:
                extra["min_length"] = request.min_tokens
            for hook in self.hooks:
                prompt, more = hook(prompt, info)
                extra.update(more)
            record.started = time.monotonic()
            stream = self.client.stream(prompt, replace(self.params, max_tokens=request.max_tokens), extra=extra)
            last = None
            for _ in stream:
                now = time.monotonic()
                if last is None:
                    record.first_token = now
                else:
                    record.gaps.append(now - last)
                last = now
                record.tokens += 1
            record.text = stream.text
            record.tokens = getattr(stream, "chunks", record.tokens)  # responses that carried text
        except ChatError as exc:
            record.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a benchmark reports every failure, it never stops on one
            record.error = f"{type(exc).__name__}: {exc}"
        finally:
            record.ended = time.monotonic()
            if stream is not None:
                stream.cancel()
        if record.error is None and self.count_tokens is not None:
            record.tokens = self.count_tokens(record.text)
        return record


def _api_args(request: BenchRequest, p: SamplingParams) -> dict[str, object]:
    """Keyword arguments of the app's `generate(text, max_tokens, temperature, top_p, top_k, seed,
    repetition_penalty, system_prompt)` endpoint."""
    return {"text": request.prompt, "max_tokens": request.max_tokens, "temperature": p.temperature,
            "top_p": p.top_p, "top_k": p.top_k, "seed": p.seed, "repetition_penalty": p.repetition_penalty,
            "system_prompt": ""}


class _Timeline:
    """Turns successive whole-reply updates into first-token time, chunk gaps and chunk count."""

    def __init__(self, record: RequestRecord):
        self.record, self.text, self.changed = record, "", time.monotonic()
        self.reported_tokens: int | None = None  # the server's own count, when it gives one

    def update(self, text: object, now: float) -> None:
        if not isinstance(text, str) or len(text) <= len(self.text):
            return
        if self.record.first_token is None:
            self.record.first_token = now
        else:
            self.record.gaps.append(now - self.changed)
        self.record.tokens += 1
        self.text, self.changed = text, now


def _error_text(data: object) -> str:
    """The message of a Gradio `event: error` (a string, or {"error": message} when show_error is on)."""
    if isinstance(data, dict):
        data = data.get("error")
    return data if isinstance(data, str) and data else "The app reported an error without a message."


def _counted(record: RequestRecord, count_tokens: Callable[[str], int] | None) -> RequestRecord:
    """Replace the update count by a real token count of a successful reply, when a counter is given."""
    if record.error is None and count_tokens is not None:
        record.tokens = count_tokens(record.text)
    return record


class _HttpSessionSender:
    """One kept-alive HTTP connection per chat session; `send(session, request)` times one reply that
    `_read` streams into a `_Timeline`. Timing is exact: each event is read as it arrives."""

    def __init__(self, url: str, sessions: int, params: SamplingParams | None = None,
                 timeout: float = 60.0, count_tokens: Callable[[str], int] | None = None):
        import httpx

        self.base = url.rstrip("/")
        self.timeout, self.count_tokens = timeout, count_tokens
        self.params = params or SamplingParams()
        self._clients = [httpx.Client(timeout=httpx.Timeout(10.0, read=timeout)) for _ in range(sessions)]

    def connect_all(self) -> None:
        """Nothing to do: connections open on first use and are kept."""

    def _read(self, session: int, request: BenchRequest, timeline: _Timeline) -> None:
        raise NotImplementedError

    def __call__(self, session: int, request: BenchRequest) -> RequestRecord:
        record = RequestRecord(started=time.monotonic())
        timeline = _Timeline(record)
        try:
            self._read(session, request, timeline)
            record.text = timeline.text
            if timeline.reported_tokens is not None:
                record.tokens = timeline.reported_tokens
        except Exception as exc:  # noqa: BLE001 - every failure becomes the record's error
            record.error = MSG_BENCH_HUNG.format(seconds=self.timeout) if "ReadTimeout" in type(exc).__name__ \
                else (str(exc) or type(exc).__name__)
        finally:
            record.ended = time.monotonic()
        return _counted(record, self.count_tokens)

    def close(self) -> None:
        for client in self._clients:
            client.close()


class SseApiSender(_HttpSessionSender):
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

    def _read(self, session: int, request: BenchRequest, timeline: _Timeline) -> None:
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
                        raise RuntimeError(_error_text(data))
                    if event in ("generating", "complete") and isinstance(data, list) and data:
                        timeline.update(data[0], now)
                    if event == "complete":
                        return
                if now - timeline.changed > self.timeout:
                    raise TimeoutError(MSG_BENCH_HUNG.format(seconds=self.timeout))
        raise RuntimeError("The app closed the reply stream before it completed.")


def openai_root(url: str) -> str:
    """An OpenAI-compatible server's address without a trailing /v1 (users give it either way)."""
    return url.rstrip("/").removesuffix("/v1")


def _openai_body(request: BenchRequest, p: SamplingParams, model: str = "", image_url: str | None = None
                 ) -> dict[str, object]:
    """An OpenAI chat-completions body with the same settings as `_api_args` (temperature 0 is greedy),
    asking for the token count at the end (stream_options.include_usage)."""
    greedy = p.top_k <= 1 and p.top_p == 0
    content: object = request.prompt
    if image_url is not None:
        content = [{"type": "image_url", "image_url": {"url": image_url}}, {"type": "text", "text": request.prompt}]
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": request.max_tokens,
            "stream": True, "stream_options": {"include_usage": True}, "seed": p.seed,
            "repetition_penalty": p.repetition_penalty}
    if request.min_tokens:
        body["min_tokens"] = request.min_tokens
    if greedy:
        body["temperature"] = 0
    else:
        body.update(temperature=p.temperature, top_p=p.top_p or 1.0, top_k=p.top_k)
    return body


class OpenAISender(_HttpSessionSender):
    """Sends each request to an OpenAI-compatible `/v1/chat/completions` (the app's, or any server's),
    streamed, one kept-alive connection per chat session. `url` is the server's address with or without
    /v1; `model` names the model or adapter; `image` is sent with every request. Output tokens are the
    server's own count when it reports usage."""

    def __init__(self, url: str, sessions: int, params: SamplingParams | None = None, timeout: float = 60.0,
                 count_tokens: Callable[[str], int] | None = None, model: str = "", image: bytes | None = None):
        super().__init__(openai_root(url), sessions, params, timeout, count_tokens)
        self.model = model
        kind = (image_format(image) or "png").lower() if image is not None else None
        self.image_url = None if image is None else f"data:image/{kind};base64," + base64.b64encode(image).decode()

    def _read(self, session: int, request: BenchRequest, timeline: _Timeline) -> None:
        body = _openai_body(request, self.params, self.model, self.image_url)
        with self._clients[session].stream("POST", self.base + "/v1/chat/completions", json=body) as stream:
            if stream.status_code != 200:
                stream.read()
                raise RuntimeError(_error_text(stream.json().get("error", {}).get("message")))
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    return
                event = json.loads(payload)
                if "error" in event:
                    raise RuntimeError(_error_text(event["error"].get("message")))
                if event.get("usage") and not event.get("choices"):
                    timeline.reported_tokens = event["usage"].get("completion_tokens")
                    continue
                content = event["choices"][0]["delta"].get("content")
                if content:
                    timeline.update(timeline.text + content, time.monotonic())
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
            timeline = _Timeline(record)
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
        return _counted(record, self.count_tokens)

    def close(self) -> None:
        for client in self._clients:
            if client is not None:
                try:
                    client.close()
                except Exception:  # noqa: BLE001
                    pass
