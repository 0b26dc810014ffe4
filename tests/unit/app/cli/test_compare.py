"""`python -m app compare`: the columns' final texts and figures lines, the UI's sentences as one `error:` line
with exit code 2, exit code 1 when a column failed, and --triton/--openai configured as `python -m app` does."""

from __future__ import annotations

import json

import pytest

from app.chat.messages import MSG_COMPARE_NO_COLUMNS, MSG_COMPARE_TOO_MANY
from app.cli import compare as cli
from app.context import AppConfig, AppContext
from app.core.constants import LLMAPI_MODEL
from app.core.errors import ServerUnreachable
from tests.compare_fakes import RecordingDeployment, WordStream


class DownStream(WordStream):
    def __next__(self):
        raise ServerUnreachable("The Triton server cannot be reached.")


class HalfDownDeployment(RecordingDeployment):
    """The base model answers; every adapter's reply fails."""

    def open_reply(self, request):
        return super().open_reply(request) if not request.adapter else DownStream("")


def run(tmp_path, capsys, *argv: str, deployment=None) -> tuple[int, str, str]:
    ctx = AppContext(AppConfig(adapters_dir=str(tmp_path / "adapters")), deployment=deployment or RecordingDeployment())
    code = cli.main(["--triton", "127.0.0.1:1", *argv], ctx=ctx)
    out, err = capsys.readouterr()
    return code, out, err


def test_prints_each_column_with_its_text_and_figures(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, "--prompt", "Hi", "--base", "--adapter", "pirate")
    assert code == 0 and err == ""
    blocks = out.strip().split("\n\n")
    assert [block.splitlines()[0] for block in blocks] == ["=== base model ===", "=== pirate ==="]
    assert blocks[1].splitlines()[1] == "reply from pirate"
    assert blocks[1].splitlines()[2].startswith("--- done · 3 tokens")


def test_json_gives_the_apis_entries(tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, "--prompt", "Hi", "--adapter", "pirate", "--json")
    (entry,) = json.loads(out)
    assert code == 0 and entry["column"] == "pirate" and entry["state"] == "done" and set(entry) == {
        "column", "text", "state", "figures", "finish_reason"}
    assert entry["finish_reason"] == "stop"


def test_a_column_cut_at_max_tokens_says_so(tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, "--prompt", "Hi", "--base", "--max-tokens", "2")
    assert code == 0 and out.strip().splitlines()[2].startswith("--- done · cut at the 2-token limit · 2 tokens")
    _, out, _ = run(tmp_path, capsys, "--prompt", "Hi", "--base", "--max-tokens", "2", "--json")
    assert json.loads(out)[0]["finish_reason"] == "length"


def test_max_tokens_and_the_images_go_to_every_column(tmp_path, capsys):
    pictures = [tmp_path / "red.png", tmp_path / "blue.png"]
    for picture in pictures:
        picture.write_bytes(b"png")
    deployment = RecordingDeployment()
    run(tmp_path, capsys, "--prompt", "Hi", "--base", "--adapter", "french", "--max-tokens", "7", "--image",
        str(pictures[0]), "--image", str(pictures[1]), deployment=deployment)
    assert deployment.checked == [[str(p) for p in pictures]]
    assert [(r.adapter, r.sampling.max_tokens) for r in deployment.requests] == [(None, 7), ("french", 7)]


@pytest.mark.parametrize("argv, sentence", [
    (["--prompt", "Hi"], MSG_COMPARE_NO_COLUMNS),
    (["--prompt", " ", "--base"], "Type a message first."),
    (["--prompt", "Hi", "--adapter", "nobody"], "There is no adapter named 'nobody'."),
    (["--prompt", "Hi", *sum((["--adapter", n] for n in ("pirate", "french", "formal", "terse")), [])],
     MSG_COMPARE_TOO_MANY.format(limit=3)),
    (["--prompt", "Hi", "--base", "--max-tokens", "5000"], "max tokens must be between 1 and 4096"),
    (["--prompt", "Hi", "--base", "--image", "/no/such.png"], "Image file /no/such.png does not exist."),
    (["--prompt", "Hi", "--base", "--image", __file__, "--image", "/no/b.png"], "Image file /no/b.png does not exist."),
])
def test_bad_input_is_one_error_line(tmp_path, capsys, argv, sentence):
    code, out, err = run(tmp_path, capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {sentence}") and err.count("\n") == 1


def test_a_failed_column_shows_its_reason_and_exits_1(tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, "--prompt", "Hi", "--base", "--adapter", "pirate",
                       deployment=HalfDownDeployment())
    assert code == 1 and "--- failed" in out and "The Triton server cannot be reached." in out


@pytest.mark.parametrize("argv", [["--app", "http://127.0.0.1:1", "--prompt", "Hi", "--base", "--model", "x"],
                                  ["--triton", "127.0.0.1:1", "--prompt", "Hi", "--api-key-file", "k"],
                                  ["--prompt", "Hi", "--base"],
                                  ["--triton", "127.0.0.1:1", "--prompt", "Hi", "--max-tokens", "0"],
                                  ["--triton", "127.0.0.1:1", "--prompt", "Hi", "--login-file", __file__],
                                  ["--app", "http://127.0.0.1:1", "--prompt", "Hi", "--login-file", "/no/such/file"]])
def test_wrong_options_end_in_one_line(capsys, argv):
    with pytest.raises(SystemExit) as caught:
        cli.main(argv)
    err = capsys.readouterr().err
    assert caught.value.code == 2 and err.startswith("python -m app compare: error: ") and err.count("\n") == 1


def test_the_deployment_options_make_the_apps_config():
    parse = cli.build_parser().parse_args
    engine = cli.app_config(parse(["--triton", "h:9", "--prompt", "x", "--model-adapter", "xc2-partial"]))
    assert (engine.triton_url, engine.model, engine.deployment, engine.model_adapter) == \
        ("h:9", AppConfig.model, "engine", "xc2-partial")
    llmapi = cli.app_config(parse(["--triton", "h:9", "--prompt", "x", "--deployment", "llmapi"]))
    assert (llmapi.model, llmapi.deployment) == (LLMAPI_MODEL, "llmapi")
    openai = cli.app_config(parse(["--openai", "http://h/v1", "--model", "m", "--prompt", "x"]))
    assert (openai.openai_url, openai.openai_model) == ("http://h/v1", "m")


def test_app_mode_sends_the_columns_to_the_apps_endpoint(monkeypatch, capsys):
    calls = []

    def fake(url, prompt, adapters, max_tokens, images=None, login=None):
        calls.append((url, prompt, adapters, max_tokens, images, login))
        return [{"column": "base model", "text": "Paris.", "state": "done", "figures": "2 tokens"}]

    monkeypatch.setattr(cli, "compare_through_app", fake)
    code = cli.main(["--app", "http://127.0.0.1:7860", "--prompt", "Capital?", "--base", "--adapter", "pirate"])
    assert code == 0 and calls == [("http://127.0.0.1:7860", "Capital?", [None, "pirate"], 96, [], None)]
    assert capsys.readouterr().out == "=== base model ===\nParis.\n--- done · 2 tokens\n"


def test_the_login_files_first_line_goes_to_the_app(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(cli, "compare_through_app", lambda *args: calls.append(args) or [])
    login = tmp_path / "login"
    login.write_text("ann:pa:ss\nbob:other\n")
    assert cli.main(["--app", "http://127.0.0.1:7860", "--prompt", "Hi", "--base", "--login-file", str(login)]) == 0
    assert calls[0][-1] == ("ann", "pa:ss")
