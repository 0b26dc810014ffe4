"""The Arena's prompt-set endpoints, called as Gradio calls them: arena_prompt_set keeps an uploaded JSONL (and zip of
pictures) and answers its name and counts, refusing a malformed line with its number; arena_next walks a voter
through the set in order, one battle per prompt, resuming after the prompts that voter has voted on. Both need the
launch token or a login."""

from __future__ import annotations

import io
import json
import zipfile

import gradio as gr
import pytest
from PIL import Image

from app.api.arena_api import register_arena
from app.arena.service import Arena
from app.context import AppConfig, AppContext
from tests.compare_fakes import RecordingDeployment


@pytest.fixture
def api(tmp_path, uploads):
    """The Arena's endpoints by name, on a fake deployment with two adapters and logins for ann and bob."""
    deployment = RecordingDeployment(known=("pirate", "french"))
    ctx = AppContext(AppConfig(auth=(("ann", "pw"), ("bob", "pw")), workspace=(str(tmp_path),)),
                     deployment=deployment)
    arena = Arena(f"sqlite:///{tmp_path / 'arena.sqlite3'}", tmp_path)
    with gr.Blocks() as blocks:
        register_arena(ctx, arena)
    yield {block.api_name: block.fn for block in blocks.fns.values()} | {"deployment": deployment}
    arena.close()


def login(name: str = "ann") -> gr.Request:
    return gr.Request(username=name, headers={}, cookies={})


def upload(folder, name: str, data: bytes) -> dict:
    (folder / name).write_bytes(data)
    return {"path": str(folder / name), "meta": {"_type": "gradio.FileData"}}


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(out, format="PNG")
    return out.getvalue()


def shapes(folder, lines: list[dict | str]) -> dict:
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    return upload(folder, "shapes.jsonl", text.encode())


def pictures(folder) -> dict:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("pics/red.png", png())
    return upload(folder, "pics.zip", archive.getvalue())


def refusal(fn, **kwargs) -> str:
    with pytest.raises(gr.Error) as caught:
        result = fn(**kwargs)
        if not isinstance(result, dict):
            list(result)
    return caught.value.message


def test_a_set_is_kept_under_its_files_name_with_its_counts(api, uploads):
    answer = api["arena_prompt_set"](jsonl=shapes(uploads, [{"prompt": "One?"}, {"prompt": "Red?", "images": [
        "red.png"]}]), pictures_zip=pictures(uploads), request=login())
    assert answer == {"prompt_set": "shapes", "prompts": 2, "pictures": 1}
    named = api["arena_prompt_set"](jsonl=shapes(uploads, [{"prompt": "Only?"}]), name="mine", request=login())
    assert named == {"prompt_set": "mine", "prompts": 1, "pictures": 0}


@pytest.mark.parametrize("lines, sentence", [
    ([{"prompt": "One?"}, {"text": "no prompt"}], 'shapes.jsonl, line 2: the object needs a "prompt" with text'),
    (["{not json"], "shapes.jsonl, line 1: not a JSON object"),
    ([{"prompt": "Red?", "images": ["blue.png"]}], "shapes.jsonl, line 1: the picture 'blue.png' is not in the zip"),
])
def test_a_malformed_line_is_refused_with_its_number(api, uploads, lines, sentence):
    assert sentence in refusal(api["arena_prompt_set"], jsonl=shapes(uploads, lines), pictures_zip=pictures(uploads),
                               request=login())


def test_a_missing_file_or_one_not_uploaded_with_the_request_is_refused(api, uploads, tmp_path):
    assert "Upload a JSONL file of prompts first" in refusal(api["arena_prompt_set"], jsonl=None, request=login())
    (tmp_path / "elsewhere.jsonl").write_text('{"prompt": "Hi"}')
    outside = {"path": str(tmp_path / "elsewhere.jsonl")}
    assert "JSONL file must be uploaded with the request" in refusal(api["arena_prompt_set"], jsonl=outside,
                                                                     request=login())


def test_uploading_a_set_and_walking_it_need_the_token_or_a_login(api, uploads):
    stranger = gr.Request(headers={}, cookies={})
    assert refusal(api["arena_prompt_set"], jsonl=shapes(uploads, [{"prompt": "One?"}]), request=stranger)
    assert refusal(api["arena_next"], prompt_set="shapes", request=stranger)
    assert "There is no prompt set named 'shapes'" in refusal(api["arena_next"], prompt_set="shapes",
                                                              request=login())


def test_a_voter_walks_the_set_in_order_with_its_pictures_and_resumes_after_the_voted_prompts(api, uploads):
    api["arena_prompt_set"](jsonl=shapes(uploads, [{"prompt": "One?"}, {"prompt": "Red?", "images": ["red.png"]}]),
                            pictures_zip=pictures(uploads), request=login())
    first = list(api["arena_next"](prompt_set="shapes", max_tokens=4, request=login()))
    assert first[-1]["done"] and first[-1]["a"] and first[-1]["b"]
    assert {k: first[-1][k] for k in ("prompt_set", "number", "count", "voted", "prompt")} == {
        "prompt_set": "shapes", "number": 1, "count": 2, "voted": 0, "prompt": "One?"}
    assert not {"model_a", "model_b", "names"} & set(first[-1])  # no names before the vote
    again = list(api["arena_next"](prompt_set="shapes", max_tokens=4, request=login()))  # not voted: same prompt
    assert again[-1]["number"] == 1 and again[-1]["battle"] != first[-1]["battle"]
    api["arena_vote"](battle=first[-1]["battle"], vote="A", request=login())
    checked = len(api["deployment"].checked)
    second = list(api["arena_next"](prompt_set="shapes", max_tokens=4, request=login()))
    assert (second[-1]["number"], second[-1]["voted"], second[-1]["prompt"]) == (2, 1, "Red?")
    assert [len(files) for files in api["deployment"].checked[checked:]] == [1]  # the prompt's picture went along
    assert list(api["arena_next"](prompt_set="shapes", max_tokens=4, request=login("bob")))[-1]["number"] == 1
    api["arena_vote"](battle=second[-1]["battle"], vote="tie", request=login())
    (finished,) = list(api["arena_next"](prompt_set="shapes", request=login()))
    assert finished == {"battle": None, "a": "", "b": "", "done": True, "prompt_set": "shapes", "number": None,
                        "count": 2, "voted": 2, "prompt": ""}
    board = api["arena_leaderboard"](filters={"prompt_set": "shapes"})
    assert board["votes"] == 2
