"""OpenAI chat-completions requests in, the app's chat terms out; reply chunks back in OpenAI's shape.

Pure functions, no server: `parse_chat_request` checks a request body and says what is wrong in one
plain sentence (InvalidRequest), the way the chat panel does.

Sampling follows OpenAI's meaning of the fields: a field left out takes the served model's own default (its
generation_config.json, as vLLM's `--generation-config auto` reads it; `defaults` below), else OpenAI's (temperature
and top_p 1.0, sampling). Temperature 0 is greedy, and a request without `seed` gets a fresh one (TensorRT-LLM would otherwise
repeat the same reply for the same prompt). `presence_penalty` and `frequency_penalty` have OpenAI's
meaning; left out (and not among the model's defaults), they are the app's defaults (app.core.sampling: presence and frequency 0.5, which keep small
greedy models out of loops), so the API replies as the chat does. `top_k` and `repetition_penalty` are
accepted as extensions, as vLLM and trtllm-serve accept them, and so is `min_tokens`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field, replace

from app.adapters.audit import AdapterAudit
from app.api.messages import (
    MSG_API_BAD_BASE64,
    MSG_API_BAD_CONTENT,
    MSG_API_BAD_JSON,
    MSG_API_BAD_PART,
    MSG_API_BAD_ROLE,
    MSG_API_BOOL,
    MSG_API_FILE_ID,
    MSG_API_LAST_NOT_USER,
    MSG_API_MIN_TOKENS,
    MSG_API_MODEL_NAME,
    MSG_API_N,
    MSG_API_NO_MESSAGES,
    MSG_API_NOT_AN_OBJECT,
    MSG_API_NOT_PDF_DATA,
    MSG_API_PDF_PAGES,
    MSG_API_REMOTE_IMAGE,
    MSG_API_REMOTE_VIDEO,
    MSG_API_STOP,
    MSG_API_STREAM_OPTIONS,
    MSG_API_TOO_DEEP,
)
from app.chat.adapter_names import adapter_named
from app.chat.reply_outputs import ReplyOutputs, as_fields
from app.chat.sampling import sampling_params
from app.chat.turns import check_conversation_size
from app.core.constants import (
    API_MAX_MODEL_CHARS,
    API_MAX_STOP_CHARS,
    API_MAX_STOP_WORDS,
    MAX_IMAGE_BYTES,
    MAX_JSON_DEPTH,
    MAX_PDF_BYTES,
    MAX_VIDEO_BYTES,
)
from app.core.conversation import IMAGE, PDF, VIDEO, Conversation, Media, ReplyVersion, Turn
from app.core.errors import InvalidImage, InvalidRequest
from app.core.messages import (
    MSG_IMAGE_TOO_LARGE_BYTES,
    MSG_INVALID_TEXT,
)
from app.core.sampling import SAMPLING_LIMITS, SamplingParams
from app.vision.messages import MSG_PDF_TOO_LARGE_BYTES, MSG_VIDEO_TOO_LARGE_BYTES

ROLES = ("system", "user", "assistant")
DATA_URL = re.compile(r"data:image/[A-Za-z0-9.+-]+;base64,(?P<data>.*)", re.S)
VIDEO_DATA_URL = re.compile(r"data:(?:video/[A-Za-z0-9.+-]+|image/gif);base64,(?P<data>.*)", re.S)
PDF_DATA_URL = re.compile(r"data:application/pdf;base64,(?P<data>.*)", re.S)
PAGE_RANGE = re.compile(r"\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*")
SURROGATE = re.compile("[\ud800-\udfff]")  # a lone surrogate: text with no UTF-8 form
OUTPUTS_FIELD = "outputs"  # extension on the reply's message (and the last streamed delta); OpenAI clients ignore it
NOTES_FIELD = "notes"  # extension beside it: what the deployment did not apply of the request, and why
OPENAI_DEFAULTS = {"temperature": 1.0, "top_p": 1.0}
_MB = 1024 * 1024


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completions request in the app's terms."""

    conversation: Conversation  # the last turn is the user's, with its images (earlier images are named only:
    system_prompt: str | None  # they are not re-sent, as in the chat panel)
    params: SamplingParams
    adapter: str | None  # None for the base model
    model: str  # the name the caller used, echoed in replies
    stream: bool = False
    stop: list[str] = field(default_factory=list)
    include_usage: bool = False  # stream_options.include_usage: a last chunk with the token count
    min_tokens: int = 0  # extension (as vLLM): no end-of-sequence before this many tokens
    pdf_pages: str | None = None  # extension: a file part's "pages", the range read of the message's PDFs


def _flag(body: dict, name: str) -> bool:
    value = body.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidRequest(MSG_API_BOOL.format(name=name))
    return value


def _base64(data: str, index: int) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(MSG_API_BAD_BASE64.format(index=index)) from None


def _refuse_over(data: str, limit: int, message: str, name: str) -> None:
    """InvalidImage with `message` when the base64 text `data` holds more than `limit` bytes (before decoding)."""
    if len(data) * 3 // 4 > limit + 3:
        raise InvalidImage(message.format(name=name, size_mb=len(data) * 3 / 4 / _MB, limit_mb=limit / _MB))


def _image_bytes(url: object, index: int, decode: bool = True, video: bool = False) -> bytes:
    if isinstance(url, dict):
        url = url.get("url")
    match = (VIDEO_DATA_URL if video else DATA_URL).fullmatch(url.strip()) if isinstance(url, str) else None
    if match is None:
        raise InvalidRequest((MSG_API_REMOTE_VIDEO if video else MSG_API_REMOTE_IMAGE).format(index=index))
    data = match.group("data")
    if video:
        _refuse_over(data, MAX_VIDEO_BYTES, MSG_VIDEO_TOO_LARGE_BYTES, f"messages[{index}]'s video")
    else:
        _refuse_over(data, MAX_IMAGE_BYTES, MSG_IMAGE_TOO_LARGE_BYTES, f"messages[{index}]'s image")
    if not decode:  # an earlier message's image: checked, but not sent (so not decoded)
        return b""
    return _base64(data, index)


def _pdf_part(file: object, index: int, decode: bool = True) -> tuple[bytes, str, str | None]:
    """A file part's PDF as OpenAI's chat API sends one ({"file_data": "data:application/pdf;base64,...",
    "filename": ...}): its bytes (b"" unless `decode`), its name and the page range asked for (extension)."""
    if not isinstance(file, dict):
        raise InvalidRequest(MSG_API_NOT_PDF_DATA.format(index=index))
    if file.get("file_id") is not None and file.get("file_data") is None:
        raise InvalidRequest(MSG_API_FILE_ID.format(index=index))
    url = file.get("file_data")
    match = PDF_DATA_URL.fullmatch(url.strip()) if isinstance(url, str) else None
    if match is None:
        raise InvalidRequest(MSG_API_NOT_PDF_DATA.format(index=index))
    name = file.get("filename") if isinstance(file.get("filename"), str) and file["filename"].strip() else None
    name = (name or f"messages[{index}]'s PDF").strip()[:200]
    pages = file.get("pages")
    if pages is not None and not (isinstance(pages, str) and PAGE_RANGE.fullmatch(pages)):
        raise InvalidRequest(MSG_API_PDF_PAGES.format(index=index))
    data = match.group("data")
    _refuse_over(data, MAX_PDF_BYTES, MSG_PDF_TOO_LARGE_BYTES, name)
    return (_base64(data, index) if decode else b""), name, pages.strip() if pages else None


@dataclass(frozen=True)
class _Content:
    """One message's content in the app's terms: its text, its files as (kind, bytes, name) (bytes only for the
    message that is sent) and the page range its file parts asked for."""

    text: str
    files: list[tuple[str, bytes, str | None]]
    pdf_pages: str | None = None


def _content(message: dict, index: int, decode: bool = True) -> _Content:
    """Text and files of one message's content (a string or a list of parts); the files are decoded only with
    `decode`."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return _Content(content or "", [])
    if not isinstance(content, list):
        raise InvalidRequest(MSG_API_BAD_CONTENT.format(index=index))
    texts, files, pages = [], [], None
    for number, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else type(part).__name__
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url":
            files.append((IMAGE, _image_bytes(part.get("image_url"), index, decode), None))
        elif kind == "video_url":  # as vLLM takes it: {"type": "video_url", "video_url": {"url": "data:video/..."}}
            files.append((VIDEO, _image_bytes(part.get("video_url"), index, decode, video=True), None))
        elif kind == "file":  # as OpenAI takes a PDF: {"type": "file", "file": {"file_data": ..., "filename": ...}}
            data, name, asked = _pdf_part(part.get("file"), index, decode)
            files.append((PDF, data, name))
            pages = asked or pages
        else:
            raise InvalidRequest(MSG_API_BAD_PART.format(index=index, part=number, kind=kind))
    return _Content("\n".join(texts), files, pages)


def _text_chars(message: object) -> int:
    """Characters of a message's text (its string content or its text parts); 0 for what is not text."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(part["text"]) for part in content
                   if isinstance(part, dict) and isinstance(part.get("text"), str))
    return 0


def check_request_size(messages: list) -> None:
    """Refuse a conversation over the app's bounds (app/chat/turns.py) before any of it is processed."""
    check_conversation_size(len(messages), sum(map(_text_chars, messages)))


def _conversation(messages: object) -> tuple[Conversation, str | None, str | None]:
    """The conversation, the system prompt and the page range the last message's PDFs are read in."""
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest(MSG_API_NO_MESSAGES)
    check_request_size(messages)
    turns, system, pages = [], [], None
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidRequest(MSG_API_NO_MESSAGES)
        role = message.get("role")
        if role not in ROLES:
            raise InvalidRequest(MSG_API_BAD_ROLE.format(index=index, role=role))
        content = _content(message, index, decode=index == last)  # only the last message's files are sent
        if role == "system":
            system.append(content.text)
        elif role == "assistant":
            turns.append(Turn.reply(ReplyVersion(content.text)))
        else:  # an earlier message's files are checked, then named only (not decoded, not sent)
            # a video is read (sampled to the served family's frame count) and a PDF rendered when the request
            # is opened
            media = ((Media.of(data) if kind == IMAGE else Media(name=name or f"{kind} {number}", data=data, kind=kind))
                     if index == last else Media(name=name or f"{kind} {number}", kind=kind)
                     for number, (kind, data, name) in enumerate(content.files, 1))
            turns.append(Turn.user(content.text, tuple(media)))
            pages = content.pdf_pages if index == last else pages
    if messages[-1].get("role") != "user":
        raise InvalidRequest(MSG_API_LAST_NOT_USER)
    return Conversation(tuple(turns)), "\n".join(system) if system else None, pages


def _include_usage(body: dict) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise InvalidRequest(MSG_API_STREAM_OPTIONS)
    return _flag(options, "include_usage")


def _min_tokens(body: dict, params: SamplingParams) -> int:
    value = body.get("min_tokens")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= params.max_tokens:
        raise InvalidRequest(MSG_API_MIN_TOKENS.format(value=value, limit=params.max_tokens))
    return value


def _stop_words(value: object) -> list[str]:
    if value is None:
        return []
    words = [value] if isinstance(value, str) else value
    if not isinstance(words, list) or len(words) > API_MAX_STOP_WORDS or not all(
            isinstance(w, str) and 0 < len(w) <= API_MAX_STOP_CHARS for w in words):
        raise InvalidRequest(MSG_API_STOP.format(limit=API_MAX_STOP_WORDS, chars=API_MAX_STOP_CHARS))
    return list(words)


def _sampling(body: dict, defaults: dict | None = None) -> SamplingParams:
    """The request's sampling: each field the caller's, else the model's default (`defaults`), else OpenAI's (else
    the app's)."""
    if body.get("n") not in (None, 1):
        raise InvalidRequest(MSG_API_N)
    fields = ("top_k", "repetition_penalty", "seed", "presence_penalty", "frequency_penalty")
    raw = {**OPENAI_DEFAULTS, **(defaults or {})}
    raw.update({name: body[name] for name in (*fields, *OPENAI_DEFAULTS) if body.get(name) is not None})
    raw["max_tokens"] = next((body[k] for k in ("max_completion_tokens", "max_tokens") if body.get(k) is not None),
                             SAMPLING_LIMITS["max_tokens"][0])
    if "seed" not in raw:
        raw["seed"] = secrets.randbelow(2**31)
    greedy = raw["temperature"] == 0 and not isinstance(raw["temperature"], bool)
    if greedy:
        raw["temperature"] = 1.0
    params = sampling_params(**raw)  # checks every value the caller sent
    # TensorRT-LLM has no temperature 0: greedy is top_k 1 (and no top_p)
    return replace(params, top_k=1, top_p=0.0) if greedy else params


def model_is_base(model: str, served_model: str) -> bool:
    """Whether the `model` a caller named means the base model (no adapter)."""
    return model == served_model or adapter_named(model) is None


def parse_chat_request(body: object, served_model: str, defaults: dict | None = None) -> ChatRequest:
    """Check an OpenAI chat-completions body; InvalidRequest with a plain message when it is wrong. `defaults`: the
    served model's sampling defaults ({field: value}) for the fields the body leaves out."""
    if not isinstance(body, dict):
        raise InvalidRequest(MSG_API_NOT_AN_OBJECT)
    model = body.get("model") or ""
    if not isinstance(model, str):
        raise InvalidRequest(MSG_API_NOT_AN_OBJECT)
    if len(model) > API_MAX_MODEL_CHARS:
        raise InvalidRequest(MSG_API_MODEL_NAME.format(limit=API_MAX_MODEL_CHARS))
    conversation, system, pdf_pages = _conversation(body.get("messages"))
    params = _sampling(body, defaults)
    return ChatRequest(
        conversation=conversation, system_prompt=system, params=params, min_tokens=_min_tokens(body, params),
        adapter=None if model_is_base(model, served_model) else model, model=model or served_model,
        stream=_flag(body, "stream"), stop=_stop_words(body.get("stop")), include_usage=_include_usage(body),
        pdf_pages=pdf_pages,
    )


def _field(path: tuple) -> str:
    """How a message names the place of a value in the body: 'message' for anything in messages."""
    if not path or path[0] == "messages" or not isinstance(path[0], str):
        return "message"
    return str(path[0]).replace("_", " ")


def check_json_values(body: object, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse a parsed body that nests deeper than `max_depth` or holds text with no UTF-8 form (a lone
    surrogate such as "\\ud800", which JSON can spell but nothing later can encode). Walks without recursion."""
    stack: list[tuple[object, int, tuple]] = [(body, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            bad = SURROGATE.search(value)
            if bad is not None:
                raise InvalidRequest(MSG_INVALID_TEXT.format(field=_field(path), position=bad.start()))
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > max_depth:
            raise InvalidRequest(MSG_API_TOO_DEEP.format(limit=max_depth))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            bad = SURROGATE.search(key) if isinstance(key, str) else None
            if bad is not None:
                raise InvalidRequest(MSG_INVALID_TEXT.format(field="name of a field", position=bad.start()))
            stack.append((item, depth + 1, path or (key,)))


def parse_json_body(raw: bytes) -> object:
    """The request body as JSON, checked by `check_json_values`; InvalidRequest with a plain message."""
    try:
        body = json.loads(raw)
    except RecursionError:
        raise InvalidRequest(MSG_API_TOO_DEEP.format(limit=MAX_JSON_DEPTH)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(MSG_API_BAD_JSON.format(detail=str(exc).split(":")[0])) from None
    check_json_values(body)
    return body


def error_body(message: str, kind: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class ChunkWriter:
    """Server-sent events of one streamed reply, in OpenAI's chat.completion.chunk shape.

    Each event's JSON is made once as a template; a text chunk only encodes its own text."""

    def __init__(self, model: str):
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = model
        head = json.dumps({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                           "model": model})[:-1]
        self._text_head = "data: " + head + ', "choices": [{"index": 0, "delta": {"content": '
        self._text_tail = '}, "finish_reason": null}]}\n\n'
        self._head = head

    def role(self) -> str:
        return self._event({"role": "assistant", "content": ""}, None)

    def text(self, delta: str) -> str:
        return self._text_head + json.dumps(delta) + self._text_tail

    def finish(self, reason: str, outputs: ReplyOutputs | None = None, notes: tuple[str, ...] = ()) -> str:
        """The last choice chunk; its delta carries `outputs` when the reply was parsed and `notes` when the
        deployment did not apply part of the request (the extension fields)."""
        return self._event(_extensions(outputs, notes), reason)

    def usage(self, completion_tokens: int) -> str:
        """The last chunk when the caller asked for stream_options.include_usage (no choices)."""
        return f"data: {self._head}, \"choices\": [], \"usage\": {json.dumps(usage_body(completion_tokens))}}}\n\n"

    def error(self, message: str, kind: str = "server_error") -> str:
        return "data: " + json.dumps(error_body(message, kind)) + "\n\n"

    @staticmethod
    def done() -> str:
        return "data: [DONE]\n\n"

    def _event(self, delta: dict, reason: str | None) -> str:
        choices = json.dumps([{"index": 0, "delta": delta, "finish_reason": reason}])
        return f"data: {self._head}, \"choices\": {choices}}}\n\n"


def usage_body(completion_tokens: int) -> dict:
    """Generated tokens only: the app sends text to the server, which counts the prompt's tokens itself."""
    return {"completion_tokens": completion_tokens}


def _extensions(outputs: ReplyOutputs | None, notes: tuple[str, ...]) -> dict:
    fields = as_fields(outputs)
    return {**({OUTPUTS_FIELD: fields} if fields else {}), **({NOTES_FIELD: list(notes)} if notes else {})}


def completion_body(model: str, text: str, reason: str, completion_tokens: int,
                    outputs: ReplyOutputs | None = None, notes: tuple[str, ...] = ()) -> dict:
    """A whole (non-streamed) chat.completion; the message carries `outputs` (the extension field: a chart's
    table, grounded boxes, a markdown page) when the reply was parsed into one, and `notes` when the deployment did
    not apply part of the request (an encoder-decoder family's sampling: the reply is greedy)."""
    message = {"role": "assistant", "content": text, **_extensions(outputs, notes)}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": usage_body(completion_tokens),
    }


def audit_fields(audit: AdapterAudit | None) -> dict:
    """An adapter's audit as /v1/models fields: the modules applied and dropped with their share of the weights, and
    whether the served model's shapes were checked (`notes` says why not)."""
    if audit is None:
        return {}
    return {"applied_modules": list(audit.applied.names), "applied_percent": audit.applied_percent,
            "partial": audit.partial,
            "dropped": [{"modules": list(d.names), "percent": audit.percent(d.params), "reason": d.reason}
                        for d in audit.dropped],
            "notes": list(audit.flags), "rank": audit.rank, "shapes_checked": audit.shapes_checked}


def models_body(served_model: str, adapters: list[str], audit_of=lambda name: None) -> dict:
    """GET /v1/models: the base model under its Triton name, then one entry per adapter (with its audit's fields
    when `audit_of(name)` has one)."""
    created = int(time.time())
    entries = [{"id": served_model, "object": "model", "created": created, "owned_by": "triton"}]
    entries += [{"id": name, "object": "model", "created": created, "owned_by": "lora", "parent": served_model,
                 **audit_fields(audit_of(name))} for name in adapters]
    return {"object": "list", "data": entries}
