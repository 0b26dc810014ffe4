"""OpenAI-compatible wire format without a server: bodies, images, sampling, error mapping."""

import base64
import io

import pytest
from PIL import Image

from app.core.conversation import Conversation, Media, ReplyVersion, Turn
from app.core.errors import (
    ChatError,
    InputTooLong,
    InvalidRequest,
    ModelNotReady,
    ServerUnreachable,
    TextOnlyDeployment,
    TooManyImages,
)
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.image_urls import MAX_IMAGES
from app.deployments.openai_compat.deployment import api_base
from app.deployments.openai_compat.wire import (
    http_error,
    messages_body,
    sampling_fields,
    stream_event,
)


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def test_api_base_takes_either_spelling():
    assert api_base("http://h:1") == api_base("http://h:1/v1/") == "http://h:1/v1"


def test_messages_carry_system_prompt_and_images_of_this_turn():
    image = png_bytes()
    history = Conversation((Turn.user("hi", (Media.of(b"an earlier picture"),)),
                            Turn.reply(ReplyVersion("yo", "pirate", figures="1 token · pirate · K")),
                            Turn.user("what is this?", (Media.of(image), Media.of(image)))))
    body = messages_body(ReplyRequest(history), system_prompt="be brief")
    assert [m["role"] for m in body] == ["system", "user", "assistant", "user"] and body[1]["content"] == "hi"
    assert body[0] == {"role": "system", "content": "be brief"} and body[2]["content"] == "yo"
    parts = body[-1]["content"]
    assert [p["type"] for p in parts] == ["image_url", "image_url", "text"]
    assert parts[0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(image).decode()


def test_images_get_the_usual_intake_checks():
    with pytest.raises(ChatError):
        messages_body(ReplyRequest(Conversation.asking("x", [b"not an image"])), "")
    with pytest.raises(TooManyImages):
        messages_body(ReplyRequest(Conversation.asking("x", [png_bytes()] * (MAX_IMAGES + 1))), "")


def test_sampling_maps_to_openai_fields_and_extensions():
    assert sampling_fields(SamplingParams(max_tokens=9, seed=3, presence_penalty=0, frequency_penalty=0)) == {
        "max_tokens": 9, "seed": 3, "temperature": 0.0}
    assert sampling_fields(SamplingParams(frequency_penalty=0.25))["frequency_penalty"] == 0.25
    assert sampling_fields(SamplingParams())["presence_penalty"] == 0.5  # the app's default travels with the request
    fields = sampling_fields(SamplingParams(temperature=0.5, top_k=40, top_p=0.9, repetition_penalty=1.2), 5)
    assert fields["temperature"] == 0.5 and fields["top_p"] == 0.9 and fields["top_k"] == 40
    assert fields["repetition_penalty"] == 1.2 and fields["min_tokens"] == 5


@pytest.mark.parametrize(("status", "body", "kind"), [
    (400, '{"error": {"message": "This model\'s maximum context length is 2048 tokens"}}', InputTooLong),
    (404, '{"error": {"message": "The model `x` does not exist."}}', ModelNotReady),
    (400, '{"message": "bad top_k"}', InvalidRequest),
    (400, '{"error": {"message": "smollm2 is not a multimodal model; image input refused"}}', TextOnlyDeployment),
    (503, "upstream down", ServerUnreachable),
    (401, "{}", ChatError),
])
def test_server_errors_become_typed_errors(status, body, kind):
    error = http_error(status, body, "x")
    assert type(error) is kind and str(error).endswith((".", ")", "again.", "in a moment."))


def test_stream_events():
    assert stream_event('data: {"choices": []}') == {"choices": []}
    assert stream_event("data: [DONE]") is None and stream_event(": ping") is None
