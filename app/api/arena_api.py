"""The Arena's Gradio API endpoints (registered beside the others by app.api.gradio_api): arena_start, arena_ask,
arena_vote, arena_leaderboard, arena_export. The contestants' names appear only in arena_vote's answer.

Writes (a battle, a turn, a vote) and the export (every prompt and answer) need the launch token or a login, as every
write of this app does; the leaderboard is open, as the page shows it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import gradio as gr
from gradio.data_classes import FileData

from app.api.gradio_api import access_refused, server_view, uploaded_paths
from app.arena.cli import board_dict
from app.arena.service import LOCAL_VOTER, Arena
from app.chat.context import AppContext
from app.chat.sampling import GREEDY, SAMPLE, panel_sampling, require_text
from app.core.errors import ChatError
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


def register_arena(app_ctx: AppContext, arena: Arena) -> None:
    """Add the Arena's endpoints to the current Blocks."""

    def check(request: gr.Request | None) -> None:
        reason = access_refused(app_ctx, request)
        if reason:
            raise gr.Error(reason, print_exception=False)

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
        check(request)
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
        check(request)
        try:
            arena.ask(require_text(battle), require_text(prompt), uploaded_paths(images) or None)
            yield from follow(battle)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    def arena_vote(battle: str, vote: str, request: gr.Request = None) -> dict:
        """Vote on a battle once: `vote` is A, B, tie or both_bad. Returns {battle, model_a, model_b, vote}: the
        names, now that the vote is in."""
        check(request)
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
        check(request)
        try:
            return arena.export(format)
        except ChatError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    gr.api(arena_start, api_name="arena_start")
    gr.api(arena_ask, api_name="arena_ask")
    gr.api(arena_vote, api_name="arena_vote")
    gr.api(arena_leaderboard, api_name="arena_leaderboard")
    gr.api(arena_export, api_name="arena_export")
