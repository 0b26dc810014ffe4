"""Compare with an image: checked once as the chat checks a message's images, then sent to every column; on an
InternLM-XComposer2 deployment the base column keeps the model's own Partial LoRA on and another adapter is refused in
a sentence unless the deployment combines adapters."""

from __future__ import annotations

import pytest
from PIL import Image

from app.chat.compare import DONE, CompareRun
from app.chat.context import AppConfig, AppContext
from app.core.errors import InvalidImage, InvalidRequest
from app.core.sampling import SamplingParams
from app.deployments import messages as M
from app.deployments.model_lora import MSG_OWN_ADAPTER_ONLY
from app.deployments.prompts import current_turn_images
from app.deployments.triton_engine import TritonEngineDeployment
from tests.xcomposer2_fakes import FakeClient, xc2_registry

PARAMS = SamplingParams(max_tokens=8)


class WordStream:
    def __init__(self, text: str):
        self.text, self.cancelled, self.chunks, self.time_to_first_token = "", False, 0, None
        self._parts = iter(text.split(" "))

    def __iter__(self):
        return self

    def __next__(self):
        part = next(self._parts)
        self.text += part + " "
        self.chunks += 1
        return part

    def cancel(self):
        self.cancelled = True


class RecordingDeployment:
    """Takes any image but 'broken.png'; records every request it opens."""

    kind, url, model = "fake", "fake://", "fake"

    def __init__(self):
        self.requests, self.checked = [], []

    def check_images(self, files, text):
        self.checked.append(list(files))
        if any(str(f).endswith("broken.png") for f in files):
            raise InvalidImage("broken.png is truncated or damaged and cannot be read completely.")

    def open_reply(self, request):
        self.requests.append(request)
        return WordStream(f"reply from {request.adapter or 'base'}")


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "red.png"
    Image.new("RGB", (64, 48), (255, 0, 0)).save(path)
    return str(path)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))  # task ids files inside tmp_path


@pytest.fixture
def xc2_adapters(tmp_path):
    return xc2_registry(tmp_path / "xc2-adapters")


def finish(run: CompareRun):
    return list(run.view_updates())[-1]


def context(tmp_path, deployment) -> AppContext:
    return AppContext(AppConfig(adapters_dir=str(tmp_path / "adapters")), deployment=deployment)


def test_the_image_goes_to_every_column_after_one_check(tmp_path, picture):
    deployment = RecordingDeployment()
    views = finish(CompareRun(context(tmp_path, deployment), "What is it?", [None, "pirate"], PARAMS, images=[picture]))
    assert deployment.checked == [[picture]]
    assert [r.adapter for r in deployment.requests] == [None, "pirate"]
    for request in deployment.requests:
        assert current_turn_images(list(request.messages)) == [picture]
        assert request.messages[-1] == {"role": "user", "content": "What is it?"}
    assert [v.state for v in views] == [DONE, DONE] and views[1].text.startswith("reply from pirate")


def test_without_an_image_the_columns_get_text_alone(tmp_path):
    deployment = RecordingDeployment()
    finish(CompareRun(context(tmp_path, deployment), "Hi", [None], PARAMS))
    assert deployment.checked == [] and list(deployment.requests[0].messages) == [{"role": "user", "content": "Hi"}]


def test_a_bad_image_is_refused_before_any_column_opens(tmp_path):
    deployment = RecordingDeployment()
    with pytest.raises(InvalidImage, match="broken.png"):
        CompareRun(context(tmp_path, deployment), "What is it?", [None, "pirate"], PARAMS, images=["/x/broken.png"])
    assert deployment.requests == []


def xcomposer2(adapters, **parameters) -> tuple[TritonEngineDeployment, FakeClient]:
    client = FakeClient(**parameters)
    return TritonEngineDeployment(client, adapters, template="internlm2", model_adapter="xc2-partial"), client


def test_xcomposer2_compares_on_a_picture_with_its_own_adapter_on(tmp_path, xc2_adapters, picture):
    deployment, client = xcomposer2(xc2_adapters)
    views = finish(CompareRun(context(tmp_path, deployment), "What is in it?", [None], PARAMS, images=[picture]))
    (prompt, extra), = client.sent
    assert prompt.count("<ImageHere>") == 1 and extra["image_input"].shape == (1, 3, 490, 490)
    assert extra["lora_task_id"] == xc2_adapters.task_id("xc2-partial")
    assert views[0].text.startswith("In the picture")


def test_xcomposer2_refuses_in_a_sentence_what_it_cannot_compare(tmp_path, xc2_adapters, picture):
    deployment, client = xcomposer2(xc2_adapters)
    ctx = context(tmp_path, deployment)
    with pytest.raises(InvalidRequest) as caught:
        CompareRun(ctx, "What is in it?", [None], PARAMS)  # what Compare did before it took an image
    assert str(caught.value) == M.MSG_IMAGE_REQUIRED.format(family="InternLM-XComposer2")
    with pytest.raises(InvalidRequest) as caught:
        CompareRun(ctx, "What is in it?", [None, "pirate"], PARAMS, images=[picture])
    assert str(caught.value) == MSG_OWN_ADAPTER_ONLY.format(family="InternLM-XComposer2", own="'xc2-partial'",
                                                            adapter="pirate")
    assert not deployment.combines_adapters()


def test_xcomposer2_that_combines_runs_another_adapter_beside_its_own(tmp_path, xc2_adapters, picture):
    deployment, client = xcomposer2(xc2_adapters, combines_adapters="true")
    assert deployment.combines_adapters()
    finish(CompareRun(context(tmp_path, deployment), "What is in it?", [None, "pirate"], PARAMS, images=[picture]))
    tasks = sorted(extra["lora_task_id"] for _, extra in client.sent)
    assert tasks == sorted([xc2_adapters.task_id("xc2-partial"), xc2_adapters.task_id("pirate")])
    assert all(extra["image_input"].shape == (1, 3, 490, 490) for _, extra in client.sent)
