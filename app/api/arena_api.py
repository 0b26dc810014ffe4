"""The Arena's Gradio API endpoints (registered beside the others by app.api.gradio_api): arena_start, arena_ask,
arena_vote, arena_leaderboard, arena_export, and for prompt sets arena_prompt_set (upload one) and arena_next (a
battle on the caller's next prompt of a set). The contestants' names appear only in arena_vote's answer.

Writes (a battle, a turn, a vote, a prompt set) and the export (every prompt and answer) need the launch token or a
login, as every write of this app does; the leaderboard is open, as the page shows it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import gradio as gr
from gradio.data_classes import FileData

from app.api.gradio_api import is_uploaded, require_access, server_view, uploaded_paths
from app.arena.cli import board_dict
from app.arena.messages import MSG_SET_NO_FILE, MSG_SET_UPLOAD
from app.arena.service import LOCAL_VOTER, Arena, SetStep
from app.chat.sampling import GREEDY, SAMPLE, panel_sampling, require_text
from app.context import AppContext
from app.core.errors import ChatError, InvalidRequest
from app.core.sampling import SAMPLING_LIMITS, SamplingParams

ARENA_MAX_TOKENS = 64  # new tokens per answer unless the caller says
SEED_LIMIT = 2**31


def voter(request: gr.Request | None) -> str:
    """Who votes: the login name, or "local" without logins."""
    return (request.username if request is not None else None) or LOCAL_VOTER


def arena_sampling(max_tokens: object, temperature: object, seed: object, greedy: bool = False) -> SamplingParams:
    """Both sides' settings: sampled at `temperature` (greedy when asked), one seed for both (a fresh one for 0)."""
    chosen = int(seed) if isinstance(seed, int | float) and seed else secrets.randbelow(SEED_LIMIT) + 1
    return panel_sampling(GREEDY if greedy else SAMPLE, max_tokens, temperature, 0, 0.0,
                          SAMPLING_LIMITS["repetition_penalty"][0], chosen)


def one_upload(item: object, what: str) -> Path | None:
    """The local path of a file uploaded with the request (None when none was sent); a path outside Gradio's upload
    folder is refused."""
    if not item:
        return None
    raw = item.get("path") if isinstance(item, dict) else getattr(item, "path", None)
    path = Path(str(raw or "")).resolve()
    if not raw or not is_uploaded(path):
        raise InvalidRequest(MSG_SET_UPLOAD.format(what=what))
    return path


def step_dict(step: SetStep) -> dict:
    """Where the caller stands in a set: number counts from 1 (None once every prompt is voted on)."""
    return {"prompt_set": step.name, "number": None if step.number is None else step.number + 1,
            "count": step.count, "voted": step.voted, "prompt": step.text}


def register_arena(app_ctx: AppContext, arena: Arena) -> None:
    """Add the Arena's endpoints to the current Blocks."""

    def follow(battle: str) -> Iterator[dict]:
        last = ["", ""]
        for last in arena.answers(battle):
            yield {"battle": battle, "a": last[0], "b": last[1], "done": False}
        yield {"battle": battle, "a": last[0], "b": last[1], "done": True}  # the turn is kept by now

    def arena_start(prompt: str, images: list[FileData] | None = None, contestants: list[str] | None = None,
                    max_tokens: int = ARENA_MAX_TOKENS, temperature: float = 0.7, seed: int = 0,
                    greedy: bool = False, deployment: str = "",
                    request: gr.Request = None) -> Iterator[dict]:
        """Start a blind battle: two of `contestants` ("base model" and adapter names as the chat's dropdown names
        them; empty for all) answer `prompt` (and `images`) with the same settings and seed. Each update is
        {battle, a, b, done}: the battle's id and the two anonymous answers so far. Needs the token or a login."""
        require_access(app_ctx, request)
        try:
            ctx = server_view(app_ctx, deployment)
            params = arena_sampling(max_tokens, temperature, seed, bool(greedy))
            battle = arena.start(ctx, require_text(prompt), uploaded_paths(images) or None, contestants, params,
                                 voter(request))
            yield from follow(battle)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def arena_ask(battle: str, prompt: str, images: list[FileData] | None = None,
                  request: gr.Request = None) -> Iterator[dict]:
        """A follow-up turn of an unvoted battle: both sides answer, each with its own earlier answers; updates as
        arena_start's."""
        require_access(app_ctx, request)
        try:
            arena.ask(require_text(battle), require_text(prompt), uploaded_paths(images) or None)
            yield from follow(battle)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def arena_vote(battle: str, vote: str, request: gr.Request = None) -> dict:
        """Vote on a battle once: `vote` is A, B, tie or both_bad. Returns {battle, model_a, model_b, vote}: the
        names, now that the vote is in."""
        require_access(app_ctx, request)
        try:
            record = arena.vote(require_text(battle), vote, voter(request))
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        return {"battle": record.id, "model_a": record.model_a, "model_b": record.model_b, "vote": record.vote}

    def arena_leaderboard(filters: dict | None = None) -> dict:
        """The leaderboard: {votes, contestants: [{name, rating, low, high, battles, wins, ties, losses, both_bad,
        win_rate}], pairs: [{model, against, battles, win_rate}]}. `filters`: {} for all, or any of pictures
        ("text" or "pictures"), prompt_set, voter."""
        try:
            return board_dict(arena.leaderboard(filters or {}))
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def arena_export(format: str = "jsonl", request: gr.Request = None) -> str:  # noqa: A002 - the API's word
        """Every voted battle as JSONL (FastChat's arena-log fields) or CSV text. Needs the token or a login."""
        require_access(app_ctx, request)
        try:
            return arena.export(format)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def arena_prompt_set(jsonl: FileData, pictures_zip: FileData | None = None, name: str | None = None,
                         request: gr.Request = None) -> dict:
        """Keep a prompt set: `jsonl` holds one {"prompt": ..., "images": ["a.png"]} object per line, `pictures_zip`
        the pictures they name, `name` the set's name (default: the JSONL file's name without .jsonl; a set uploaded
        again under its name is replaced). Returns {prompt_set, prompts, pictures}; a malformed line is refused with
        its number. Needs the token or a login."""
        require_access(app_ctx, request)
        try:
            path = one_upload(jsonl, "JSONL file")
            if path is None:
                raise InvalidRequest(MSG_SET_NO_FILE)
            parsed = arena.add_prompt_set(name or path.stem, path, one_upload(pictures_zip, "zip of pictures"))
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        return {"prompt_set": parsed.name, "prompts": len(parsed.prompts), "pictures": len(parsed.pictures)}

    def arena_next(prompt_set: str, contestants: list[str] | None = None, max_tokens: int = ARENA_MAX_TOKENS,
                   temperature: float = 0.7, seed: int = 0, greedy: bool = False, deployment: str = "",
                   request: gr.Request = None) -> Iterator[dict]:
        """A blind battle on the caller's first prompt of `prompt_set` not voted on yet (the set's order; a walk
        resumes there, as the tab's Next prompt of the set), with its pictures. Updates as arena_start's, plus
        {prompt_set, number, count, voted, prompt} (number counts from 1); vote with arena_vote. Once every prompt
        is voted on: one update with battle and number None and done true. Needs the token or a login."""
        require_access(app_ctx, request)
        try:
            step = arena.set_step(prompt_set, voter(request))
            where = step_dict(step)
            if step.number is None:
                yield {"battle": None, "a": "", "b": "", "done": True, **where}
                return
            ctx = server_view(app_ctx, deployment)
            params = arena_sampling(max_tokens, temperature, seed, bool(greedy))
            battle = arena.start(ctx, step.text, list(step.pictures) or None, contestants, params, voter(request),
                                 prompt_set=step.name, set_index=step.number)
            for update in follow(battle):
                yield {**update, **where}
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    gr.api(arena_start, api_name="arena_start")
    gr.api(arena_ask, api_name="arena_ask")
    gr.api(arena_vote, api_name="arena_vote")
    gr.api(arena_leaderboard, api_name="arena_leaderboard")
    gr.api(arena_export, api_name="arena_export")
    gr.api(arena_prompt_set, api_name="arena_prompt_set")
    gr.api(arena_next, api_name="arena_next")
