"""The runner model (model_repo_templates/multimodal_runner) against each release's MultimodalModelRunner, played by
the behavioural stand-ins in release_runners.py (written from the sources at release commits, with citations).

Issue #47, runner topology: which test covers which item
  1  a 0.12 runner is served (test_an_image_question_on_every_release)
  2  video-neva videos on 0.16 go through load_test_image (test_a_video_on_every_release_that_takes_one)
  3  the video file lives until run() returns; args.video_path is set for a video and reset for the next image
     (test_a_video_on_every_release_that_takes_one, test_an_image_after_a_video_is_read_in_image_mode)
  4  every sampling field set on every request (test_sampling_does_not_leak_into_the_next_request)
  5  Qwen2-VL pictures sized as the release does (test_a_large_photo_reaches_qwen2_vl_at_504x504)
  9  qwen2_vl, mllama and llava_onevision accepted on 0.16 (test_the_016_families_are_accepted_on_016)
  10 the runner constructed and called on one thread (test_the_runner_is_constructed_and_called_on_one_thread)
"""

from __future__ import annotations

import io
import json
import threading
import time

import numpy as np
import pytest
from PIL import Image

from setup.catalog.builds import get_family
from tests.unit.templates.conftest import _Request, start_model
from tests.unit.templates.release_runners import (
    DEMO_PICTURE,
    RELEASES,
    Frames,
    Release012,
    Release016,
    Release1X,
    with_type,
)

CLAIMED = ("0.12", "0.13", "0.16", "1.x")
LATE_FAMILIES = {"qwen2-vl": "qwen2_vl", "mllama": "mllama", "llava-onevision": "llava_onevision"}


def _png(size=(32, 24)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def engines(tmp_path):
    """Engine folders whose visual config.json records a model type: engines(model_type) -> the folder."""
    def make(model_type: str, **builder):
        for name in ("visual", "llm", "hf"):
            (tmp_path / name).mkdir(exist_ok=True)
            (tmp_path / name / "config.json").write_text("{}")
        config = {"builder_config": {"model_type": model_type, "precision": "float16", **builder}}
        (tmp_path / "visual" / "config.json").write_text(json.dumps(config))
        return tmp_path
    return make


def _inputs(**inputs) -> dict:
    return {k: np.array(v if isinstance(v, list) else [v], dtype=object if isinstance(v, str | bytes) or (
        isinstance(v, list) and isinstance(v[0], str | bytes)) else None) for k, v in inputs.items()}


def ask_each(model, *requests: dict) -> list:
    """The final response to each request (sent in turn), then the model is finalized."""
    answers = []
    for inputs in requests:
        request = _Request(_inputs(**inputs))
        model.execute([request])
        deadline = time.monotonic() + 30
        while not request.sender.sent and time.monotonic() < deadline:  # the worker answers it
            time.sleep(0.005)
        [(response, flags)] = request.sender.sent
        assert flags == 1
        answers.append(response)
    model.finalize()
    return answers


def _start(folders, cls, **parameters):
    return start_model(folders, cls, **parameters)


# ---- item 1: a 0.12 runner is served (and 0.13, 0.16, 1.x) ---------------------------------------------------
@pytest.mark.parametrize("release", CLAIMED)
def test_an_image_question_on_every_release(engines, release):
    cls = with_type(RELEASES[release], "llava")
    model = _start(engines("llava"), cls)
    assert model.era.name == release
    [response] = ask_each(model, {"text_input": "What is this?", "image_bytes": [_png()], "max_tokens": np.int32(20)})
    assert response.error is None, response.error
    assert response.tensors["text_output"].decode() == "answer to What is this? about (32, 24)"
    assert response.tensors["runner_era"].decode() == release
    [(_, seen, tokens, sampling, _)] = cls.last.calls
    assert seen["text"] == "What is this?" and tokens == 20 and sampling["top_k"] == 1


def test_011_has_no_runner_to_import_and_the_refusal_says_so(engines):
    """R011 (ertkonuk@05316d33, 0.11.0): tensorrt_llm/runtime/__init__.py has no MultimodalModelRunner."""
    with pytest.raises(ValueError, match=r"Cannot import the runner class .*0\.11 keeps MultimodalModelRunner inside "
                                         r"examples/multimodal/run\.py.*0\.12 or later"):
        _start(engines("llava"), Release012, runner_class="tensorrt_llm_not_installed.runtime:MultimodalModelRunner")


def test_a_runner_of_an_unread_release_is_refused_by_its_shapes(engines):
    """0.16's generate and run with 1.x's load_test_data: no release read has that, so it is not guessed at."""
    class Unread(Release016):
        def load_test_data(self, image_path, video_path): ...

    del_loader = type("Unread", (Unread,), {"load_test_image": None})
    with pytest.raises(ValueError, match=r"matches no recorded release .*load_test_data\(image_path, video_path\)"):
        _start(engines("llava"), del_loader)


# ---- items 2 and 3: videos ---------------------------------------------------------------------------------
VIDEO_CASES = [(r, "video-neva") for r in CLAIMED] + [("0.16", "llava_onevision"), ("1.x", "llava_onevision")]


@pytest.mark.parametrize(("release", "model_type"), VIDEO_CASES)
def test_a_video_on_every_release_that_takes_one(engines, release, model_type):
    """video-neva: the loader gives the path and run() decodes it (the file must still be there); llava_onevision:
    the loader reads args.video_path (the model must set it) and setup_inputs picks video mode from it."""
    cls = with_type(RELEASES[release], model_type)
    model = _start(engines(model_type, num_frames=8), cls, takes_video="true")
    [response] = ask_each(model, {"text_input": "What happens?", "video_bytes": b"VIDEO BYTES"})
    assert response.error is None, response.error
    generate = [c for c in cls.last.calls if c[0] == "generate"]
    [(_, seen, _, _, _)] = generate
    assert seen["picture"] == Frames((b"VIDEO BYTES",)) and seen["picture"] != DEMO_PICTURE
    assert cls.last.args.video_path is None  # reset after the reply


@pytest.mark.parametrize("release", CLAIMED)
def test_a_picture_for_video_neva_is_refused_in_a_sentence(engines, release):
    """Every release's video-neva decodes a video file in run(); a picture would end in AttributeError."""
    cls = with_type(RELEASES[release], "video-neva")
    [response] = ask_each(_start(engines("video-neva"), cls, takes_video="true"),
                          {"text_input": "What is it?", "image_bytes": [_png()]})
    assert response.error == "video-neva's runner reads a video, not a picture (its setup_inputs decodes a video " \
                             "file); send video_bytes." and cls.last.calls == []


@pytest.mark.parametrize("release", ["0.16", "1.x"])
def test_an_image_after_a_video_is_read_in_image_mode(engines, release):
    cls = with_type(RELEASES[release], "llava_onevision")
    model = _start(engines("llava_onevision"), cls, takes_video="true")
    video, image = ask_each(model, {"text_input": "Why funny?", "video_bytes": b"V"},
                            {"text_input": "Which city?", "image_bytes": [_png()]})
    assert video.error is None and image.error is None, (video.error, image.error)
    modes = [c[1]["mode"] for c in cls.last.calls if c[0] == "generate"]
    assert modes == ["video", "image"]


# ---- item 4: sampling -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("release", CLAIMED)
def test_sampling_does_not_leak_into_the_next_request(engines, release):
    cls = with_type(RELEASES[release], "llava")
    model = _start(engines("llava"), cls, runner_settings="top_p=0.5")  # the deployment's own default for top_p
    first, second = ask_each(
        model, {"text_input": "A", "image_bytes": [_png()], "top_k": np.int32(5), "temperature": np.float32(0.25),
                "top_p": np.float32(0.9), "repetition_penalty": np.float32(1.5)},
        {"text_input": "B", "image_bytes": [_png()]})
    assert first.error is None and second.error is None
    sampled = [c[3] for c in cls.last.calls if c[0] == "generate"]
    assert sampled[0] == {"top_k": 5, "top_p": pytest.approx(0.9), "temperature": 0.25, "repetition_penalty": 1.5}
    assert sampled[1] == {"top_k": 1, "top_p": 0.5, "temperature": 1.0, "repetition_penalty": 1.0}


def test_a_lora_task_does_not_leak_into_the_next_request_on_1x(engines):
    cls = with_type(Release1X, "llava", LORA_UIDS=("0", "1"))
    model = _start(engines("llava"), cls)
    first, second = ask_each(model, {"text_input": "A", "image_bytes": [_png()], "lora_task_id": np.uint64(1)},
                             {"text_input": "B", "image_bytes": [_png()]})
    assert first.error is None and second.error is None
    assert [c[4] for c in cls.last.calls if c[0] == "generate"] == [["1"], None]


def test_the_stand_ins_play_enc_dec_and_unknown_lora_uids_as_the_releases_do(engines):
    """For items 6-8 (another helper): an enc-dec LLM takes no sampling; an unknown uid is a KeyError on 1.x."""
    cls = with_type(Release016, "blip2-t5")
    [response] = ask_each(_start(engines("blip2-t5"), cls), {"text_input": "A", "image_bytes": [_png()],
                                                            "top_k": np.int32(5)})
    assert response.error is None and cls.last.calls[-1][3] is None
    cls = with_type(Release1X, "llava", LORA_UIDS=("0",))
    [response] = ask_each(_start(engines("llava"), cls), {"text_input": "A", "image_bytes": [_png()],
                                                         "lora_task_id": np.uint64(7)})
    assert response.error == "The runner failed: '7'"


# ---- item 5: Qwen2-VL's picture size ---------------------------------------------------------------------------
@pytest.mark.parametrize("release", ["0.16", "1.x"])
def test_a_large_photo_reaches_qwen2_vl_at_504x504(engines, release):
    """R1X load_test_data resizes each picture to 504x504 (the size the family's engine is built for: 324 visual
    tokens); handed over at full size, a 3000x2000 photo is thousands of tokens, past max_input_len."""
    cls = with_type(RELEASES[release], "qwen2_vl")
    model = _start(engines("qwen2_vl"), cls, runner_eras="0.16,1.x", runner_required="session=cpp_llm_only")
    photo = Image.new("RGB", (3000, 2000), (10, 120, 200))
    assert cls.qwen_tokens(photo) > 2048
    [response] = ask_each(model, {"text_input": "Describe it.", "image_bytes": [_png((3000, 2000))]})
    assert response.error is None, response.error
    [(_, seen, _, _, _)] = [c for c in cls.last.calls if c[0] == "generate"]
    assert seen["visual_tokens"] == 324
    picture = seen["picture"][0] if isinstance(seen["picture"], list) else seen["picture"]
    assert picture.size == (504, 504)


# ---- item 9: the 0.16 families -----------------------------------------------------------------------------
@pytest.mark.parametrize("family", sorted(LATE_FAMILIES))
def test_the_016_families_are_accepted_on_016(engines, family):
    """R016 handles qwen2_vl, mllama and llava_onevision (setup_inputs R016:1693, 1888, 1917): the family file's own
    parameters must let a 0.16 runner serve them."""
    model_type = LATE_FAMILIES[family]
    parameters = {k: ("true" if v is True else "false" if v is False else str(v))
                  for k, v in get_family(family).triton["parameters"].items()}
    cls = with_type(Release016, model_type)
    model = _start(engines(model_type), cls, multimodal_family=family, **parameters)
    assert model.era.name == "0.16"
    [response] = ask_each(model, {"text_input": "What is this?", "image_bytes": [_png()]})
    assert response.error is None, response.error
    assert get_family(family).triton["since"] == "0.16"


def test_a_family_0_12_does_not_handle_is_refused_before_a_request(engines):
    with pytest.raises(ValueError, match="is the 0.13 runner, but qwen2-vl is served only by the 0.16 or 1.x runner"):
        _start(engines("qwen2_vl"), with_type(RELEASES["0.13"], "qwen2_vl"), runner_eras="0.16,1.x",
               multimodal_family="qwen2-vl")


# ---- item 10: one thread -----------------------------------------------------------------------------------
@pytest.mark.parametrize("release", CLAIMED)
def test_the_runner_is_constructed_and_called_on_one_thread(engines, release):
    cls = with_type(RELEASES[release], "llava")
    model = _start(engines("llava"), cls)
    constructed = cls.last.stream_thread
    assert constructed == model.worker.ident and constructed != threading.get_ident()
    [response] = ask_each(model, {"text_input": "Hi", "image_bytes": [_png()]})
    assert response.error is None, response.error  # the stand-in refuses a call from another thread


def test_a_runner_that_fails_to_construct_fails_the_start(engines):
    class Broken(Release012):
        def __init__(self, args):
            raise RuntimeError("no GPU")

    with pytest.raises(RuntimeError, match="no GPU"):
        _start(engines("llava"), Broken)
