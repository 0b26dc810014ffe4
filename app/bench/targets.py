"""Where benchmark requests go: straight to Triton (the app's own client), through the deployment interface
(the Benchmark tab: any deployment kind), or to an OpenAI-compatible API.

Each sender turns one BenchRequest into a RequestRecord: time to first streamed text, the gaps
between streamed chunks, the end, the output token count, or the error message. No sender raises.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace

from app.bench.load import BenchRequest
from app.bench.messages import MSG_BENCH_HUNG, MSG_BENCH_STOPPED
from app.bench.stats import RequestRecord
from app.core.conversation import Conversation
from app.core.errors import ChatError
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from app.triton.client import ModelInfo, TritonChatClient
from app.vision.images import image_format

# (hook value, prompt, model info) -> (prompt, extra inputs); see app.bench.hooks
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
        with recorded(record) as opened:
            info = self.client.model_info()
            prompt, extra = request.prompt, {}
            if request.min_tokens:
                extra["min_length"] = request.min_tokens
            for hook in self.hooks:
                prompt, more = hook(prompt, info)
                extra.update(more)
            record.started = time.monotonic()
            stream = self.client.stream(prompt, replace(self.params, max_tokens=request.max_tokens), extra=extra)
            opened.append(stream)
            record.tokens = time_chunks(stream, record)
            record.text = stream.text
            record.tokens = stream.chunks  # responses that carried text
        return counted(record, self.count_tokens)


@contextmanager
def recorded(record: RequestRecord) -> Iterator[list]:
    """Run one request's block: a failure becomes `record.error` (a benchmark reports every failure, it never
    stops on one), the end time is noted, and the streams the block appends to the yielded list are cancelled."""
    opened: list = []
    try:
        yield opened
    except ChatError as exc:
        record.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - reported in the record
        record.error = f"{type(exc).__name__}: {exc}"
    finally:
        record.ended = time.monotonic()
        for stream in opened:
            stream.cancel()


def time_chunks(stream, record: RequestRecord, stop=None) -> int:
    """Read `stream` to its end, noting the first chunk's time and the gaps between chunks; the chunk count.

    `stop` (a threading.Event): once set, the stream is cancelled at its next chunk."""
    last, count = None, 0
    for _ in stream:
        if stop is not None and stop.is_set():
            stream.cancel()
            break
        now = time.monotonic()
        if last is None:
            record.first_token = now
        else:
            record.gaps.append(now - last)
        last, count = now, count + 1
    return count


class DeploymentSender:
    """Streams each request through a deployment (whatever its kind) as one user message, as `send(request)`,
    with an adapter (None: the base model) and images (paths or bytes) on every request.

    Once `stop` (a threading.Event) is set, requests not yet sent are not sent (their record says so) and
    open streams are cancelled at their next chunk."""

    def __init__(self, deployment, params: SamplingParams | None = None, adapter: str | None = None,
                 images: list | None = None, stop=None):
        self.deployment = deployment
        self.params = params or SamplingParams()
        self.adapter, self.images, self.stop = adapter, list(images or ()) or None, stop

    def __call__(self, request: BenchRequest) -> RequestRecord:
        record = RequestRecord(started=time.monotonic())
        with recorded(record) as opened:
            if self.stop is not None and self.stop.is_set():
                raise ChatError(MSG_BENCH_STOPPED)
            stream = self.deployment.open_reply(ReplyRequest(
                Conversation.asking(request.prompt, self.images or ()), replace(self.params, max_tokens=request.max_tokens),
                adapter=self.adapter, min_tokens=request.min_tokens))
            opened.append(stream)
            time_chunks(stream, record, self.stop)
            record.text, record.tokens = stream.text, stream.chunks
        return record


class Timeline:
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


def error_text(data: object) -> str:
    """The message of a Gradio `event: error` (a string, or {"error": message} when show_error is on)."""
    if isinstance(data, dict):
        data = data.get("error")
    return data if isinstance(data, str) and data else "The app reported an error without a message."


def counted(record: RequestRecord, count_tokens: Callable[[str], int] | None) -> RequestRecord:
    """Replace the update count by a real token count of a successful reply, when a counter is given."""
    if record.error is None and count_tokens is not None:
        record.tokens = count_tokens(record.text)
    return record


class HttpSessionSender:
    """One kept-alive HTTP connection per chat session; `send(session, request)` times one reply that
    `_read` streams into a `Timeline`. Timing is exact: each event is read as it arrives."""

    def __init__(self, url: str, sessions: int, params: SamplingParams | None = None,
                 timeout: float = 60.0, count_tokens: Callable[[str], int] | None = None):
        import httpx

        self.base = url.rstrip("/")
        self.timeout, self.count_tokens = timeout, count_tokens
        self.params = params or SamplingParams()
        self._clients = [httpx.Client(timeout=httpx.Timeout(10.0, read=timeout)) for _ in range(sessions)]

    def connect_all(self) -> None:
        """Nothing to do: connections open on first use and are kept."""

    def _read(self, session: int, request: BenchRequest, timeline: Timeline) -> None:
        raise NotImplementedError

    def __call__(self, session: int, request: BenchRequest) -> RequestRecord:
        record = RequestRecord(started=time.monotonic())
        timeline = Timeline(record)
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
        return counted(record, self.count_tokens)

    def close(self) -> None:
        for client in self._clients:
            client.close()


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
            "repetition_penalty": p.repetition_penalty, "presence_penalty": p.presence_penalty,
            "frequency_penalty": p.frequency_penalty}
    if request.min_tokens:
        body["min_tokens"] = request.min_tokens
    if greedy:
        body["temperature"] = 0
    else:
        body.update(temperature=p.temperature, top_p=p.top_p or 1.0, top_k=p.top_k)
    return body


class OpenAISender(HttpSessionSender):
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

    def _read(self, session: int, request: BenchRequest, timeline: Timeline) -> None:
        body = _openai_body(request, self.params, self.model, self.image_url)
        with self._clients[session].stream("POST", self.base + "/v1/chat/completions", json=body) as stream:
            if stream.status_code != 200:
                stream.read()
                raise RuntimeError(error_text(stream.json().get("error", {}).get("message")))
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    return
                event = json.loads(payload)
                if "error" in event:
                    raise RuntimeError(error_text(event["error"].get("message")))
                if event.get("usage") and not event.get("choices"):
                    timeline.reported_tokens = event["usage"].get("completion_tokens")
                    continue
                content = event["choices"][0]["delta"].get("content")
                if content:
                    timeline.update(timeline.text + content, time.monotonic())
        raise RuntimeError("The app closed the reply stream before it completed.")
