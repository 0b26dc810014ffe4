"""Real tritonserver (CPU demo, engine topology): in one conversation a rocket photo, then a picture of shapes, then
an espresso. By default a message with a new picture starts what the model sees, so each reply is sent only its own
turn and names only its own picture; "keep the whole conversation" sends every turn again."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from app.chat.turns import stream_reply
from app.context import AppConfig, AppContext
from app.core.conversation import ContextPolicy, Conversation, Media, Turn
from app.core.sampling import SamplingParams

GREEDY = SamplingParams(max_tokens=48, top_k=1, top_p=0.0)
ASKED = ("What is in this picture?", "What is in this picture?", "What is in this picture?")  # each sent alone
ROCKET_WORDS, COFFEE_WORDS = ("rocket", "missile"), ("coffee", "espresso", "cup")


@pytest.fixture(scope="module")
def pictures(tmp_path_factory):
    from skimage import data

    folder = tmp_path_factory.mktemp("context-pictures")
    Image.fromarray(data.rocket()).save(folder / "rocket.png")
    Image.fromarray(data.coffee()).save(folder / "coffee.png")
    shapes = Image.new("RGB", (400, 300), "white")
    draw = ImageDraw.Draw(shapes)
    draw.ellipse((40, 80, 180, 220), fill=(220, 20, 30))
    draw.rectangle((230, 80, 360, 210), fill=(20, 40, 220))
    shapes.save(folder / "shapes.png")
    return [str(folder / name) for name in ("rocket.png", "shapes.png", "coffee.png")]


@pytest.fixture(scope="module")
def ctx(triton):
    context = AppContext(AppConfig(triton_url=triton.grpc_url, demo=True))
    sent: list[Conversation] = []
    deployment = context.deployment
    opened = deployment.open_reply

    def recording(request):  # the real deployment; the request it is given is kept to check
        sent.append(request.conversation)
        return opened(request)

    deployment.open_reply = recording
    context.sent = sent
    return context


def converse(ctx, pictures, policy: ContextPolicy) -> Conversation:
    """The three messages, each with its picture, answered in turn as the chat answers them."""
    ctx.sent.clear()
    talk = Conversation()
    for question, picture in zip(ASKED, pictures, strict=True):
        talk = talk.with_turn(Turn.user(question, (Media.of(picture),)))
        *_, last = stream_reply(ctx, "context-test", talk, GREEDY, policy=policy)
        talk = last.conversation
        assert last.reply is not None and not last.reply.current.note, last.reply
    return talk


def test_each_reply_is_sent_and_names_only_its_own_picture(ctx, pictures):
    talk = converse(ctx, pictures, ContextPolicy())
    rocket, shapes, coffee = (talk.turns[i].current for i in (1, 3, 5))
    assert [reply.context for reply in (rocket, shapes, coffee)] == [(0,), (2,), (4,)]
    assert [sent.turns for sent in ctx.sent] == [(talk.turns[0],), (talk.turns[2],), (talk.turns[4],)]
    assert [sent.current_images() for sent in ctx.sent] == [(p,) for p in pictures]
    assert "missile" in " ".join(rocket.saw[0]) and "Shapes:" in " ".join(shapes.saw[0])
    assert "espresso" in " ".join(coffee.saw[0])  # the encoder's findings, per reply, for its own picture alone
    assert any(word in rocket.text.lower() for word in ROCKET_WORDS), rocket.text
    assert not any(word in shapes.text.lower() for word in ROCKET_WORDS + COFFEE_WORDS), shapes.text
    assert any(word in coffee.text.lower() for word in COFFEE_WORDS), coffee.text
    assert not any(word in coffee.text.lower() for word in ROCKET_WORDS), coffee.text


def test_keeping_the_whole_conversation_sends_every_turn(ctx, pictures):
    talk = converse(ctx, pictures, ContextPolicy(keep_pictures=True))
    assert [talk.turns[i].current.context for i in (1, 3, 5)] == [(0,), (0, 1, 2), (0, 1, 2, 3, 4)]
    assert ctx.sent[-1].turns == talk.turns[:5] and ctx.sent[-1].current_images() == (pictures[2],)
