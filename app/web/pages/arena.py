"""Arena tab: blind A/B battles between the base model and the adapters (two anonymous answers, a vote, then the
names), follow-up turns to both, prompt sets walked in order with a progress bar, the leaderboard with its
pairwise heatmap and filters, exports. Layout and wiring only: the handlers live in arena_handlers."""

from __future__ import annotations

from functools import partial

import gradio as gr

from app.api.arena_api import ARENA_MAX_TOKENS
from app.arena.service import Arena
from app.context import AppContext
from app.web.download import SAVE_PAYLOAD_JS
from app.web.labels import (
    ARENA_ALL,
    ARENA_ASK,
    ARENA_CONTESTANTS,
    ARENA_FILTER_PICTURES,
    ARENA_INTRO,
    ARENA_NEXT,
    ARENA_START,
    ARENA_VOTES,
    COMPARE_IMAGE_HEIGHT,
    COMPARE_IMAGE_LABEL,
    STOP,
)
from app.web.pages import arena_handlers as handlers

TITLE = "Arena"
PRIVATE = {"api_visibility": "private"}


def build(ctx: AppContext, arena: Arena, tab: gr.Tab | None = None) -> None:
    gr.Markdown(ARENA_INTRO)
    with gr.Row():
        prompt = gr.Textbox(label="Prompt", elem_id="arena-prompt", scale=3, placeholder="Ask both models something")
        image = gr.Gallery(label=COMPARE_IMAGE_LABEL, file_types=["image", ".mp4", ".webm", ".gif", ".pdf"],
                           type="filepath", interactive=True, sources=["upload"], elem_id="arena-image",
                           height=COMPARE_IMAGE_HEIGHT, columns=4, object_fit="contain", allow_preview=False,
                           buttons=[], scale=1, min_width=160)
    choices = Arena.contestants(ctx)
    contestants = gr.CheckboxGroup(choices, value=choices, label=ARENA_CONTESTANTS, elem_id="arena-contestants")
    with gr.Accordion("Settings", open=False, elem_id="arena-settings"):
        with gr.Row():
            tokens = gr.Slider(1, 512, value=ARENA_MAX_TOKENS, step=1, label="Max new tokens",
                               elem_id="arena-max-tokens")
            temperature = gr.Slider(0.01, 2.0, value=0.7, step=0.01, label="Temperature", elem_id="arena-temperature")
            seed = gr.Number(0, label="Seed (0: a new one per battle, the same for both sides)", precision=0,
                             elem_id="arena-seed")
    with gr.Row():
        start = gr.Button(ARENA_START, variant="primary", elem_id="arena-start")
        ask = gr.Button(ARENA_ASK, elem_id="arena-ask", interactive=False)
        stop = gr.Button(STOP, elem_id="arena-stop", interactive=False)
    with gr.Row():
        chat_a = gr.Chatbot(label="Model A", elem_id="arena-a", height=320)
        chat_b = gr.Chatbot(label="Model B", elem_id="arena-b", height=320)
    with gr.Row():
        votes = [gr.Button(label, elem_id=f"arena-vote-{key.lower()}", interactive=False) for key, label in ARENA_VOTES]
    result = gr.Markdown(elem_id="arena-result")
    with gr.Accordion("Prompt sets", open=False, elem_id="arena-sets"):
        with gr.Row():
            set_file = gr.File(label="Prompts (JSONL)", file_types=[".jsonl"], type="filepath",
                               elem_id="arena-set-file")
            set_zip = gr.File(label="Pictures (zip, optional)", file_types=[".zip"], type="filepath",
                              elem_id="arena-set-zip")
            with gr.Column():
                set_name = gr.Textbox(label="Set name", elem_id="arena-set-name")
                upload = gr.Button("Keep this prompt set", elem_id="arena-set-upload")
        with gr.Row():
            set_pick = gr.Dropdown([], label="Prompt set", elem_id="arena-set", allow_custom_value=False)
            next_prompt = gr.Button(ARENA_NEXT, elem_id="arena-set-next")
        progress = gr.HTML(elem_id="arena-progress")
    gr.Markdown("### Leaderboard")
    with gr.Row():
        pictures = gr.Radio(ARENA_FILTER_PICTURES, value="", label="Battles", elem_id="arena-filter-pictures")
        by_set = gr.Dropdown([ARENA_ALL], value=ARENA_ALL, label="Prompt set", elem_id="arena-filter-set")
        by_voter = gr.Dropdown([ARENA_ALL], value=ARENA_ALL, label="Voter", elem_id="arena-filter-voter")
        refresh = gr.Button("Refresh", elem_id="arena-refresh")
    board = gr.HTML(elem_id="arena-board")
    heatmap = gr.HTML(elem_id="arena-heatmap")
    with gr.Row():
        export_jsonl = gr.Button("Export JSONL (FastChat fields)", elem_id="arena-export-jsonl")
        export_csv = gr.Button("Export CSV", elem_id="arena-export-csv")
    payload = gr.Textbox(visible=False, elem_id="arena-export-payload")
    view = gr.State(handlers.BattleView())

    def start_battle(request: gr.Request, text, shown_pictures, names, max_tokens, temp, chosen_seed):
        yield from handlers.on_start(ctx.for_session(request.session_hash), arena, request, text, shown_pictures,
                                     names, max_tokens, temp, chosen_seed)

    def next_of_set(request: gr.Request, name, names, max_tokens, temp, chosen_seed):
        yield from handlers.on_next(ctx.for_session(request.session_hash), arena, request, name, names, max_tokens,
                                    temp, chosen_seed)

    def follow_up(request: gr.Request, shown_view, text, shown_pictures):
        yield from handlers.on_ask(ctx, arena, request, shown_view, text, shown_pictures)

    def voted(key: str):
        def handler(request: gr.Request, shown_view):
            return handlers.on_vote(ctx, arena, request, key, shown_view)
        return handler

    def leaderboard(kind, set_name_, voter_name):
        return handlers.on_board(arena, kind, set_name_, voter_name)

    def keep_set(request: gr.Request, name, jsonl, archive):
        return handlers.on_upload(ctx, arena, request, name, jsonl, archive)

    def export(kind: str):
        def handler(request: gr.Request):
            return handlers.on_export(ctx, arena, request, kind)
        return handler

    buttons = [start, next_prompt, ask, stop, *votes]
    battle_out = [chat_a, chat_b, view, *buttons, result, progress, prompt]
    board_out = [board, heatmap, by_set, by_voter, set_pick]
    filters = [pictures, by_set, by_voter]
    start.click(start_battle, [prompt, image, contestants, tokens, temperature, seed], battle_out, **PRIVATE)
    next_prompt.click(next_of_set, [set_pick, contestants, tokens, temperature, seed], [*battle_out, image], **PRIVATE)
    ask.click(follow_up, [view, prompt, image], battle_out, **PRIVATE)
    stop.click(partial(handlers.on_stop, arena), view, None, **PRIVATE)
    for (key, _label), button in zip(ARENA_VOTES, votes, strict=True):
        button.click(voted(key), view, [view, *buttons, result, progress], **PRIVATE).then(
            leaderboard, filters, board_out, **PRIVATE)
    for trigger in (refresh.click, pictures.change, by_set.change, by_voter.change):
        trigger(leaderboard, filters, board_out, **PRIVATE)
    if tab is not None:
        tab.select(leaderboard, filters, board_out, **PRIVATE)
    upload.click(keep_set, [set_name, set_file, set_zip], set_pick, **PRIVATE)
    for button, kind in ((export_jsonl, "jsonl"), (export_csv, "csv")):
        button.click(export(kind), None, payload, **PRIVATE).then(None, payload, None, js=SAVE_PAYLOAD_JS, **PRIVATE)
