"""Replies parsed by their format (the recorded facts' examples): Deplot's table, Kosmos-2's boxes, a markdown
page; prose stays prose; the APIs' structured fields."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.chat.reply_outputs import as_fields, looks_like_deplot, looks_like_mmd, parse_reply

FACTS = yaml.safe_load((Path(__file__).parents[3] / "data/upstream/family_outputs.yaml").read_text())


def test_deplot_output_from_any_deployment_becomes_its_table():
    outputs = parse_reply(FACTS["deplot"]["raw_example"])
    expected = FACTS["deplot"]["raw_example_table"]
    assert outputs.table.title == expected["title"]
    assert list(outputs.table.header) == expected["header"]
    assert [list(row) for row in outputs.table.rows] == expected["rows"]
    fields = as_fields(outputs)
    assert fields["table"]["header"] == expected["header"]
    assert fields["table"]["csv"].splitlines()[0] == "Column 1,Column 2,Column 3"


def test_kosmos2_markup_becomes_phrases_with_boxes_and_the_picture_they_are_on():
    example = FACTS["kosmos2"]["documented_example"]
    outputs = parse_reply(example["text"], picture="astronaut.png")
    assert outputs.grounding.text == example["clean_text"] == outputs.clean_text
    assert outputs.picture == "astronaut.png"
    fields = as_fields(outputs)["grounding"]
    for phrase, (text, span, boxes) in zip(fields["phrases"], example["entities"], strict=True):
        assert (phrase["text"], [phrase["start"], phrase["end"]]) == (text, span)
        assert phrase["boxes"] == [[round(v, 4) for v in box] for box in boxes]


def test_a_nougat_reply_is_a_markdown_page_and_so_is_mmd_from_any_family():
    assert parse_reply("Plain words of a page.", family="nougat").markdown == "Plain words of a page."
    page = "# Results\n\nThe method works.\n\n- fast\n- small"
    assert looks_like_mmd(page) and parse_reply(page).markdown == page
    assert as_fields(parse_reply(page)) == {"markdown": page}


@pytest.mark.parametrize("prose", [
    "A red ball moves from left to right.",
    "Use a | b in shell pipes.",  # one line with a bar is not a table
    "# not really\nonly a heading line",
])
def test_prose_stays_prose(prose):
    assert parse_reply(prose) is None and as_fields(None) == {}
    assert not looks_like_deplot(prose)


def test_markup_without_objects_is_prose():
    assert parse_reply("<patch_index_0001> stray token and nothing grounded") is None


def test_a_saved_conversation_keeps_its_frames_and_parses_its_replies_again(tmp_path, monkeypatch):
    from app.chat.conversation_json import conversation_dict, conversation_of, kept_pictures
    from app.chat.media_intake import media_for
    from app.core.conversation import Conversation, ReplyVersion, Turn
    from tests.media import ball_video
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    video = media_for(str(ball_video(tmp_path / "ball.gif", frames=10)))
    grounded = FACTS["kosmos2"]["documented_example"]["text"]
    page = "Only words of a page."
    conversation = Conversation((
        Turn.user("Where?", (video,)), Turn.reply(ReplyVersion(grounded, outputs=parse_reply(grounded))),
        Turn.user("Read"), Turn.reply(ReplyVersion(page, outputs=parse_reply(page, family="nougat"))),
        Turn.user("Hi"), Turn.reply(ReplyVersion("Hello.")),
    ))
    back = conversation_of(conversation_dict(conversation))
    assert back.turns[0].media[0].frames == video.frames and back.turns[0].media[0].detail == video.detail
    assert back.turns[1].current.outputs.grounding == parse_reply(grounded).grounding
    assert back.turns[1].current.outputs.picture == video.frames[-1]  # the boxes go on the message's last picture
    assert back.turns[3].current.outputs.markdown == page  # a Nougat page stays one without its family
    assert back.turns[5].current.outputs is None
    gone = kept_pictures(back, lambda path: False)
    assert gone.turns[0].media[0].frames == () and gone.turns[0].media[0].name == "ball.gif"
