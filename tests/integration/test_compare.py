"""Compare without the browser, against the real CPU demo: the Gradio API's `compare` endpoint with gradio_client
(streamed columns, the tab's sentences, a caller that leaves) and `python -m app compare` as a subprocess, through
the app (--app) and straight to the session's tritonserver (--triton)."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest
from gradio_client import Client

PROMPT = "What is the capital of France?"


def run_compare(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["nice", "-n", "19", sys.executable, "-m", "app", "compare", *args], capture_output=True,
                          text=True, timeout=300)


def test_compare_streams_the_base_model_beside_an_adapter(app_url):
    job = Client(app_url, verbose=False).submit(prompt=PROMPT, adapters=["", "pirate"], max_tokens=24,
                                                api_name="/compare")
    updates = list(job)
    assert len(updates) >= 3
    last = updates[-1]
    assert [entry["column"] for entry in last] == ["base model", "pirate"]
    assert [entry["state"] for entry in last] == ["done", "done"], last
    assert "Paris" in last[0]["text"] and last[1]["text"].strip()
    assert all("tokens" in entry["figures"] for entry in last)
    base_texts = [update[0]["text"] for update in updates]
    assert all(later.startswith(earlier.rstrip()) for earlier, later in zip(base_texts, base_texts[1:], strict=False))


@pytest.mark.parametrize("kwargs, sentence", [
    ({"prompt": ""}, "Type a message first."),
    ({"prompt": "hi", "adapters": ["", "pirate", "french", "pirate2", "pirate3"]},
     "Compare takes the base model and at most 3 adapters."),
    ({"prompt": "hi", "adapters": ["nobody"]}, "There is no adapter named 'nobody'."),
])
def test_bad_input_gets_the_tabs_sentence(app_url, kwargs, sentence):
    with pytest.raises(Exception, match=sentence):
        Client(app_url, verbose=False).predict(**kwargs, api_name="/compare")


def test_a_caller_that_leaves_stops_every_column(app_served):
    ctx, url = app_served
    api = url + "gradio_api/call/compare"
    with httpx.Client(timeout=30) as client:
        info = client.get(url + "gradio_api/info").json()["named_endpoints"]["/compare"]["parameters"]
        args = {"prompt": "Tell me a very long story about a dragon.", "adapters": ["", "pirate"], "max_tokens": 2000}
        data = [args.get(p["parameter_name"], p["parameter_default"]) for p in info]
        event = client.post(api, json={"data": data}).json()["event_id"]
        with client.stream("GET", f"{api}/{event}") as stream:
            seen = 0
            for line in stream.iter_lines():
                seen += line.startswith("data:")
                if seen >= 3:
                    break  # leave mid-stream: the connection closes here
    deadline = time.monotonic() + 15
    while ctx.live.read().in_progress and time.monotonic() < deadline:
        time.sleep(1.1)  # readings are at most one a second
    assert ctx.live.read().in_progress == 0, "the columns kept generating for a caller that left"


def test_the_command_through_the_app_prints_each_column(app_url):
    done = run_compare("--app", app_url, "--prompt", PROMPT, "--base", "--adapter", "pirate", "--max-tokens", "24")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("=== base model ===\n") and "\n\n=== pirate ===\n" in done.stdout
    assert "Paris" in done.stdout.split("=== pirate ===")[0]
    assert done.stdout.count("--- done · ") == 2


def test_the_command_through_the_app_sends_every_image(app_url, tmp_path):
    """Two --image options: the code is on the second picture, so a column that reads it got both."""
    from PIL import Image, ImageDraw, ImageFont

    circle, code = Image.new("RGB", (336, 336), "white"), Image.new("RGB", (900, 260), "white")
    ImageDraw.Draw(circle).ellipse((68, 68, 268, 268), fill="red")
    ImageDraw.Draw(code).text((30, 90), "The secret code is 4711", fill="black", font=ImageFont.load_default(size=64))
    circle.save(tmp_path / "circle.png")
    code.save(tmp_path / "code.png")
    done = run_compare("--app", app_url, "--prompt", "What is the secret code?", "--base", "--max-tokens", "32",
                       "--image", str(tmp_path / "circle.png"), "--image", str(tmp_path / "code.png"))
    assert done.returncode == 0, done.stderr
    assert "4711" in done.stdout and done.stdout.count("--- done · ") == 1


def test_the_command_straight_to_triton_and_its_refusals(triton):
    done = run_compare("--triton", triton.grpc_url, "--prompt", PROMPT, "--base", "--max-tokens", "24", "--json")
    assert done.returncode == 0, done.stderr
    assert '"column": "base model"' in done.stdout and "Paris" in done.stdout
    refused = run_compare("--triton", triton.grpc_url, "--prompt", PROMPT, "--adapter", "nobody")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("error: There is no adapter named 'nobody'.") and refused.stderr.count("\n") == 1


def test_the_command_refuses_through_the_app_with_the_apps_sentence(app_url):
    refused = run_compare("--app", app_url, "--prompt", "  ", "--base")
    assert refused.returncode == 2 and refused.stderr == "error: Type a message first.\n"


@pytest.fixture
def app_with_login(triton, tmp_path):
    """The app against the session's tritonserver, asking for a login as `--auth-file` makes it."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch
    from tests.servers import free_port

    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, auth=(("ann", "s3cret"),)))
    blocks = launch(ctx, prevent_thread_lock=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        blocks.close()


def test_the_command_logs_in_to_an_app_that_asks_for_it(app_with_login, tmp_path):
    right, wrong = tmp_path / "login", tmp_path / "wrong"
    right.write_text("ann:s3cret\n")
    wrong.write_text("ann:guess\n")
    asked = ("--app", app_with_login, "--prompt", PROMPT, "--base", "--max-tokens", "16")
    without = run_compare(*asked)
    assert without.returncode == 2 and without.stderr == (
        f"error: The app at {app_with_login} asks for a login; give a file with its USER:PASSWORD line "
        "(--login-file FILE).\n")
    refused = run_compare(*asked, "--login-file", str(wrong))
    assert refused.returncode == 2
    assert refused.stderr == f"error: The app at {app_with_login} refused the login of user 'ann' from --login-file.\n"
    done = run_compare(*asked, "--login-file", str(right))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("=== base model ===\n") and "Paris" in done.stdout


def test_columns_cut_at_max_tokens_say_so_in_the_api_and_the_command(app_url):
    story = "Tell me a long story about a dragon and a knight."
    last = Client(app_url, verbose=False).predict(prompt=story, adapters=["", "pirate"], max_tokens=3,
                                                  api_name="/compare")
    assert [(entry["state"], entry["finish_reason"]) for entry in last] == [("done", "length")] * 2, last
    done = run_compare("--app", app_url, "--prompt", story, "--base", "--max-tokens", "3")
    assert done.returncode == 0, done.stderr
    assert "\n--- done · cut at the 3-token limit · 3 tokens · " in done.stdout, done.stdout


def test_the_api_continues_a_column_cut_at_max_tokens(app_url):
    client = Client(app_url, verbose=False)
    (cut,) = client.predict(prompt=PROMPT, adapters=[""], max_tokens=6, api_name="/compare")
    assert cut["finish_reason"] == "length", cut
    (whole,) = client.predict(prompt=PROMPT, adapters=[""], max_tokens=120, continues=[cut["text"]],
                              api_name="/compare")
    assert (whole["state"], whole["finish_reason"]) == ("done", "stop"), whole
    assert whole["text"].startswith(cut["text"]) and len(whole["text"]) > len(cut["text"]) and "Paris" in whole["text"]
