"""The OpenAI-compatible API against the real CPU deployment: streaming, adapters, images, errors.

Requests go over real HTTP to the app served in this process; the app streams from a real
tritonserver over gRPC.
"""

import base64
import io
import json

import httpx
import pytest
from starlette.requests import Request

from app.api.openai_routes import OpenAIApi
from app.context import AppConfig, AppContext


def chat(app_url: str, **fields) -> httpx.Response:
    body = {"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 24,
            "temperature": 0, **fields}
    return httpx.post(app_url + "v1/chat/completions", json=body, timeout=60)


def stream_events(app_url: str, body: dict) -> list:
    events = []
    with httpx.stream("POST", app_url + "v1/chat/completions", json={**body, "stream": True}, timeout=60) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:] if line == "data: [DONE]" else json.loads(line[6:]))
    return events


def test_models_lists_base_then_adapters(demo_app):
    ctx, app_url = demo_app
    models = httpx.get(app_url + "v1/models", timeout=10).json()
    ids = [entry["id"] for entry in models["data"]]
    assert ids[0] == ctx.config.model  # tensorrt_llm_bls on the engine demo, tensorrt_llm (llmapi) on the other
    assert {"pirate", "french"} <= set(ids[1:])


def test_streamed_reply_arrives_in_chunks_and_ends_cleanly(demo_app_url):
    events = stream_events(demo_app_url, {"messages": [{"role": "user", "content": "What is the capital of France?"}],
                                     "max_tokens": 32, "temperature": 0})
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    texts = [c["choices"][0]["delta"].get("content", "") for c in chunks[1:-1]]
    assert len(texts) >= 3, "the reply must stream, not arrive whole"
    assert "Paris" in "".join(texts) and not texts[0].startswith(" ")
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")
    assert len({c["id"] for c in chunks}) == 1


def test_whole_reply_matches_the_gradio_api_with_the_same_adapter(demo_app_url):
    from gradio_client import Client

    app_url = demo_app_url
    reply = chat(app_url, model="pirate")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    text = body["choices"][0]["message"]["content"]
    assert body["model"] == "pirate" and body["usage"]["completion_tokens"] > 0
    assert body["choices"][0]["finish_reason"] in ("stop", "length")
    # greedy on both paths, same prompt and adapter: the same words
    gradio_text = Client(app_url, verbose=False).predict(text="What is the capital of France?", max_tokens=24,
                                                          adapter="pirate", api_name="/generate")
    assert text == gradio_text.strip()
    base = chat(app_url).json()["choices"][0]["message"]["content"]
    assert base != text, "the adapter must change the reply"


def test_image_as_data_url_reaches_the_model(demo_app_url):
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (900, 260), "white")
    ImageDraw.Draw(image).text((30, 90), "The secret code is 4711", fill="black", font=ImageFont.load_default(size=64))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    reply = chat(demo_app_url, max_tokens=30, messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "What is the secret code?"}]}])
    assert reply.status_code == 200, reply.text
    assert "4711" in reply.json()["choices"][0]["message"]["content"]


@pytest.mark.parametrize("fields, status, message", [
    ({"model": "no-such-adapter"}, 400, "There is no adapter named 'no-such-adapter'"),
    ({"messages": [{"role": "user", "content": "   "}]}, 400, "Type a message first."),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}]},
     400, "does not fetch remote files"),
    ({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(b"not a png").decode()}}]}]},
     400, "is not an image"),
    ({"top_p": 3}, 400, "top p must be between"),
])
def test_bad_requests_answer_400_with_their_message(app_url, fields, status, message):
    reply = chat(app_url, **fields)
    assert reply.status_code == status
    assert message in reply.json()["error"]["message"]


def test_body_that_is_not_json(app_url):
    reply = httpx.post(app_url + "v1/chat/completions", content=b"{not json", timeout=10,
                       headers={"content-type": "application/json"})
    assert reply.status_code == 400 and "not valid JSON" in reply.json()["error"]["message"]


def _request(authorization: str | None) -> Request:
    headers = [(b"authorization", authorization.encode())] if authorization else []
    return Request({"type": "http", "method": "GET", "path": "/v1/models", "headers": headers})


def test_logins_guard_the_api():
    api = OpenAIApi(AppContext(AppConfig(auth=(("ada", "s3cret"),))), concurrency=1)
    basic = "Basic " + base64.b64encode(b"ada:s3cret").decode()
    assert api.authorized(_request("Bearer ada:s3cret")) and api.authorized(_request(basic))
    for bad in (None, "Bearer ada:wrong", "Bearer bob:s3cret", "Basic !!", "Token ada:s3cret"):
        assert not api.authorized(_request(bad)), bad
    assert OpenAIApi(AppContext(AppConfig()), concurrency=1).authorized(_request(None))


def test_the_official_openai_client_streams_and_reads_errors(app_url):
    import openai

    client = openai.OpenAI(base_url=app_url + "v1", api_key="unused", max_retries=0)
    assert "pirate" in [m.id for m in client.models.list()]
    pieces = [chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
        model="french", stream=True, temperature=0, max_tokens=24,
        messages=[{"role": "user", "content": "What is the capital of France?"}])]
    assert len([p for p in pieces if p]) >= 3 and "Paris" in "".join(pieces)
    whole = client.chat.completions.create(model="french", temperature=0, max_tokens=24,
                                           messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert whole.choices[0].message.content == "".join(pieces).strip()
    with pytest.raises(openai.BadRequestError, match="There is no adapter named 'klingon'"):
        client.chat.completions.create(model="klingon", messages=[{"role": "user", "content": "hi"}])


def test_a_stop_sequence_ends_the_reply_before_it(demo_app_url):
    whole = chat(demo_app_url).json()["choices"][0]["message"]["content"]
    assert "Paris" in whole
    cut = chat(demo_app_url, stop=["Paris"]).json()["choices"][0]
    assert "Paris" not in cut["message"]["content"]  # OpenAI's stop: the sequence is not part of the reply
    assert cut["message"]["content"].strip() == whole[: whole.index("Paris")].strip()
    assert cut["finish_reason"] == "stop"


def _code_frames(count: int, duration_ms: int) -> str:
    """A GIF (as a data URL) whose every frame shows the secret code, moved a little each frame."""
    from PIL import Image, ImageDraw, ImageFont

    frames = []
    for index in range(count):
        frame = Image.new("RGB", (900, 260), "white")
        ImageDraw.Draw(frame).text((30 + 4 * index, 90), "The secret code is 4711", fill="black",
                                   font=ImageFont.load_default(size=64))
        frames.append(frame)
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=duration_ms, loop=0)
    return "data:image/gif;base64," + base64.b64encode(buffer.getvalue()).decode()


def test_a_video_url_part_reaches_the_model_as_its_frames(app_url):
    """vLLM's video_url part: the frames are sampled (as many as the demo takes) and read by its encoder."""
    reply = chat(app_url, max_tokens=30, messages=[{"role": "user", "content": [
        {"type": "video_url", "video_url": {"url": _code_frames(6, 200)}},
        {"type": "text", "text": "What is the secret code?"}]}])
    assert reply.status_code == 200, reply.text
    assert "4711" in reply.json()["choices"][0]["message"]["content"]


def test_a_video_over_the_length_limit_is_refused_before_anything_runs(app_url):
    reply = chat(app_url, messages=[{"role": "user", "content": [
        {"type": "video_url", "video_url": {"url": _code_frames(3, 50_000)}},
        {"type": "text", "text": "What is the secret code?"}]}])
    assert reply.status_code == 400
    assert "lasts 150.0 seconds; videos may last at most 120 seconds" in reply.json()["error"]["message"]
