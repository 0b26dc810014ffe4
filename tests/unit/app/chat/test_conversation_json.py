"""The conversation's saved JSON form: every field round trips."""

import json

from app.chat.conversation_json import conversation_dict, conversation_of, kept_pictures
from app.core.conversation import Conversation, Media, Turn
from tests.unit.app.chat.conversation_samples import CUT, PICTURE, TWO, WHOLE


def test_the_schema_round_trips_every_field():
    talk = Conversation((PICTURE, TWO))
    raw = conversation_dict(talk)
    assert raw["turns"][0] == {"role": "user", "text": "What is it?",
                               "media": [{"kind": "image", "name": "sign.png", "path": "/tmp/gradio/x/sign.png"}]}
    assert raw["turns"][1]["versions"][0]["sampling"]["max_tokens"] == 4
    assert conversation_of(json.loads(json.dumps(raw))) == talk
    assert conversation_dict(talk, paths=False)["turns"][0]["media"] == [{"kind": "image", "name": "sign.png"}]


def test_an_edited_message_keeps_every_version_and_its_later_turns():
    talk = Conversation((PICTURE, TWO, Turn.user("Then?"), Turn.reply(WHOLE))).edited(2, "And then?")
    talk = talk.with_turn(Turn.reply(CUT)).edited(0, "What is it, really?")
    raw = json.loads(json.dumps(conversation_dict(talk)))
    assert raw["turns"][0]["shown"] == 1 and len(raw["turns"][0]["branches"]) == 2
    assert conversation_of(raw) == talk
    back = conversation_of(raw).stepped_branch(0, -1).stepped_branch(2, -1)
    assert [t.text for t in back.turns] == ["What is it?", "Arr, the capital be", "Then?", "Paris."]


def test_a_gone_picture_is_named_only_in_every_version_of_a_message():
    talk = Conversation((PICTURE, TWO)).edited(0, "What is it, again?")
    kept = kept_pictures(talk, lambda _path: False)
    assert kept.turns[0].media == (Media("sign.png"),)
    assert kept.stepped_branch(0, -1).turns[0].media == (Media("sign.png"),)
