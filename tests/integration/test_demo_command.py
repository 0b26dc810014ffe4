"""`python -m app --demo [--deployment llmapi | --twin xcomposer2]` as a person runs it: it serves the page, answers (the CPU
demo: "Paris", adapters per message, a sign read in an image; the XComposer2 twin: image questions only, through the
app's /v1 API), and Ctrl-C stops the UI and Triton."""

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.pictures import data_url, shape_image
from tests.proc_helpers import children_of
from tests.servers import DEMO_KINDS, free_ports

pytestmark = pytest.mark.usefixtures("demo_command_memory")  # the demos these tests start


def ask(ui: int, content, model: str | None = None) -> str:
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": 30, "temperature": 0,
            **({"model": model} if model else {})}
    request = urllib.request.Request(f"http://127.0.0.1:{ui}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=300).read())["choices"][0]["message"]["content"]


def sign() -> str:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (900, 260), "white")
    ImageDraw.Draw(image).text((30, 90), "The secret code is 4711", fill="black", font=ImageFont.load_default(size=64))
    return data_url(image)


def answers_text_adapters_and_a_sign(ui: int) -> None:
    """The CPU demo's kinds: "Paris", an adapter per message, a sign read in an image."""
    assert "Paris" in ask(ui, "What is the capital of France?")
    assert ask(ui, "What is the capital of France?", "pirate").startswith("Arr")
    assert "capitale" in ask(ui, "What is the capital of France?", "french")
    assert "4711" in ask(ui, [{"type": "image_url", "image_url": {"url": sign()}},
                              {"type": "text", "text": "What is the secret code?"}])


def answers_about_an_image_only(ui: int) -> None:
    """The XComposer2 twin: its Partial LoRA on every request (answers open as it was trained to), a text-only
    message refused in a sentence."""
    reply = ask(ui, [{"type": "image_url", "image_url": {"url": data_url(shape_image())}},
                     {"type": "text", "text": "What is in this picture?"}])
    assert reply.startswith("In the picture") and "red" in reply.lower(), reply
    with pytest.raises(urllib.error.HTTPError) as refused:
        ask(ui, "What is the capital of France?")
    assert refused.value.code == 400 and "attach an image" in refused.value.read().decode()


CHECKS = {"engine": answers_text_adapters_and_a_sign, "llmapi": answers_text_adapters_and_a_sign,
          "xcomposer2": answers_about_an_image_only}  # --twin xcomposer2: the InternLM-XComposer2 twin


# the command line of each: a kind of the CPU demo is --deployment, the twin is --twin
DEMO_FLAGS = {**{kind: ("--deployment", kind) for kind in DEMO_KINDS}, "xcomposer2": ("--twin", "xcomposer2")}


@pytest.mark.parametrize("kind", [*DEMO_KINDS, "xcomposer2"])
def test_demo_serves_and_ctrl_c_stops_everything(kind):
    ui, http, grpc, metrics = free_ports(4)
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--demo", *DEMO_FLAGS[kind], "--port", str(ui), "--triton-http-port",
         str(http), "--triton-grpc-port", str(grpc), "--triton-metrics-port", str(metrics)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline, page = time.monotonic() + 480, None  # a limit for a failed start only
        while time.monotonic() < deadline and page is None:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{ui}/", timeout=2).read().decode()
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(0.5)
        assert page and "gradio" in page.lower()
        CHECKS[kind](ui)
        triton_pids = children_of(proc.pid)
        assert triton_pids, "tritonserver should be a child of the app"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert "Stopping tritonserver" in out and "Traceback" not in out
        for pid in triton_pids:
            assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{http}/v2/health/ready", timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
