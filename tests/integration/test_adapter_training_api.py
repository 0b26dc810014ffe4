"""The Gradio API's `train_adapter` and `cancel_training` over HTTP (gradio_client) against the real CPU demo:
without the launch token nothing runs or is written; with it a 3-pair training streams its progress and the
adapter is then listed by `list_adapters` and GET /v1/models, and `check_adapter` / `remove_adapter` take it in the
same run; refusals come back as sentences."""

from __future__ import annotations

import time

import httpx
import pytest

from setup.lora import messages as msg
from tests.lora_training_helpers import PIRATE_PAIRS, app_on_own_adapters

TRAIN_TIMEOUT = 300.0  # 3 pairs x 2 steps on one core take well under a minute idle; a loaded machine more
TARGETS = ["q_proj", "k_proj", "v_proj"]


@pytest.fixture
def served(tmp_path, triton, cpu_model_dir):
    """The whole app against the session's tritonserver, on an adapters folder of its own (a copy of pirate)."""
    with app_on_own_adapters(tmp_path, triton) as served_app:
        yield served_app


def client(url: str, token: str | None = None):
    from gradio_client import Client

    return Client(url, verbose=False, headers={"X-Launch-Token": token} if token else None)


def arguments(name: str, steps: int = 2, rate: float = 0.01, pairs: int = 3) -> tuple:
    """train_adapter's inputs: name, base (the demo's model), no upload, the pairs table, rank, steps, learning
    rate, max tokens, target modules."""
    table = {"headers": ["prompt", "response"], "data": [list(p) for p in PIRATE_PAIRS[:pairs]], "metadata": None}
    return name, "", None, table, 8, steps, rate, 256, TARGETS


def entries(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_training_needs_the_launch_token(served):
    ctx, url, folder = served
    stranger = client(url)
    with pytest.raises(Exception, match="launch token"):
        stranger.predict(*arguments("sneaky"), api_name="/train_adapter")
    with pytest.raises(Exception, match="launch token"):
        stranger.predict(api_name="/cancel_training")
    assert entries(folder) == ["pirate"] and ctx.training.current() is None


def test_bad_settings_are_refused_with_a_sentence(served):
    ctx, url, folder = served
    owner = client(url, ctx.access.token)
    status, _plot = owner.predict(*arguments("too-fast", rate=1.0), api_name="/train_adapter")
    assert "The learning rate must be between 1e-06 and 0.1, got 1.0." in status and "Traceback" not in status
    status, _plot = owner.predict(*arguments("too-long", steps=301), api_name="/train_adapter")
    assert "Steps must be a whole number from 1 to 300, got 301." in status and "Traceback" not in status
    status, _plot = owner.predict(*arguments("../escape"), api_name="/train_adapter")
    assert "⚠️" in status and "Traceback" not in status
    assert entries(folder) == ["pirate"] and ctx.training.current() is None


def test_training_streams_progress_and_the_adapter_is_listed(served):
    ctx, url, folder = served
    owner = client(url, ctx.access.token)
    started = time.monotonic()
    job = owner.submit(*arguments("api-style"), api_name="/train_adapter")
    job.result(timeout=TRAIN_TIMEOUT)
    seconds = time.monotonic() - started
    statuses = [status for status, _plot in job.outputs()]
    final = statuses[-1]
    print(f"\n3 pairs, 2 steps over the API: {seconds:.0f} s; {len(statuses)} updates; {final}")
    assert any("Starting" in s or "Step 1 of 2" in s for s in statuses[:-1]), statuses  # progress streamed
    assert "Trained api-style" in final and "over 2 steps" in final and "Check:" in final, final
    assert 'value="2" max="2"' in final
    assert entries(folder) == ["api-style", "pirate"]  # no hidden training folder or lock file left
    assert (folder / "api-style" / "adapter_model.safetensors").is_file()
    listed = owner.predict(api_name="/list_adapters")
    assert "api-style" in str(listed), listed
    models = httpx.get(url + "v1/models", timeout=30).json()
    assert "api-style" in [m["id"] for m in models["data"]], models
    checked = owner.predict("api-style", api_name="/check_adapter")  # no restart, no Refresh: the app knows it
    assert "Adapter 'api-style'" in checked and "no adapter named" not in checked, checked
    _table, removed, _choices = owner.predict("api-style", api_name="/remove_adapter")
    assert removed == "Removed **api-style**.", removed
    assert entries(folder) == ["pirate"]


def test_a_second_start_is_refused_and_cancel_writes_nothing(served):
    ctx, url, folder = served
    owner = client(url, ctx.access.token)
    job = owner.submit(*arguments("cancelled", steps=100), api_name="/train_adapter")
    deadline = time.monotonic() + TRAIN_TIMEOUT
    while ctx.training.current() is None or not ctx.training.current().losses:
        assert time.monotonic() < deadline and not job.done(), job.outputs()
        time.sleep(0.5)  # training, past its first step
    status, _plot = owner.predict(*arguments("second"), api_name="/train_adapter")
    assert msg.MSG_BUSY in status
    assert "Cancelling" in owner.predict(api_name="/cancel_training")
    job.result(timeout=TRAIN_TIMEOUT)
    final = job.outputs()[-1][0]
    assert "Training cancelled at step" in final and "nothing was written" in final, final
    assert entries(folder) == ["pirate"]
    assert "No training is running" in owner.predict(api_name="/cancel_training")
