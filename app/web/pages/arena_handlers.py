"""The Arena tab's handlers: start a battle (typed or the next prompt of a set), follow-ups, Stop, votes, the
leaderboard, prompt-set uploads, exports. The browser gets the answers and, after the vote, the names; the battle's
contestants stay in app.arena's live battles (the session's state holds only the battle id and what was shown)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import gradio as gr
from PIL import Image

from app.api.arena_api import arena_sampling, voter
from app.arena.messages import (
    MSG_ARENA_NO_BATTLE,
    MSG_ARENA_REVEAL,
    MSG_ARENA_VOTE_WORDS,
    MSG_SET_DONE,
    MSG_SET_NO_FILE,
    MSG_SET_PROGRESS,
    MSG_SET_VOTED,
)
from app.arena.service import Arena
from app.context import AppContext
from app.core.errors import ChatError
from app.web.arena_view import board_html, heatmap_html, progress_html, side_messages
from app.web.download import download_payload
from app.web.gate import caller_may_act
from app.web.labels import ARENA_ALL


@dataclass(frozen=True)
class BattleView:
    """What this browser session shows: the open battle's id (None before the first), each turn's prompt and the two
    answers, and the prompt set it came from (with its prompt's number)."""

    battle: str | None = None
    turns: tuple[tuple[str, str, str], ...] = ()
    prompt_set: str | None = None
    voted: bool = False


def controls(running: bool, voting: bool) -> list:
    """Start, Next prompt, Follow-up, Stop, then the four vote buttons."""
    return [gr.Button(interactive=not running), gr.Button(interactive=not running),
            gr.Button(interactive=voting), gr.Button(interactive=running),
            *[gr.Button(interactive=voting) for _ in range(4)]]


def shown(view: BattleView) -> list:
    """Model A's and Model B's chat."""
    return [side_messages([(p, a) for p, a, _ in view.turns]), side_messages([(p, b) for p, _, b in view.turns])]


SKIP_ALL = 14  # chat A, chat B, the view, 8 controls, the result line, the progress, the prompt box
VOTE_OUTPUTS = 11  # the view, 8 controls, the result line, the progress


def refused(ctx: AppContext, request: gr.Request) -> bool:
    reason = caller_may_act(ctx, request)
    if reason:
        gr.Warning(reason)
    return bool(reason)


def streamed(arena: Arena, view: BattleView, progress) -> Iterator[list]:
    """The open turn's answers as they grow, then the vote buttons."""
    prompt = view.turns[-1][0]
    for texts in arena.answers(view.battle):
        view = replace(view, turns=(*view.turns[:-1], (prompt, texts[0], texts[1])))
        yield [*shown(view), view, *controls(True, False), "", progress, gr.skip()]
    yield [*shown(view), view, *controls(False, True), gr.skip(), progress, gr.skip()]


def on_start(ctx: AppContext, arena: Arena, request: gr.Request, prompt: str, pictures, contestants: list[str],
             tokens: float, temperature: float, seed: float | None) -> Iterator[list]:
    """A new battle on the typed prompt (and pictures)."""
    if refused(ctx, request):
        yield [gr.skip()] * SKIP_ALL
        return
    files = [path for path, _caption in pictures] if pictures else None
    try:
        battle = arena.start(ctx, prompt, files, contestants, arena_sampling(tokens, temperature, seed or 0),
                             voter(request))
    except ChatError as exc:
        gr.Warning(str(exc))
        yield [gr.skip()] * SKIP_ALL
        return
    yield from streamed(arena, BattleView(battle, ((prompt.strip(), "", ""),)), "")


def on_next(ctx: AppContext, arena: Arena, request: gr.Request, set_name: str | None, contestants: list[str],
            tokens: float, temperature: float, seed: float | None) -> Iterator[list]:
    """A new battle on the voter's next unvoted prompt of the set (where an earlier session stopped)."""
    if refused(ctx, request):
        yield [gr.skip()] * (SKIP_ALL + 1)
        return
    try:
        step = arena.set_step(set_name, voter(request))
        if step.number is None:
            gr.Info(MSG_SET_DONE.format(name=step.name, count=step.count))
            yield [gr.skip()] * (SKIP_ALL - 2) + [progress_html(step.name, step.count, step.count), gr.skip(),
                                                  gr.skip()]
            return
        battle = arena.start(ctx, step.text, list(step.pictures) or None, contestants,
                             arena_sampling(tokens, temperature, seed or 0), voter(request),
                             prompt_set=step.name, set_index=step.number)
    except ChatError as exc:
        gr.Warning(str(exc))
        yield [gr.skip()] * (SKIP_ALL + 1)
        return
    progress = progress_html(MSG_SET_PROGRESS.format(name=step.name, number=step.number + 1, count=step.count),
                             step.number, step.count)
    pictures = [Image.open(io.BytesIO(data)) for data in step.pictures]
    view = BattleView(battle, ((step.text, "", ""),), step.name)
    for update in streamed(arena, view, progress):
        yield [*update[:-1], step.text, pictures or None]


def on_ask(ctx: AppContext, arena: Arena, request: gr.Request, view: BattleView, prompt: str,
           pictures) -> Iterator[list]:
    """A follow-up turn to both sides of the open battle."""
    if refused(ctx, request):
        yield [gr.skip()] * SKIP_ALL
        return
    try:
        if view.battle is None or view.voted:
            raise ChatError(MSG_ARENA_NO_BATTLE)
        arena.ask(view.battle, prompt, [path for path, _c in pictures] if pictures else None)
    except ChatError as exc:
        gr.Warning(str(exc))
        yield [gr.skip()] * SKIP_ALL
        return
    yield from streamed(arena, replace(view, turns=(*view.turns, (prompt.strip(), "", ""))), gr.skip())


def on_stop(arena: Arena, view: BattleView) -> None:
    if view.battle is not None:
        arena.stop(view.battle)


def on_vote(ctx: AppContext, arena: Arena, request: gr.Request, vote: str, view: BattleView) -> list:
    """Record the vote once; show both names; the set's progress moves on."""
    if refused(ctx, request):
        return [gr.skip()] * VOTE_OUTPUTS
    try:
        if view.battle is None:
            raise ChatError(MSG_ARENA_NO_BATTLE)
        record = arena.vote(view.battle, vote, voter(request))
    except ChatError as exc:
        gr.Warning(str(exc))
        return [gr.skip()] * VOTE_OUTPUTS
    result = MSG_ARENA_REVEAL.format(model_a=f"**{record.model_a}**", model_b=f"**{record.model_b}**",
                                     vote=MSG_ARENA_VOTE_WORDS[vote])
    progress = gr.skip()
    if view.prompt_set:
        step = arena.set_step(view.prompt_set, voter(request))
        done = step.count if step.number is None else step.number
        progress = progress_html(MSG_SET_VOTED.format(name=view.prompt_set, done=done, count=step.count), done,
                                 step.count)
    return [replace(view, voted=True), *controls(False, False), result, progress]


def on_board(arena: Arena, pictures: str | None, prompt_set: str | None, voter_name: str | None) -> list:
    """The leaderboard and heatmap for the filters, and the filters' current choices."""
    pick = lambda value: None if not value or value == ARENA_ALL else value  # noqa: E731
    try:
        board = arena.leaderboard({"pictures": pictures or None, "prompt_set": pick(prompt_set),
                                   "voter": pick(voter_name)})
        sets, voters = arena.store.choices()
    except ChatError as exc:
        gr.Warning(str(exc))
        return [gr.skip()] * 5
    return [board_html(board), heatmap_html(board), gr.Dropdown(choices=[ARENA_ALL, *sets]),
            gr.Dropdown(choices=[ARENA_ALL, *voters]), gr.Dropdown(choices=sets)]


def on_upload(ctx: AppContext, arena: Arena, request: gr.Request, name: str, jsonl: str | None,
              archive: str | None):
    """Keep an uploaded prompt set; pick it for the walk."""
    if refused(ctx, request):
        return gr.skip()
    try:
        if not jsonl:
            raise ChatError(MSG_SET_NO_FILE)
        parsed = arena.add_prompt_set(name, Path(jsonl), Path(archive) if archive else None)
    except ChatError as exc:
        gr.Warning(str(exc))
        return gr.skip()
    sets, _voters = arena.store.choices()
    return gr.Dropdown(choices=sets, value=parsed.name)


def on_export(ctx: AppContext, arena: Arena, request: gr.Request, fmt: str) -> str:
    """The export as a download payload ("" when refused)."""
    if refused(ctx, request):
        return ""
    try:
        return download_payload(f"arena-battles.{fmt}", arena.export(fmt), "application/jsonl" if fmt == "jsonl"
                                else "text/csv")
    except ChatError as exc:
        gr.Warning(str(exc))
        return ""
