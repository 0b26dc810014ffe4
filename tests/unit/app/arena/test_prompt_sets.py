"""Prompt sets: JSONL lines with pictures from a zip; every fault names its file and line."""

from __future__ import annotations

import zipfile

import pytest

from app.arena.prompt_sets import read_prompt_set
from app.core.errors import InvalidRequest


def write(path, lines: list[str]):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_prompts_in_order_with_the_pictures_they_name(tmp_path):
    archive = tmp_path / "pics.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("pics/circle.png", b"circle-bytes")
        z.writestr("unused.png", b"x")
    jsonl = write(tmp_path / "set.jsonl", ['{"prompt": "Say hi."}', "", '{"prompt": " What shape? ", '
                                           '"images": ["circle.png"]}'])
    parsed = read_prompt_set("shapes", jsonl, archive)
    assert [(p.text, p.pictures) for p in parsed.prompts] == [("Say hi.", ()), ("What shape?", ("circle.png",))]
    assert parsed.pictures == {"circle.png": b"circle-bytes"}


@pytest.mark.parametrize("lines, sentence", [
    (['{"prompt": "ok"}', "{not json"], r"set.jsonl, line 2: not a JSON object"),
    (['{"prompt": "ok"}', "", '["a list"]'], r"set.jsonl, line 3: not a JSON object \(list\)"),
    (['{"text": "no prompt"}'], r"set.jsonl, line 1: the object needs a \"prompt\" with text"),
    (['{"prompt": "x", "images": "a.png"}'], r"line 1: \"images\" must be a list of file names"),
    (['{"prompt": "x"}', '{"prompt": "y", "images": ["gone.png"]}'], r"line 2: the picture 'gone.png' is not in"),
    ([""], r"set.jsonl holds no prompts"),
])
def test_a_malformed_line_is_named_with_its_number(tmp_path, lines, sentence):
    with pytest.raises(InvalidRequest, match=sentence):
        read_prompt_set("bad", write(tmp_path / "set.jsonl", lines))


def test_a_bad_zip_and_a_bad_name_get_sentences(tmp_path):
    jsonl = write(tmp_path / "set.jsonl", ['{"prompt": "x"}'])
    (tmp_path / "pics.zip").write_bytes(b"not a zip")
    with pytest.raises(InvalidRequest, match="pics.zip is not a zip file"):
        read_prompt_set("ok", jsonl, tmp_path / "pics.zip")
    with pytest.raises(InvalidRequest, match="A prompt set needs a name"):
        read_prompt_set("../etc", jsonl)
