"""OpenAI chat-completions bodies in the app's terms: parsing, checks with plain messages, reply shapes."""

import base64
import json

import pytest

from app.api.openai_schema import ChunkWriter, completion_body, models_body, parse_chat_request
from app.core.constants import MAX_IMAGE_BYTES
from app.core.errors import InvalidImage, InvalidRequest

SERVED = "tensorrt_llm_bls"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


def body(**fields):
    return {"model": SERVED, "messages": [{"role": "user", "content": "hi"}], **fields}


def test_conversation_system_and_history():
    chat = parse_chat_request(body(messages=[
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "1"},
        {"role": "user", "content": [{"type": "text", "text": "two"}, {"type": "text", "text": "three"}]},
    ]), SERVED)
    assert chat.system_prompt == "Be brief."
    assert [(turn.role, turn.text) for turn in chat.conversation.turns] == [
        ("user", "one"), ("assistant", "1"), ("user", "two\nthree")]
    assert chat.adapter is None and chat.model == SERVED and chat.stream is False
    assert chat.conversation.current_images() == ()


@pytest.mark.parametrize("model, adapter", [(SERVED, None), ("", None), ("base model", None), ("pirate", "pirate")])
def test_model_names_base_or_adapter(model, adapter):
    chat = parse_chat_request(body(model=model), SERVED)
    assert chat.adapter == adapter
    assert chat.model == (model or SERVED)


def test_images_of_the_last_user_message_only():
    url = f"data:image/png;base64,{PNG}"
    chat = parse_chat_request(body(messages=[
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "a"}]},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": [{"type": "text", "text": "c"}, {"type": "image_url", "image_url": url}]},
    ]), SERVED)
    assert chat.conversation.current_images() == (base64.b64decode(PNG),)
    assert chat.conversation.turns[0].has_pictures and chat.conversation.turns[0].images == ()  # named, not sent
    chat = parse_chat_request(body(messages=[
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "a"}]},
        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]), SERVED)
    assert chat.conversation.current_images() == () and chat.conversation.latest_images() == ()


def test_openai_sampling_meanings():
    default = parse_chat_request(body(), SERVED).params
    assert (default.temperature, default.top_p, default.top_k) == (1.0, 1.0, 0)
    assert default.max_tokens == 256
    greedy = parse_chat_request(body(temperature=0, max_completion_tokens=12, seed=5), SERVED).params
    assert (greedy.top_k, greedy.top_p, greedy.max_tokens, greedy.seed) == (1, 0.0, 12, 5)
    extended = parse_chat_request(body(top_k=40, repetition_penalty=1.2, temperature=0.5, top_p=0.9), SERVED).params
    assert (extended.top_k, extended.repetition_penalty, extended.temperature, extended.top_p) == (40, 1.2, 0.5, 0.9)
    seeds = {parse_chat_request(body(), SERVED).params.seed for _ in range(5)}
    assert len(seeds) > 1, "without a seed each request samples afresh"


def test_min_tokens():
    assert parse_chat_request(body(max_tokens=16, min_tokens=16), SERVED).min_tokens == 16
    assert parse_chat_request(body(), SERVED).min_tokens == 0


def test_include_usage():
    assert parse_chat_request(body(stream=True, stream_options={"include_usage": True}), SERVED).include_usage
    assert not parse_chat_request(body(stream=True), SERVED).include_usage


def test_stop_words():
    assert parse_chat_request(body(stop="END"), SERVED).stop == ["END"]
    assert parse_chat_request(body(stop=["a", "b"]), SERVED).stop == ["a", "b"]


BAD = [
    ([], "must be a JSON object"),
    (body(messages=[]), "messages must be a non-empty list"),
    (body(messages="hi"), "messages must be a non-empty list"),
    (body(messages=[{"role": "tool", "content": "x"}]), "messages[0].role must be system, user or assistant"),
    (body(messages=[{"role": "user", "content": 5}]), "messages[0].content must be text or a list"),
    (body(messages=[{"role": "user", "content": [{"type": "input_audio"}]}]),
     "only text, image_url, video_url and file (PDF) parts"),
    (body(messages=[{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-abc"}}]}]),
     "this app keeps no uploaded files, so a file_id cannot be read"),
    (body(messages=[{"role": "user", "content": [{"type": "file", "file": {"file_data": "data:image/png;base64,"
                                                                                       + PNG}}]}]),
     "file_data must be a data:application/pdf;base64,... URL"),
    (body(messages=[{"role": "user", "content": [{"type": "file", "file": "paper.pdf"}]}]),
     "file_data must be a data:application/pdf;base64,... URL"),
    (body(messages=[{"role": "user", "content": [{"type": "file", "file": {
        "file_data": "data:application/pdf;base64,JVBERi0=", "pages": "all of them"}}]}]),
     "pages must be a page range such as \"1-3,5\""),
    (body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]),
     "the app does not fetch remote files"),
    (body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": "data:image/png;base64,@@"}]}]),
     "does not hold valid base64"),
    (body(messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]),
     "The last message must be the user's"),
    (body(n=2), "n must be 1"),
    (body(frequency_penalty=2.5), "frequency penalty must be between -2.0 and 2.0"),
    (body(presence_penalty="lots"), "presence penalty must be a number"),
    (body(stop=["a", "b", "c", "d", "e"]), "at most 4 non-empty strings"),
    (body(stop=[""]), "at most 4 non-empty strings"),
    (body(stream="yes"), "stream must be true or false"),
    (body(temperature=5), "temperature must be between"),
    (body(max_tokens=0), "max tokens must be between"),
    (body(max_tokens="many"), "max tokens must be a number"),
    (body(model=3), "must be a JSON object"),
    (body(stream_options=True), "stream_options must be an object"),
    (body(max_tokens=8, min_tokens=9), "min_tokens must be a whole number from 0 to max_tokens (8), got 9."),
    (body(min_tokens=1.5), "min_tokens must be a whole number"),
    (body(stream_options={"include_usage": "yes"}), "include_usage must be true or false"),
]


@pytest.mark.parametrize("request_body, message", BAD)
def test_bad_requests_get_their_message(request_body, message):
    with pytest.raises(InvalidRequest) as error:
        parse_chat_request(request_body, SERVED)
    assert message in str(error.value)


def test_oversized_image_refused_before_decoding():
    huge = "A" * ((MAX_IMAGE_BYTES // 3 + 10) * 4)
    with pytest.raises(InvalidImage, match="images may be at most 20 MB"):
        parse_chat_request(body(messages=[{"role": "user", "content": [
            {"type": "text", "text": "what?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{huge}"}}]}]), SERVED)


def _event(line: str) -> dict:
    assert line.startswith("data: ") and line.endswith("\n\n")
    return json.loads(line[6:])


def test_chunk_writer_events_are_openai_chunks():
    writer = ChunkWriter("pirate")
    role, text, finish = _event(writer.role()), _event(writer.text('Arr "matey"\n')), _event(writer.finish("stop"))
    for event in (role, text, finish):
        assert event["object"] == "chat.completion.chunk" and event["model"] == "pirate"
        assert event["id"] == writer.id and event["id"].startswith("chatcmpl-")
    assert role["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert text["choices"] == [{"index": 0, "delta": {"content": 'Arr "matey"\n'}, "finish_reason": None}]
    assert finish["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert _event(writer.error("boom"))["error"]["message"] == "boom"
    usage = _event(writer.usage(7))
    assert usage["choices"] == [] and usage["usage"] == {"completion_tokens": 7} and usage["id"] == writer.id
    assert writer.done() == "data: [DONE]\n\n"


def test_completion_and_models_bodies():
    reply = completion_body("french", "Bonjour", "length", 3)
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "Bonjour"}
    assert reply["choices"][0]["finish_reason"] == "length" and reply["usage"]["completion_tokens"] == 3
    models = models_body(SERVED, ["french", "pirate"])
    assert [m["id"] for m in models["data"]] == [SERVED, "french", "pirate"]
    assert models["data"][1]["parent"] == SERVED


def test_penalties_have_openai_meaning_and_the_app_defaults_when_left_out():
    from app.core.sampling import SAMPLING_LIMITS

    given = parse_chat_request(body(presence_penalty=-0.5, frequency_penalty=1.25), "m").params
    assert (given.presence_penalty, given.frequency_penalty) == (-0.5, 1.25)
    left_out = parse_chat_request(body(), "m").params
    assert left_out.presence_penalty == SAMPLING_LIMITS["presence_penalty"][0] == 0.5
    assert left_out.frequency_penalty == SAMPLING_LIMITS["frequency_penalty"][0] == 0.5


def test_fields_left_out_take_the_models_defaults_then_openais():
    """As vLLM with --generation-config auto: field by field, the caller's value, else the model's, else OpenAI's."""
    model = {"temperature": 0.2, "top_p": 0.9}
    left_out = parse_chat_request(body(), SERVED, model).params
    assert (left_out.temperature, left_out.top_p, left_out.top_k) == (0.2, 0.9, 0)
    own = parse_chat_request(body(temperature=0.8), SERVED, model).params
    assert (own.temperature, own.top_p) == (0.8, 0.9)
    greedy = parse_chat_request(body(temperature=0), SERVED, model).params
    assert (greedy.top_k, greedy.top_p) == (1, 0.0)
    assert parse_chat_request(body(), SERVED, {"temperature": 0}).params.top_k == 1  # a greedy model default
    penalties = parse_chat_request(body(), SERVED, {"presence_penalty": 0.0, "repetition_penalty": 1.1}).params
    assert (penalties.presence_penalty, penalties.frequency_penalty, penalties.repetition_penalty) == (0.0, 0.5, 1.1)


def test_video_url_parts_are_taken_as_vllm_takes_them(tmp_path):
    from app.core.conversation import VIDEO
    from tests.media import ball_video
    gif = ball_video(tmp_path / "ball.gif", frames=6).read_bytes()
    url = "data:image/gif;base64," + base64.b64encode(gif).decode()
    chat = parse_chat_request(body(messages=[{"role": "user", "content": [
        {"type": "text", "text": "What moves?"}, {"type": "video_url", "video_url": {"url": url}}]}]), SERVED)
    (media,) = chat.conversation.turns[-1].media
    assert media.kind == VIDEO and media.data == gif and not media.frames  # sampled when the request opens
    with pytest.raises(InvalidRequest, match=r"send videos inline as data:video/mp4;base64"):
        parse_chat_request(body(messages=[{"role": "user", "content": [
            {"type": "text", "text": "x"}, {"type": "video_url", "video_url": {"url": "https://x/v.mp4"}}]}]), SERVED)


def test_file_parts_carry_a_pdf_as_openai_sends_one():
    from app.core.constants import MAX_PDF_BYTES
    from app.core.conversation import PDF
    pdf = b"%PDF-1.4 not rendered here"
    url = "data:application/pdf;base64," + base64.b64encode(pdf).decode()
    first = {"role": "user", "content": [{"type": "file", "file": {"file_data": url, "filename": "old.pdf"}}]}
    chat = parse_chat_request(body(messages=[first, {"role": "assistant", "content": "Read."}, {"role": "user", "content": [
        {"type": "text", "text": "Convert it."},
        {"type": "file", "file": {"file_data": url, "filename": "report.pdf", "pages": "2-3"}}]}]), SERVED)
    (earlier,), (media,) = chat.conversation.turns[0].media, chat.conversation.turns[-1].media
    assert (media.kind, media.name, media.data, media.frames) == (PDF, "report.pdf", pdf, ())  # rendered on open
    assert (earlier.kind, earlier.name, earlier.data) == (PDF, "old.pdf", None)  # named only, as earlier images
    assert chat.pdf_pages == "2-3"
    huge = "A" * ((MAX_PDF_BYTES // 3 + 10) * 4)
    with pytest.raises(InvalidImage, match=r"big\.pdf is 20\.0 MB; PDF files may be at most 20 MB"):
        parse_chat_request(body(messages=[{"role": "user", "content": [{"type": "file", "file": {
            "file_data": "data:application/pdf;base64," + huge, "filename": "big.pdf"}}]}]), SERVED)


def test_parsed_outputs_ride_on_the_message_and_the_last_delta():
    from app.chat.reply_outputs import parse_reply
    text = "Year | Sales <0x0A> 2021 | 12"
    message = completion_body(SERVED, text, "stop", 5, parse_reply(text))["choices"][0]["message"]
    assert message["content"] == text
    assert message["outputs"]["table"]["header"] == ["Year", "Sales"] and message["outputs"]["table"]["rows"] == [
        ["2021", "12"]]
    assert "outputs" not in completion_body(SERVED, "prose", "stop", 1)["choices"][0]["message"]
    last = json.loads(ChunkWriter(SERVED).finish("stop", parse_reply(text))[len("data: "):])
    assert last["choices"][0]["delta"]["outputs"]["table"]["rows"] == [["2021", "12"]]
    assert json.loads(ChunkWriter(SERVED).finish("stop")[len("data: "):])["choices"][0]["delta"] == {}


def test_what_the_deployment_did_not_apply_is_said_in_the_notes_field():
    """An encoder-decoder family on the runner topology takes no sampling: the reply says so beside its text (the
    chat shows the same note in "What the model saw"), in the whole reply and in the last streamed delta."""
    note = "temperature 0.7 not applied: BLIP-2 T5's LLM is encoder-decoder, so the reply is greedy"
    message = completion_body(SERVED, "a cat", "stop", 2, None, (note,))["choices"][0]["message"]
    assert message["notes"] == [note] and message["content"] == "a cat"
    last = json.loads(ChunkWriter(SERVED).finish("stop", None, (note,))[len("data: "):])
    assert last["choices"][0]["delta"] == {"notes": [note]}
    assert "notes" not in completion_body(SERVED, "a cat", "stop", 2)["choices"][0]["message"]
