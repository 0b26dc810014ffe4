"""OpenAI-compatible HTTP API on the app's own server: GET /v1/models, POST /v1/chat/completions.

Any OpenAI client (or curl) can chat with the deployment: `model` picks the base model (its Triton
name) or a LoRA adapter by name, images go as `image_url` parts with data: URLs, `stream: true` gives
server-sent events. It runs the chat panel's request path (prompt template, adapter registry with
register-once and eviction retry, image checks) without Gradio's per-event machinery: each reply is
read from Triton on the event loop with gRPC's asyncio API (other kinds on a reader thread) and handed on in
batches (app.api.stream_pump), so many concurrent streams cost the app little. At most `concurrency` replies are read at once; more get
429 with Retry-After (OpenAI clients retry). A client that disconnects cancels its request on the server.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import secrets
import threading
from dataclasses import replace

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.requests import ClientDisconnect
from starlette.routing import Route

from app.api.messages import (
    MSG_API_BODY_TOO_LARGE,
    MSG_API_BUSY,
    MSG_API_CONTENT_TYPE,
    MSG_API_INTERNAL,
    MSG_API_UNAUTHORIZED,
)
from app.api.openai_schema import (
    ChatRequest,
    ChunkWriter,
    completion_body,
    error_body,
    models_body,
    parse_chat_request,
    parse_json_body,
)
from app.api.reply_limit import reply_limit
from app.api.stream_pump import DeltaPump, open_on_loop
from app.chat.reply_outputs import parse_reply
from app.chat.turns import check_new_turn, open_stream, served_family, validate_user_text
from app.context import AppContext
from app.core.constants import API_MAX_BODY_BYTES
from app.core.conversation import PDF, VIDEO, Conversation
from app.core.errors import (
    ChatError,
    InputTooLong,
    InvalidImage,
    InvalidRequest,
    TextOnlyDeployment,
)

CLIENT_ERRORS = (InvalidRequest, InvalidImage, TextOnlyDeployment, InputTooLong)
LOG = logging.getLogger(__name__)
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
# A request body or reply text this small is parsed on the event loop: a worker-thread hop costs more than the work
# (3 hops were about a sixth of the app's time per request at 32 chats starting together).
INLINE_CHARS = 16_384


class BodyTooLarge(InvalidRequest):
    pass


class WrongContentType(InvalidRequest):
    pass


class ClientGone(Exception):
    """The caller hung up while its request body was arriving."""


def error_kind(exc: ChatError) -> str:
    """OpenAI's error type: the caller's to fix, or the server side's (unreachable, not ready, cache full)."""
    return "invalid_request_error" if isinstance(exc, CLIENT_ERRORS) else "server_error"


def error_response(exc: ChatError) -> JSONResponse:
    """400 for what the caller can fix (413 for a body over the limit), 503 for the server side."""
    kind = error_kind(exc)
    status = (413 if isinstance(exc, BodyTooLarge) else 415 if isinstance(exc, WrongContentType)
              else 400 if kind == "invalid_request_error" else 503)
    return JSONResponse(error_body(str(exc), kind), status_code=status)


def internal_error(exc: BaseException, doing: str) -> JSONResponse:
    """A bug still answers in JSON with a sentence, never a bare 500 page; the traceback goes to the log."""
    LOG.error("%s failed", doing, exc_info=exc)
    return JSONResponse(error_body(MSG_API_INTERNAL.format(detail=type(exc).__name__), "server_error"),
                        status_code=500)


def json_errors(handler):
    """Route wrapper: any unexpected exception becomes a JSON 500 (a caller that left gets nothing)."""

    @functools.wraps(handler)
    async def route(self, request: Request):
        try:
            return await handler(self, request)
        except ClientGone:
            return Response(status_code=400)  # nobody is left to read it
        except Exception as exc:  # noqa: BLE001 - the point: no bare "Internal Server Error"
            return internal_error(exc, f"{request.method} {request.url.path}")

    return route


class OpenAIApi:
    """The routes' behaviour; `mount(app)` adds them to a FastAPI app."""

    def __init__(self, ctx: AppContext, concurrency: int | None = None):
        self.ctx = ctx
        self.concurrency = concurrency or reply_limit(ctx.config.concurrency, ctx.deployment)
        # one slot per reply being read; freed by its reader thread, which always ends
        self._slots = threading.BoundedSemaphore(self.concurrency)

    def authorized(self, request: Request) -> bool:
        """Open unless the app has logins (--auth-file): then Bearer USER:PASSWORD or HTTP Basic."""
        logins = self.ctx.config.auth
        if not logins:
            return True
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "basic":
            try:
                value = base64.b64decode(value, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                return False
        elif scheme.lower() != "bearer":
            return False
        user, _, password = value.strip().partition(":")
        return any(secrets.compare_digest(user.encode(), u.encode()) &
                   secrets.compare_digest(password.encode(), p.encode()) for u, p in logins)

    @json_errors
    async def models(self, request: Request) -> JSONResponse:
        if not self.authorized(request):
            return JSONResponse(error_body(MSG_API_UNAUTHORIZED, "authentication_error"), status_code=401)
        body = await asyncio.get_running_loop().run_in_executor(None, self._models_body)
        return JSONResponse(body)

    def served_model(self, view: AppContext | None = None) -> str:
        """The base model's name as this API lists it (the deployment's, e.g. tensorrt_llm_bls or smollm2)."""
        view = view or self.ctx
        return view.deployment.model or view.config.model

    def _models_body(self) -> dict:
        """The app's own server's models as they are named; those of every other usable server listed (launched
        from the Build page, added in the chat) prefixed by its id: `build/tensorrt_llm_bls`, `added-1/pirate`."""
        deployment = self.ctx.deployment
        body = models_body(self.served_model(), deployment.adapter_names(), deployment.adapter_audit)
        for server in self.ctx.servers.listed()[1:]:
            if server.usable:
                view = self.ctx.view_of(server)
                more = models_body(self.served_model(view), view.deployment.adapter_names(),
                                   view.deployment.adapter_audit)["data"]
                body["data"] += [{**entry, "id": f"{server.id}/{entry['id']}",
                                  **({"parent": f"{server.id}/{entry['parent']}"} if "parent" in entry else {})}
                                 for entry in more]
        return body

    def _parse(self, raw: bytes) -> tuple[ChatRequest, AppContext]:
        """Worker thread: the body checked, in the app's terms (fields it leaves out: the model's defaults), and the
        server it goes to (the app's own, or the listed server its model's prefix names)."""
        body = parse_json_body(raw)
        model = body.get("model") if isinstance(body, dict) else None
        prefix, _, rest = model.partition("/") if isinstance(model, str) else ("", "", "")
        server = self.ctx.servers.get(prefix) if rest and prefix != self.ctx.servers.own.id else None
        if server is None:
            return parse_chat_request(body, self.served_model(), self.ctx.deployment.sampling_defaults()), self.ctx
        view = self.ctx.view_of(self.ctx.servers.usable(server.id))
        chat = parse_chat_request({**body, "model": rest}, self.served_model(view),
                                  view.deployment.sampling_defaults())
        return replace(chat, model=model), view

    @json_errors
    async def chat_completions(self, request: Request):
        if not self.authorized(request):
            return JSONResponse(error_body(MSG_API_UNAUTHORIZED, "authentication_error"), status_code=401)
        loop = asyncio.get_running_loop()
        try:
            raw = await _body_bytes(request)
            # parsing and checking a large body is CPU work: off the event loop, which serves every stream
            chat, view = await _worked(len(raw), self._parse, raw)
        except ChatError as exc:
            return error_response(exc)
        if not self._slots.acquire(blocking=False):
            return JSONResponse(error_body(MSG_API_BUSY.format(limit=self.concurrency), "rate_limit_error"),
                                status_code=429, headers={"Retry-After": "1"})
        try:  # opening is short (it may send an adapter's weights once): the loop's default threads
            stream = await open_on_loop(self._open, chat, view)  # a Triton stream then reads on this loop
        except Exception as exc:
            self._slots.release()
            if isinstance(exc, ChatError):
                return error_response(exc)
            return internal_error(exc, "opening a reply")  # a bug must still answer in JSON
        pump = DeltaPump(loop).start(stream, on_end=self._slots.release)
        if chat.stream:
            return StreamingResponse(self._events(chat, stream, pump, view), media_type="text/event-stream",
                                     headers=SSE_HEADERS)
        watcher = asyncio.create_task(_cancel_when_gone(request, stream))
        try:
            text = "".join([part async for part in pump.texts()]).strip()
        finally:
            watcher.cancel()
            stream.cancel()  # no-op when finished; frees the server if this handler is cancelled
        if pump.error is not None:
            return error_response(_as_chat_error(pump.error))
        outputs = await _worked(len(text), self._outputs, chat, text, view)
        return JSONResponse(completion_body(chat.model, text, _finish_reason(stream, chat), stream.chunks, outputs,
                                            stream.notes))

    def _outputs(self, chat: ChatRequest, text: str, view: AppContext):
        """Worker thread: the reply parsed (a chart's table, grounded boxes, a markdown page), None for prose."""
        pictures = chat.conversation.current_images()
        return parse_reply(text, served_family(view), pictures[-1] if pictures else None) if text else None

    def _open(self, chat: ChatRequest, view: AppContext):
        """Worker thread: the chat panel's path from request to an open server stream (a video part sampled to
        the served family's frame count, a PDF's pages rendered, checked against every limit first)."""
        last = chat.conversation.turns[-1]
        validate_user_text(last.text, bool(last.media))
        if any(m.kind in (VIDEO, PDF) and not m.frames for m in last.media):
            media = check_new_turn(view, last.text, last.media, chat.pdf_pages)
            turns = (*chat.conversation.turns[:-1], replace(last, media=media))
            chat = replace(chat, conversation=Conversation(turns))
        return open_stream(view, chat.conversation, chat.params, chat.system_prompt, chat.adapter,
                           stop=chat.stop, min_tokens=chat.min_tokens)

    async def _events(self, chat: ChatRequest, stream, pump: DeltaPump, view: AppContext):
        writer = ChunkWriter(chat.model)
        try:
            async for event in self._chunks(writer, chat, stream, pump, view):
                yield event
        except Exception as exc:  # noqa: BLE001 - a bug mid-stream still ends the stream the documented way
            LOG.error("streaming a reply failed", exc_info=exc)
            yield writer.error(MSG_API_INTERNAL.format(detail=type(exc).__name__), "server_error")
            yield writer.done()
        finally:
            stream.cancel()  # the client went away (or the reply ended): stop generating on the server

    async def _chunks(self, writer: ChunkWriter, chat: ChatRequest, stream, pump: DeltaPump, view: AppContext):
        """The reply's events; the role goes out with the first text and the end events together (each HTTP write
        costs the app its trip through every middleware's send)."""
        started = False
        said: list[str] = []
        pending = writer.role()
        async for text in pump.texts():
            if not started:  # replies start after the template's "assistant" header: drop its spaces
                text = text.lstrip()
                started = bool(text)
                if not started:
                    continue
            said.append(text)
            yield pending + writer.text(text)
            pending = ""
        if pump.error is not None:
            exc = _as_chat_error(pump.error)
            pending += writer.error(str(exc), error_kind(exc))
        else:
            text = "".join(said).strip()
            outputs = await _worked(len(text), self._outputs, chat, text, view)
            pending += writer.finish(_finish_reason(stream, chat), outputs, stream.notes)
            if chat.include_usage:
                pending += writer.usage(stream.chunks)
        yield pending + writer.done()

    def routes(self) -> list[Route]:
        """The /v1 routes, for the app to be built with (so they answer from its first request on)."""
        return [Route("/v1/models", self.models, methods=["GET"]),
                Route("/v1/chat/completions", self.chat_completions, methods=["POST"])]

    def mount(self, app: FastAPI) -> None:
        """Put the routes first, ahead of the UI's own routes, in an app already built."""
        app.router.routes[:0] = self.routes()


async def _worked(size: int, work, *args):
    """`work(*args)` on the event loop when its input is small (`size` chars or bytes), else on a worker thread."""
    if size <= INLINE_CHARS:
        return work(*args)
    return await asyncio.get_running_loop().run_in_executor(None, work, *args)


async def _body_bytes(request: Request) -> bytes:
    """The request body: JSON only, at most API_MAX_BODY_BYTES (the app's HTTP guard counts too)."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise WrongContentType(MSG_API_CONTENT_TYPE.format(content_type=content_type[:80] or "nothing"))
    too_large = BodyTooLarge(MSG_API_BODY_TOO_LARGE.format(limit_mb=API_MAX_BODY_BYTES / 2**20))
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > API_MAX_BODY_BYTES:
        raise too_large
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > API_MAX_BODY_BYTES:
                raise too_large
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientGone() from None
    return b"".join(chunks)


async def _cancel_when_gone(request: Request, stream, every: float = 0.5) -> None:
    """Cancel a non-streamed reply on the server when its caller has hung up."""
    while True:
        await asyncio.sleep(every)
        if await request.is_disconnected():
            stream.cancel()
            return


def _as_chat_error(exc: Exception) -> ChatError:
    return exc if isinstance(exc, ChatError) else ChatError(f"The reply failed: {type(exc).__name__}: {exc}")


def _finish_reason(stream, chat: ChatRequest) -> str:
    reported = stream.finish_reason  # the server's own word where it gives one (llmapi)
    if reported in ("stop", "length"):
        return reported
    return "length" if stream.chunks >= chat.params.max_tokens else "stop"
