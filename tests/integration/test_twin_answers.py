"""Every CPU twin answers the question asked about its picture, as a new user asks it: three different questions
about one photo (scikit-image's chelsea) with the app's default settings, each reply checked for answering its own
question (the animal named, a colour named, indoors/outdoors or a place said). Real tritonserver per twin (the
session's: the CPU demo's engine topology and its llmapi topology; the InternLM-XComposer2 twin's, with its own server's
tests in tests/integration/test_xcomposer2_twin.py), the app's own request path; and the app's /v1 without sampling
fields uses the demo model's generation_config.json."""

from __future__ import annotations

import base64
import re

import httpx
import pytest

from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from tests.pictures import chelsea_picture

TWINS = {"engine": "app_served", "llmapi": "llmapi_app_served"}
COLOURS = ("black", "white", "grey", "gray", "brown", "orange", "red", "yellow", "green", "blue", "purple", "pink",
           "ginger", "golden", "tan", "beige", "cream")
PLACES = ("indoors", "outdoors", "inside", "outside", "indoor", "outdoor", "room", "house", "home", "garden",
          "yard", "street", "floor", "sofa", "couch", "bed", "window", "table")
# question -> words of which a reply that answers it names at least one
QUESTIONS = {
    "What animal is this?": ("cat", "kitten"),
    "What colour is its fur?": COLOURS,
    "Is it indoors or outdoors?": PLACES,
}
ANSWER_TOKENS = 48


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


@pytest.fixture(scope="module")
def chelsea(tmp_path_factory):
    return chelsea_picture(tmp_path_factory.mktemp("twin-answers") / "chelsea.png")


@pytest.fixture(scope="module", params=list(TWINS))
def twin(request):
    """(name, app context) of each twin in turn; its server is the session's, started once."""
    return request.param, request.getfixturevalue(TWINS[request.param])[0]


def ask(ctx, picture, question: str) -> str:
    """One reply to a question about the picture, with the chat's default settings (only the length set)."""
    request = ReplyRequest(Conversation.asking(question, [str(picture)]), SamplingParams(max_tokens=ANSWER_TOKENS))
    return "".join(ctx.deployment.open_reply(request)).strip()


def check_three_answers(name: str, ctx, picture) -> None:
    """The three questions about `picture`, each reply answering its own (and no one reply for all three)."""
    replies = {question: ask(ctx, picture, question) for question in QUESTIONS}
    for question, accepted in QUESTIONS.items():
        assert words(replies[question]) & set(accepted), (name, question, replies)
    assert len(set(replies.values())) == len(replies), (name, replies)  # not one reply whatever the question


def test_each_twin_answers_three_different_questions_about_one_photo(twin, chelsea):
    check_three_answers(*twin, chelsea)


def test_api_requests_without_sampling_fields_use_the_models_generation_defaults(app_served, chelsea):
    """The demo model's folder carries its model card's sampling (temperature 0.2, top p 0.9): a /v1 request that
    sends none samples with them, not OpenAI's temperature 1.0, and still answers the question."""
    import json

    from setup.cpu.model import GENERATION_CONFIG, MODEL_CARD_SAMPLING, model_dir

    ctx, url = app_served
    folder_says = json.loads((model_dir() / GENERATION_CONFIG).read_text())
    assert {k: folder_says[k] for k in MODEL_CARD_SAMPLING} == MODEL_CARD_SAMPLING
    assert ctx.deployment.sampling_defaults() == {"temperature": 0.2, "top_p": 0.9}
    image = base64.b64encode(chelsea.read_bytes()).decode()
    for seed in (1, 2):
        body = {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}},
            {"type": "text", "text": "What colour is its fur?"}]}], "max_tokens": ANSWER_TOKENS, "seed": seed}
        reply = httpx.post(url + "v1/chat/completions", json=body, timeout=120)
        assert reply.status_code == 200, reply.text
        text = reply.json()["choices"][0]["message"]["content"]
        assert words(text) & set(COLOURS), text
