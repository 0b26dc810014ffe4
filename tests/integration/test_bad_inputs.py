"""Bad input corpus: prompts and sampling values through the app's API, command-line values of the
app, setup and bench, build-wizard fields, images and adapters. Each gets its own plain message; no
crash, no traceback."""

from __future__ import annotations

import base64
import json
import zipfile

import httpx
import pytest

from app.chat.messages import MSG_EMPTY_PROMPT, MSG_PROMPT_TOO_LONG
from app.core.constants import MAX_PROMPT_CHARS
from app.core.messages import MSG_TEXT_ONLY
from app.vision.messages import MSG_IMAGE_EMPTY, MSG_IMAGE_NOT_AN_IMAGE, MSG_IMAGE_TRUNCATED
from tests.bench_fixtures import pacing, pacing_app  # noqa: F401 - fixtures
from tests.media import bomb_gif
from tests.servers import free_port

API_CASES = [  # (id, generate() arguments, message)
    ("empty", {"text": ""}, MSG_EMPTY_PROMPT),
    ("whitespace", {"text": "  \n\t "}, MSG_EMPTY_PROMPT),
    ("too-many-chars", {"text": "x" * (MAX_PROMPT_CHARS + 1)}, MSG_PROMPT_TOO_LONG.format(limit=MAX_PROMPT_CHARS)),
    ("max-tokens-0", {"max_tokens": 0}, "max tokens must be between 1 and 4096, got 0."),
    ("max-tokens-huge", {"max_tokens": 10**6}, "max tokens must be between 1 and 4096, got 1000000."),
    ("temperature-0", {"temperature": 0}, "temperature must be between 0.01 and 2.0, got 0.0."),
    ("temperature-huge", {"temperature": 1e308}, "temperature must be between 0.01 and 2.0, got 1e+308."),
    ("top-p-above-1", {"top_p": 1.5}, "top p must be between 0.0 and 1.0, got 1.5."),
    ("top-p-negative", {"top_p": -0.5}, "top p must be between 0.0 and 1.0, got -0.5."),
    ("top-k-negative", {"top_k": -1}, "top k must be between 0 and 1000, got -1."),
    ("top-k-huge", {"top_k": 5000}, "top k must be between 0 and 1000, got 5000."),
    ("repetition-penalty-0", {"repetition_penalty": 0}, "repetition penalty must be between 0.5 and 2.0, got 0.0."),
    ("seed-negative", {"seed": -1}, "seed must be between 0 and 9223372036854775807, got -1."),
    ("seed-above-int64", {"seed": 2**64}, "seed must be between 0 and 9223372036854775807, got 18446744073709551616."),
    ("unknown-adapter", {"adapter": "../../etc"}, "There is no adapter named '../../etc'."),
    ("image-not-uploaded", {"images": "/etc/hostname"}, "Images must be uploaded with the request"),
]
# Wrong types reach the API too (gradio_client sends whatever JSON it is given).
TYPE_CASES = [
    ("max-tokens-text", {"max_tokens": "abc"}, "max tokens must be a number, got 'abc'."),
    ("max-tokens-null", {"max_tokens": None}, "max tokens must be a number, got None."),
    ("text-is-a-number", {"text": 123}, "The message must be text, got int."),
]


def call_api(url: str, **kwargs) -> str:
    from gradio_client import Client

    return Client(url, verbose=False).predict(**{"text": "hi", "max_tokens": 4, **kwargs}, api_name="/generate")


@pytest.mark.integration
@pytest.mark.parametrize("case, kwargs, message", API_CASES, ids=[c[0] for c in API_CASES])
def test_api_answers_each_bad_value(pacing_app, case, kwargs, message):  # noqa: F811
    with pytest.raises(Exception) as info:
        call_api(pacing_app, **kwargs)
    assert message in str(info.value)
    assert "Traceback" not in str(info.value)


@pytest.mark.integration
@pytest.mark.parametrize("case, kwargs, message", TYPE_CASES, ids=[c[0] for c in TYPE_CASES])
def test_api_answers_wrong_types(pacing_app, case, kwargs, message):  # noqa: F811
    with pytest.raises(Exception) as info:
        call_api(pacing_app, **kwargs)
    assert message in str(info.value)


def raw_call(url: str, body: bytes) -> tuple[int, str]:
    """POST a hand-made JSON body to /generate and read its event stream (what gradio_client cannot send)."""
    api = url + "gradio_api/call/generate"
    with httpx.Client(timeout=30) as client:
        response = client.post(api, content=body, headers={"content-type": "application/json"})
        if response.status_code != 200:
            return response.status_code, response.text
        event = response.json()["event_id"]
        return 200, client.get(f"{api}/{event}").text


def body(url: str, raw_values: dict[str, str]) -> bytes:
    """A JSON body with some values written as raw JSON text (e.g. NaN or "\\ud800")."""
    with httpx.Client() as client:
        params = client.get(url + "gradio_api/info").json()["named_endpoints"]["/generate"]["parameters"]
    defaults = {"text": "hi", "max_tokens": 4}
    items = [raw_values.get(p["parameter_name"], json.dumps(defaults.get(p["parameter_name"], p["parameter_default"])))
             for p in params]
    return ('{"data": [' + ", ".join(items) + "]}").encode()


@pytest.mark.integration
@pytest.mark.parametrize("raw, message", [
    ({"text": '"caf\\ud800 au lait"'}, "The message holds a character that is not valid Unicode text"),
    ({"system_prompt": '"be \\udcff kind"'}, "The message holds a character that is not valid Unicode text"),
    ({"temperature": "NaN"}, "temperature must be between 0.01 and 2.0, got nan."),
    ({"top_p": "Infinity"}, "top p must be between 0.0 and 1.0, got inf."),
], ids=["lone-surrogate", "surrogate-in-system-prompt", "nan", "infinity"])
def test_api_answers_values_only_raw_json_can_carry(pacing_app, raw, message):  # noqa: F811
    status, text = raw_call(pacing_app, body(pacing_app, raw))
    assert status == 200 and "event: error" in text and message in text, text


@pytest.mark.integration
def test_api_refuses_bytes_that_are_not_utf8(pacing_app):  # noqa: F811
    status, text = raw_call(pacing_app, b'{"data": ["caf\xe9 \xff", 4]}')
    assert (status, text) == (400, '{"detail":"There was an error parsing the body"}')


@pytest.mark.integration
def test_api_prompt_over_the_models_input_length(app_url):
    """The CPU engine's limit (max_input_len 2048, read from its config.json), counted with the tokenizer
    before the request is sent and answered in plain words."""
    with pytest.raises(Exception, match=r"The conversation is [\d,]+ tokens; this deployment takes at most 2,048 "
                                        r"input tokens\. Start a new chat or shorten it\."):
        call_api(app_url, text="word " * 2500)


@pytest.mark.integration
def test_api_image_to_a_text_only_model(pacing_app, tmp_path):  # noqa: F811
    from gradio_client import Client, handle_file
    from PIL import Image

    path = tmp_path / "dot.png"
    Image.new("RGB", (8, 8), "red").save(path)
    with pytest.raises(Exception, match=MSG_TEXT_ONLY.split(":")[0]):
        Client(pacing_app, verbose=False).predict(text="what is this?", images=[handle_file(str(path))],
                                                   api_name="/generate")


def _media_body(part: str, mime: str, data: bytes) -> bytes:
    url = f"data:{mime};base64," + base64.b64encode(data).decode()
    return json.dumps({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is it?"}, {"type": part, part: {"url": url}}]}]}).encode()


OPENAI_CASES = [  # (id, raw body, message): the OpenAI-compatible API refuses with 400 and its own sentence
    ("openai-not-json", b"{nope", "The request body is not valid JSON"),
    ("openai-not-utf8", b'{"messages": "caf\xe9"}', "The request body is not valid JSON"),
    ("openai-lone-surrogate", b'{"messages": [{"role": "user", "content": "caf\\ud800"}]}',
     "The message holds a character that is not valid Unicode text"),
    ("openai-no-messages", b'{"model": "pacing"}', "messages must be a non-empty list"),
    ("openai-image-to-text-only-model",
     json.dumps({"messages": [{"role": "user", "content": [
         {"type": "text", "text": "what is it?"},
         {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1"
                                                    "PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"}}]}]}).encode(),
     MSG_TEXT_ONLY.split(":")[0]),
    ("openai-adapter-on-model-without-lora", b'{"model": "pirate", "messages": [{"role": "user", "content": "hi"}]}',
     "takes no LoRA inputs"),
]

MEDIA_CASES = [  # (id, raw body, message): each decoder's refusal, on a vision deployment, is a 400 naming the kind
    ("gif-claiming-a-huge-screen", _media_body("image_url", "image/gif", bomb_gif()), "megapixels"),
    ("gif-video-claiming-a-huge-screen", _media_body("video_url", "image/gif", bomb_gif()),
     "pixels per frame; video frames may have at most"),  # was HTTP 500 (DecompressionBombError)
    ("video-part-of-random-bytes", _media_body("video_url", "video/webm", bytes(range(256)) * 20),
     "is not an MP4, WebM or GIF video"),  # was "The image is not an image"
]


@pytest.mark.integration
@pytest.mark.parametrize("case, raw, message", OPENAI_CASES, ids=[c[0] for c in OPENAI_CASES])
def test_openai_api_answers_each_bad_body(pacing_app, case, raw, message):  # noqa: F811
    reply = httpx.post(pacing_app + "v1/chat/completions", content=raw, timeout=10,
                       headers={"content-type": "application/json"})
    assert reply.status_code == 400, reply.text
    assert message in reply.json()["error"]["message"]


@pytest.mark.integration
@pytest.mark.parametrize("case, raw, message", MEDIA_CASES, ids=[c[0] for c in MEDIA_CASES])
def test_openai_api_refuses_bad_media_in_a_sentence(app_url, case, raw, message):
    reply = httpx.post(app_url + "v1/chat/completions", content=raw, timeout=60,
                       headers={"content-type": "application/json"})
    assert reply.status_code == 400, reply.text
    assert message in reply.json()["error"]["message"]


@pytest.mark.integration
def test_openai_api_refuses_a_body_over_its_limit(pacing_app):  # noqa: F811
    from app.core.constants import API_MAX_BODY_BYTES

    raw = b'{"messages": "' + b"x" * (API_MAX_BODY_BYTES + 1) + b'"}'
    reply = httpx.post(pacing_app + "v1/chat/completions", content=raw, timeout=30,
                       headers={"content-type": "application/json"})
    assert reply.status_code == 413
    assert reply.json()["error"]["message"] == "The request body is larger than 64 MB."


# ----- command lines (run in-process: the same parsers and handlers; a traceback fails the test) -----

def run_main(main, argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    return code, err


CLI_CASES = [  # (id, module, argv, message)
    ("app-bad-model-name", "app", ["--triton", "127.0.0.1:1", "--model", "bad name!"], "is not a model name"),
    ("app-concurrency-0", "app", ["--triton", "127.0.0.1:1", "--concurrency", "0"], "0 must be at least 1"),
    ("app-port-0", "app", ["--demo", "--port", "0"], "port 0 is outside 1-65535"),
    ("bench-no-target", "bench", [], "one of the arguments --triton --openai is required"),
    ("bench-openai-not-a-url", "bench", ["--openai", "localhost:7860"], "'localhost:7860' is not an http(s) URL"),
    ("bench-openai-unreachable", "bench", ["--openai", f"http://127.0.0.1:{free_port()}/v1", "--num-requests", "1"],
     "cannot be reached"),
    ("bench-bad-address", "bench", ["--triton", "nowhere"], "'nowhere' is not HOST:PORT"),
    ("bench-concurrency-0", "bench", ["--triton", "127.0.0.1:1", "--concurrency", "0"], "0 must be at least 1"),
    ("bench-rate-negative", "bench", ["--triton", "127.0.0.1:1", "--request-rate", "-2"], "-2 must be a number above 0"),
    ("bench-requests-text", "bench", ["--triton", "127.0.0.1:1", "--num-requests", "ten"], "'ten' is not a whole number"),
    ("bench-warmup-negative", "bench", ["--triton", "127.0.0.1:1", "--warmup", "-1"], "-1 cannot be negative"),
    ("bench-dataset-and-input-len", "bench", ["--triton", "127.0.0.1:1", "--dataset", "d.json", "--input-len", "8"],
     "--input-len makes synthetic prompts; it cannot be combined with --dataset."),
    ("bench-dataset-missing", "bench", ["--triton", "127.0.0.1:1", "--dataset", "/nonexistent/d.json"],
     "Dataset /nonexistent/d.json cannot be read: No such file or directory"),
    ("bench-adapter-unknown", "app", ["bench", "--triton", "127.0.0.1:1", "--adapter", "nope"],
     "There is no adapter named 'nope'."),
    ("bench-image-missing", "app", ["bench", "--triton", "127.0.0.1:1", "--image", "/nonexistent/x.png"],
     "Cannot read /nonexistent/x.png: No such file or directory."),
    ("bench-json-folder-missing", "bench", ["--triton", "127.0.0.1:1", "--json", "/nonexistent/out.json"],
     "Cannot write /nonexistent/out.json: its folder does not exist."),
    ("bench-server-unreachable", "bench", ["--triton", f"127.0.0.1:{free_port()}", "--num-requests", "1"],
     "cannot be reached"),
    ("pacing-rate-0", "bench_repo", ["add", "--repo", ".", "--tokens-per-second", "0"],
     "tokens per second must be above 0, got 0.0."),
    ("pacing-repo-missing", "bench_repo", ["add", "--repo", "/nonexistent-repo"],
     "Model repository /nonexistent-repo does not exist."),
    ("app-pacing-rate-without-demo", "app", ["--triton", "127.0.0.1:1", "--pacing-rate", "50"],
     "--pacing-rate adds the pacing model to the demo's own server; use it with --demo"),
    ("app-pacing-rate-0", "app", ["--demo", "--pacing-rate", "0"], "0 must be a number above 0"),
    ("setup-repo-config-missing", "setup", ["repo", "--config", "/nonexistent.yaml", "--out", "/tmp/x"], "does not exist"),
    ("setup-world-size-0", "setup", ["launch", "--repo", ".", "--world-size", "0"], "0 must be at least 1"),
]


def _main(module: str):
    if module == "app":
        from app.__main__ import main
    elif module == "bench":
        from app.bench.cli import main
    elif module == "bench_repo":
        from setup.cpu.pacing import main
    else:
        from setup.__main__ import main
    return main


@pytest.mark.parametrize("case, module, argv, message", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_command_lines_answer_each_bad_value(case, module, argv, message, capsys):
    code, err = run_main(_main(module), argv, capsys)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


# ----- build wizard fields (setup/plan/planner.py via PlanConfig, as the Build tab and `python -m setup plan`) -----

@pytest.fixture
def checkpoint(tmp_path):
    from tests.build_standins import make_checkpoint

    return make_checkpoint(tmp_path / "ckpt", heads=30)


def plan_problems(tmp_path, **fields) -> list[str]:
    from setup.plan.config import ConfigError, PlanConfig
    from setup.plan.planner import PlanError, make_plan

    try:
        make_plan(PlanConfig.from_mapping({"out": str(tmp_path / "out"), "trtllm_version": "0.19", **fields}))
    except (PlanError, ConfigError) as exc:
        return exc.problems
    raise AssertionError("the plan was accepted")


def test_wizard_unknown_family(tmp_path, checkpoint):
    from setup.catalog import messages as M
    assert any(p.startswith(M.MSG_UNKNOWN_FAMILY.format(family="gpt-17", choices="")[:-2])
               for p in plan_problems(tmp_path, family="gpt-17", checkpoint=str(checkpoint)))


def test_wizard_tp_must_divide_heads(tmp_path, checkpoint):
    from setup.catalog import messages as M
    problems = plan_problems(tmp_path, family="llama", checkpoint=str(checkpoint), tp=4)
    assert M.MSG_TP_HEADS.format(tp=4, heads=30, config=checkpoint / "config.json") in problems


def test_wizard_missing_checkpoint(tmp_path):
    from setup.catalog import messages as M
    missing = tmp_path / "nowhere"
    assert M.MSG_CHECKPOINT_MISSING.format(path=missing) in plan_problems(tmp_path, family="llama",
                                                                             checkpoint=str(missing))


def test_wizard_bad_dtype(tmp_path, checkpoint):
    problems = plan_problems(tmp_path, family="llama", checkpoint=str(checkpoint), dtype="float8")
    assert any("does not support dtype float8" in p for p in problems), problems


def test_wizard_tp_not_a_number(tmp_path, checkpoint):
    from setup.catalog import messages as M
    assert M.MSG_NOT_A_NUMBER.format(name="tp", value="two") in plan_problems(
        tmp_path, family="llama", checkpoint=str(checkpoint), tp="two")


# ----- images (app/vision/images.py) and adapters (app/adapters/registry.py) -----

@pytest.mark.parametrize("data, message", [
    (b"", MSG_IMAGE_EMPTY.format(name="upload.png")),
    (b"hello, I am text", MSG_IMAGE_NOT_AN_IMAGE.format(name="upload.png")),
], ids=["empty-image", "text-as-image"])
def test_images_refused_with_a_message(data, message):
    from app.core.errors import InvalidImage
    from app.vision.images import load_image

    with pytest.raises(InvalidImage) as info:
        load_image(data, name="upload.png")
    assert str(info.value) == message


def test_truncated_image(tmp_path):
    from PIL import Image

    from app.core.errors import InvalidImage
    from app.vision.images import load_image

    path = tmp_path / "cut.png"
    Image.new("RGB", (64, 64), "blue").save(path)
    with pytest.raises(InvalidImage) as info:
        load_image(path.read_bytes()[:-40], name="cut.png")
    assert str(info.value) == MSG_IMAGE_TRUNCATED.format(name="cut.png")


def test_adapter_upload_that_is_not_a_zip(tmp_path):
    from app.adapters.messages import MSG_NOT_ZIP
    from app.adapters.registry import AdapterError, AdapterRegistry

    fake = tmp_path / "pirate.zip"
    fake.write_text("not a zip")
    with pytest.raises(AdapterError, match=MSG_NOT_ZIP.format(where="pirate.zip")):
        AdapterRegistry(tmp_path / "adapters").add_zip(fake)


def test_adapter_zip_without_an_adapter(tmp_path):
    from app.adapters.registry import AdapterError, AdapterRegistry

    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("README.txt", "hello")
    with pytest.raises(AdapterError, match="notes.zip is not an adapter"):
        AdapterRegistry(tmp_path / "adapters").add_zip(archive)


def test_adapter_with_a_bad_name(tmp_path):
    from app.adapters.registry import AdapterError, AdapterRegistry

    folder = tmp_path / "src"
    folder.mkdir()
    with pytest.raises(AdapterError, match="Adapter name '../evil' is not allowed"):
        AdapterRegistry(tmp_path / "adapters").add_folder(folder, name="../evil")


@pytest.mark.parametrize("raw, message", [
    ({"max_tokens": "abc"}, "max tokens must be a number, got 'abc'."),
    ({"max_tokens": None}, "max tokens must be a number, got None."),
    ({"max_tokens": 2.5}, "max tokens must be a whole number, got 2.5."),
    ({"top_k": [3]}, "top k must be a number, got [3]."),
    ({"temperature": True}, "temperature must be a number, got True."),
], ids=["text", "null", "fraction", "list", "bool"])
def test_request_values_name_the_wrong_type(raw, message):
    from app.chat.sampling import sampling_params
    from app.core.errors import InvalidRequest

    with pytest.raises(InvalidRequest) as info:
        sampling_params(**raw)
    assert str(info.value) == message


def test_request_values_accept_numeric_text_and_refuse_non_text_messages():
    from app.chat.sampling import require_text, sampling_params
    from app.core.errors import InvalidRequest

    assert sampling_params(max_tokens="12", temperature="0.5").max_tokens == 12
    assert require_text(None) == "" and require_text("hi") == "hi"
    with pytest.raises(InvalidRequest, match="The message must be text, got list."):
        require_text(["hi"])
