"""Gradio API endpoints (scriptable with gradio_client): the chat panel's and the Compare tab's jobs without the
browser."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import gradio as gr
from gradio.data_classes import FileData

from app.api.messages import MSG_API_CANNOT_DESCRIBE, MSG_API_NO_IMAGES, MSG_NO_REQUEST
from app.api.stream_pump import DeltaPump, open_on_loop
from app.chat.adapter_names import adapter_named
from app.chat.compare import DEFAULT_MAX_TOKENS, CompareRun, column_names
from app.chat.reply_outputs import as_fields, parse_reply
from app.chat.sampling import panel_sampling, require_text, sampling_params
from app.chat.server_choice import add_server as add_listed_server
from app.chat.throttle import LIVE, update_interval
from app.chat.turns import add_user_message, check_new_turn, open_stream, served_family, validate_user_text
from app.context import AppContext
from app.core.conversation import Conversation
from app.core.errors import ChatError, InvalidRequest
from app.core.sampling import SAMPLING_LIMITS

D = {name: spec[0] for name, spec in SAMPLING_LIMITS.items()}
UPLOAD_ROOTS = [Path(tempfile.gettempdir()) / "gradio"]


def upload_roots() -> list[Path]:
    """Where Gradio puts uploaded files."""
    return [Path(os.environ["GRADIO_TEMP_DIR"])] if os.environ.get("GRADIO_TEMP_DIR") else UPLOAD_ROOTS


def is_uploaded(path: str | Path) -> bool:
    """Whether `path` lies in Gradio's upload folder (after resolving links)."""
    resolved = Path(str(path)).resolve()
    return any(resolved.is_relative_to(root.resolve()) for root in upload_roots())


def uploaded_paths(files: list | None) -> list[str]:
    """Local paths of files uploaded through the API; anything outside Gradio's upload folder is refused."""
    paths = []
    for item in files or []:
        raw = item.get("path") if isinstance(item, dict) else getattr(item, "path", None)
        path = Path(str(raw or "")).resolve()
        if not raw or not is_uploaded(path):
            raise InvalidRequest("Images must be uploaded with the request (gradio_client.handle_file(path)).")
        paths.append(str(path))
    return paths


def access_refused(ctx: AppContext, request: gr.Request | None) -> str | None:
    """None when the caller may make the app run programs or connect somewhere (a login, or the launch token on
    loopback); otherwise the reason, in a sentence."""
    if request is None:
        return MSG_NO_REQUEST
    return ctx.access.refusal(request.username, dict(request.headers or {}), dict(request.cookies or {}))


def require_access(ctx: AppContext, request: gr.Request | None) -> None:
    """The guard of every endpoint that makes the app run programs, write files or connect somewhere: a Gradio error
    with access_refused's reason (nothing run) unless the caller may."""
    reason = access_refused(ctx, request)
    if reason:
        raise gr.Error(reason, print_exception=False)


def server_view(ctx: AppContext, server_id: str | None) -> AppContext:
    """The context of the listed server `server_id` (empty: the app's own); InvalidRequest naming the listed ones
    when it is not listed or cannot be used now."""
    return ctx.view_of(ctx.servers.usable(server_id)) if server_id else ctx


async def _open_or_cancel(opened):
    """`opened()` on a worker thread; a caller that leaves meanwhile still has the stream it opened cancelled."""
    future = open_on_loop(opened)  # its Triton stream reads on this loop
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        future.add_done_callback(lambda done: done.cancelled() or done.exception() or done.result().cancel())
        raise


def register(app_ctx: AppContext) -> None:
    """Add the `generate`, `reply_outputs`, `compare`, `what_the_model_saw`, `list_servers` and `add_server` endpoints
    to the current Blocks."""
    ctx = app_ctx

    async def generate(text: str, max_tokens: int = D["max_tokens"], temperature: float = D["temperature"],
                 top_p: float = D["top_p"], top_k: int = D["top_k"], seed: int = D["seed"],
                 repetition_penalty: float = D["repetition_penalty"], system_prompt: str = "",
                 adapter: str = "", images: list[FileData] | None = None, decoding: str = "",
                 presence_penalty: float = D["presence_penalty"],
                 frequency_penalty: float = D["frequency_penalty"], pdf_pages: str = "",
                 deployment: str = "") -> AsyncIterator[str]:
        """Stream the reply to one user message; each update is the whole reply so far (at most ~20 per second, fewer
        while many replies stream at once; the first text at once, the whole reply last).

        `presence_penalty` / `frequency_penalty` (OpenAI's meaning, generated tokens only) discourage repeats.
        `adapter` names a LoRA adapter of the adapters folder; empty for the base model.
        `images` are files sent with the message: pictures, videos (MP4, WebM, GIF: sampled to the served family's
        frame count) and PDFs (rendered to page images; `pdf_pages` picks pages such as "1-3,5").
        `reply_outputs` turns the finished text into the chart table, boxes or markdown page it holds.
        `decoding` is the chat panel's choice: "greedy" (top-k and top-p ignored) or "sample" (always samples;
        top-k 0 or 1 and top-p 0 mean no limit; `seed` as given, so the same seed gives the same reply). Empty:
        top_k / top_p decide as the server does, greedy unless top_k > 1 or top_p > 0 (so callers that send no
        sampling fields get greedy replies).
        `deployment` is the id of a server `list_servers` lists (one the Build page launched, one added in the
        chat); empty for the app's own.
        """
        def opened():
            """Worker thread: the request checked (files read, PDFs rendered) and the reply's stream open."""
            ctx = server_view(app_ctx, deployment)
            message = validate_user_text(require_text(text), bool(images))
            values = dict(max_tokens=max_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                          repetition_penalty=repetition_penalty, seed=seed, presence_penalty=presence_penalty,
                          frequency_penalty=frequency_penalty)
            params = panel_sampling(decoding, **values) if decoding else sampling_params(**values)
            paths = uploaded_paths(images)
            media = check_new_turn(ctx, message, paths, pdf_pages or None) if paths else ()
            chosen = adapter_named(adapter)  # callers may name the pages' label
            return open_stream(ctx, add_user_message(Conversation(), message, media), params, system_prompt or None,
                               chosen)

        # Async, so Gradio steps it on its event loop: a sync generator costs a worker-thread hop per update. The
        # reply is read on the loop (or a reader thread, for kinds that cannot; DeltaPump), its chunks spaced as the
        # chat's throttle spaces updates.
        stream = None
        try:
            stream = await _open_or_cancel(opened)
            pump = DeltaPump(asyncio.get_running_loop(), live=LIVE, spacing=update_interval).start(stream)
            shown = None
            async for _ in pump.texts():
                shown = stream.text.lstrip()
                yield shown
            if pump.error is not None:
                raise pump.error
            final = stream.text.lstrip()
            if final != shown:
                yield final
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        finally:
            if stream is not None:
                stream.cancel()  # no-op when finished; frees the server when the caller went away

    def compare(prompt: str, adapters: list[str] | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                images: list[FileData] | None = None, continues: list[str] | None = None,
                deployment: str = "") -> Iterator[list[dict]]:
        """The Compare tab's job: `prompt` (and `images`, as `generate` takes them) streamed at once through each
        column's model, greedy, at most `max_tokens` new tokens each.

        `adapters` names one column each: an adapter of the adapters folder, or "" / None / "base model" for the
        base model; None alone means the base model alone; at most three adapters. Each update lists every column
        as {column, text, state, figures, finish_reason} (`state`: waiting for the first token, streaming, done,
        stopped or failed; `figures` once it has tokens; `finish_reason` once done: "length" when the reply was cut
        at `max_tokens`, "stop" when it ended by itself, null when unknown or not done); the last update has every
        column ended. A caller that goes away stops every column on the server.
        `continues` (the tab's Continue) gives one text per column: the start of that column's reply, which its
        model goes on with (a column's text from an update whose finish_reason was "length"), "" for a fresh reply;
        each update's text then begins with it. `deployment`: as `generate` takes it.
        """
        run = None
        try:
            ctx = server_view(app_ctx, deployment)
            params = sampling_params(max_tokens=max_tokens)
            paths = uploaded_paths(images)
            run = CompareRun(ctx, require_text(prompt), column_names(adapters), params, images=paths or None,
                             continues=continues)
            yield from run.entry_updates()
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        finally:
            if run is not None:
                run.cancel()  # no-op when every column finished; frees the server when the caller went away

    def what_the_model_saw(images: list[FileData]) -> list[dict]:
        """What the deployment's image encoder finds in each image, as the chat's "What the model saw" shows it:
        labels with confidences, faces, colours, shapes, text, and the description the model is given."""
        try:
            paths = uploaded_paths(images)
            if not paths:
                raise InvalidRequest(MSG_API_NO_IMAGES)
            ctx.deployment.check_images(paths, "")
            reports = ctx.deployment.describe_images(paths)
            if reports is None:
                raise InvalidRequest(MSG_API_CANNOT_DESCRIBE)
            return reports
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def reply_outputs(text: str) -> dict:
        """What a reply's raw text (from `generate` or `compare`) holds besides prose, as the chat renders it:
        {"text": the raw text, "table": {title, header, rows, csv} for Deplot's linearised table, "grounding":
        {text, phrases: [{text, start, end, boxes: [[x1, y1, x2, y2]]}]} for Kosmos-2's patch-index markup
        (boxes normalised to the picture), "markdown": a Nougat page}; only the fields that apply."""
        try:
            raw = require_text(text)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        return {"text": raw, **as_fields(parse_reply(raw, served_family(ctx)))}

    def list_servers() -> list[dict]:
        """The servers the chat can talk to, the app's own first: {id, label, origin ("app", "build" or "added"),
        kind, url, model, usable} each; pass an `id` as `deployment` to `generate` or `compare`."""
        return [{"id": s.id, "label": s.label, "origin": s.origin, "kind": s.deployment.kind, "url": s.deployment.url,
                 "model": s.deployment.model, "usable": s.usable} for s in app_ctx.servers.listed()]

    def add_server(address: str, request: gr.Request) -> dict:
        """List the server at `address` (an OpenAI-compatible http(s) URL, or a Triton gRPC HOST:PORT) once it
        answers and its model is ready, as the chat's "Add a server" does; its entry as `list_servers` gives it.
        Needs the launch token or a login, as the Build page does (the app connects to the address)."""
        require_access(app_ctx, request)
        try:
            server = add_listed_server(app_ctx, address)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        return next(entry for entry in list_servers() if entry["id"] == server.id)

    gr.api(list_servers, api_name="list_servers")
    gr.api(add_server, api_name="add_server")
    gr.api(generate, api_name="generate")
    gr.api(reply_outputs, api_name="reply_outputs")
    gr.api(compare, api_name="compare")
    gr.api(what_the_model_saw, api_name="what_the_model_saw")
