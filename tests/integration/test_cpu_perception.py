"""Real tritonserver, both CPU demo kinds: the perception encoder's descriptions reach SmolLM2, and replies
with the app's default settings name what a person sees and do not loop."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from PIL import Image, ImageDraw, ImageFont

from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from tests.threads import run_in_threads

WHAT = "What is in this picture?"
# photo in scikit-image's wheel -> words a person accepts in the answer
PHOTOS = {"chelsea": ("cat",), "coffee": ("espresso", "coffee", "cup"), "astronaut": ("person", "face", "man", "woman"),
          "rocket": ("rocket", "missile")}
ANSWER_TOKENS = 64


@pytest.fixture(scope="module")
def pictures(tmp_path_factory):
    from skimage import data

    folder = tmp_path_factory.mktemp("pictures")
    paths = {}
    for name in PHOTOS:
        Image.fromarray(getattr(data, name)()).save(folder / f"{name}.png")
        paths[name] = folder / f"{name}.png"
    circle = Image.new("RGB", (400, 300), "white")
    ImageDraw.Draw(circle).ellipse((120, 70, 280, 230), fill=(220, 20, 30))
    circle.save(folder / "circle.png")
    sign = Image.new("RGB", (900, 200), "white")
    ImageDraw.Draw(sign).text((20, 60), "OPEN DAILY 9-17", fill="black", font=ImageFont.load_default(size=64))
    sign.save(folder / "sign.png")
    paths.update(circle=folder / "circle.png", sign=folder / "sign.png")
    return paths


def ask(ctx, question: str, images=(), tokens: int = ANSWER_TOKENS) -> str:
    """One reply with the app's default settings (only the length set), as the chat sends it."""
    request = ReplyRequest(Conversation.asking(question, [str(p) for p in images]), SamplingParams(max_tokens=tokens))
    return "".join(ctx.deployment.open_reply(request))


# what the tests below ask each demo kind: key -> (question, pictures, answer tokens)
ASKED = {**{name: (WHAT, (name,), ANSWER_TOKENS) for name in PHOTOS},
         "circle": ("What colour is the circle?", ("circle",), ANSWER_TOKENS),
         "sign": ("When is it open?", ("sign",), ANSWER_TOKENS),
         "two": ("What are the two pictures?", ("chelsea", "coffee"), 96)}


@pytest.fixture(scope="module")
def answers(demo_app, pictures) -> dict[str, str]:
    """The replies of one demo kind to every question of ASKED, sent together as users' questions arrive: the
    engine batches them in flight, and greedy decoding gives each the words it gets alone."""
    def answer(index: int) -> str:
        question, names, tokens = list(ASKED.values())[index]
        return ask(demo_app[0], question, [pictures[name] for name in names], tokens)

    return dict(zip(ASKED, run_in_threads(answer, len(ASKED)), strict=True))


@pytest.mark.parametrize("name", list(PHOTOS))
def test_answers_name_what_is_in_the_photo(answers, name):
    answer = answers[name]
    assert any(word in answer.lower() for word in PHOTOS[name]), answer


def test_the_red_circle_is_red_and_the_sign_is_read(answers):
    assert "red" in answers["circle"].lower()
    assert "9-17" in answers["sign"]


def test_two_pictures_in_one_message_are_described_each(answers):
    """Each image's block says which it is ("[Image 1: ...]", "[Image 2: ...]"); unnumbered, greedy SmolLM2 with the
    default penalties named only the second picture on the engine topology."""
    answer = answers["two"].lower()
    assert "cat" in answer and any(word in answer for word in ("coffee", "espresso", "cup")), answer


def test_what_the_model_saw_is_reported_after_the_reply(app_served, pictures):
    """Engine topology: the encoder says what it found in each image of the request, as it gave it to the model."""
    from app.chat.model_saw import image_reports

    request = ReplyRequest(Conversation.asking("What are the two pictures?", [str(pictures["chelsea"]), str(pictures["sign"])]),
                           SamplingParams(max_tokens=8))
    stream = app_served[0].deployment.open_reply(request)
    "".join(stream)
    cat, sign = image_reports(stream)
    assert cat["labels"][0]["group"] == "cat" and cat["description"].startswith("It shows a cat"), cat
    assert sign["text"] == "OPEN DAILY 9-17" and 'Text: "OPEN DAILY 9-17"' in sign["description"], sign


QUESTIONS = [
    (WHAT, "chelsea"), ("Describe this photo.", "coffee"), ("Who is in this picture?", "astronaut"),
    ("What colour is the circle?", "circle"), ("What does the sign say?", "sign"), ("Tell me about this image.", "rocket"),
    ("Write a short story about a lighthouse.", None), ("Explain how rain forms.", None),
    ("What can I cook with eggs and rice?", None), ("List some facts about the Moon.", None),
]


def sentences(text: str) -> list[str]:
    return [s.strip().lower() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip()) > 3]


def test_default_decoding_does_not_loop(app_served, pictures):
    """On the engine topology (the llmapi kind runs the same engine core with the same defaults). The default
    presence penalty (generated tokens only) is what keeps greedy SmolLM2 out of loops; a code read in an image
    is still copied (test_cpu_ocr). The ten questions arrive together, as from ten users: the engine batches them
    in flight (the same greedy words as asked one by one), in about half the time."""
    def answer(index: int) -> str:
        question, picture = QUESTIONS[index]
        return ask(app_served[0], question, [pictures[picture]] if picture else (), tokens=200)

    for (question, _), text in zip(QUESTIONS, run_in_threads(answer, len(QUESTIONS)), strict=True):
        repeated = [(s, n) for s, n in Counter(sentences(text)).items() if n >= 3]
        assert not repeated, (question, text)
