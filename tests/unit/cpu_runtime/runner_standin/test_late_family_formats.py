"""The late-only families' formats (Qwen2-VL, Mllama, LLaVA-OneVision) as the runner stand-in reads them from a twin's
visual folder: each family's prompt, image size and token count from its family file, said in the figures; mllama
answers a question without a picture (its runner skips cross-attention), the others need one; a video is read as
the runner's video_num_frames frames."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from PIL import Image

from cpu_runtime.runner_standin.formats import read_format
from cpu_runtime.runner_standin.runner import StandInRunner
from setup.catalog.family_data import family_files

MODEL_TYPES = {"qwen2-vl": "qwen2_vl", "mllama": "mllama", "llava-onevision": "llava_onevision"}


def _vision(tmp_path, family):
    folder = tmp_path / family / "vision"
    folder.mkdir(parents=True)
    (tmp_path / family / "llm").mkdir()
    config = {"builder_config": {"model_type": MODEL_TYPES[family]},
              "runner_format": {"family": family, **family_files()[family]["runner_format"]}}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


class _Recording(StandInRunner):
    """The stand-in's own logic with the model folder's wiring replaced by records of what reaches it."""

    def load_llm(self, folder):
        self.seen_ids = []
        tokenizer = SimpleNamespace(encode=lambda text, add_special_tokens=False: [f"t:{text}"], eos_token_id=0,
                                    decode=lambda ids, skip_special_tokens=False: " ".join(ids))
        seen = self.seen_ids

        class LLM:
            vocab_size, max_seq_len = 1000, 4096

            def tokens(self, ids, max_new_tokens, end_id, sampling):
                seen.append(list(ids))
                yield "reply"

        return LLM(), tokenizer

    def load_vision(self, folder):
        return lambda images: [f"rows of {len(images)} picture(s) {images[0].size}"]


def _runner(tmp_path, family, **args):
    _vision(tmp_path, family)
    values = {"engine_dir": str(tmp_path / family), "batch_size": 1, "temperature": 1.0, "top_k": 1, "top_p": 0.0,
              "repetition_penalty": 1.0, "video_num_frames": None, **args}
    return _Recording(SimpleNamespace(**values))


@pytest.mark.parametrize(("family", "shown"), [
    ("qwen2-vl", "<|im_start|>user\\n<|vision_start|><|image_pad|><|vision_end|>{question}<|im_end|>"),
    ("mllama", "<|start_header_id|>user<|end_header_id|>\\n\\n<|image|>{question}<|eot_id|>"),
    ("llava-onevision", "'<|im_start|>user <image>\\n{question}<|im_end|><|im_start|>assistant\\n'"),
])
def test_each_family_says_its_own_format_in_the_figures(tmp_path, family, shown):
    form = read_format(_vision(tmp_path, family))
    raw = family_files()[family]
    assert form.model_type == MODEL_TYPES[family] and form.family == family
    text = form.describe(form.visual_tokens(*form.image_size))
    assert text.startswith(f"{family} ({MODEL_TYPES[family]}): ") and shown in text
    height, width = form.image_size
    assert f"{width}x{height} px" in text
    if family == "qwen2-vl":  # the image view's numbers: 504 x 504 stretched, 324 visual tokens
        assert form.image_size == tuple(raw["preprocess"]["size"]) and f"{raw['visual_tokens_per_image']} visual" \
            in text
    if family == "mllama":  # cross-attention: the build's encoder length, not prompt rows
        assert f"{raw['build']['visual']['tokens_per_image']} cross-attention positions" in text
    if family == "llava-onevision":
        assert form.image_size == tuple(raw["build"]["visual"]["image_size"]) and "729 visual tokens" in text


def test_the_picture_is_put_where_the_family_puts_it_at_the_size_it_comes(tmp_path):
    """The release's qwen2_vl setup_inputs does not resize (the runner model sizes the picture to 504x504 first, as
    1.x's load_test_data does): a 504x504 picture is 324 visual tokens, a 640x480 one 391."""
    runner = _runner(tmp_path, "qwen2-vl")
    _, [[answer]] = runner.run("What is it?", Image.new("RGB", (504, 504)), None, 8)
    assert answer == "reply" and runner.last_visual_tokens == 324
    [ids] = runner.seen_ids
    system = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
    assert ids == [f"t:{system}", "rows of 1 picture(s) (504, 504)", "t:What is it?"]  # up to the answer cue
    runner.run("What is it?", Image.new("RGB", (640, 480)), None, 8)
    assert runner.last_visual_tokens == 17 * 23 and "(640, 480)" in runner.seen_ids[-1][1]


def test_mllama_answers_a_question_without_a_picture_and_the_others_refuse(tmp_path):
    runner = _runner(tmp_path, "mllama")
    _, [[answer]] = runner.run("Hello?", None, None, 8)
    [ids] = runner.seen_ids
    assert answer == "reply" and runner.last_visual_tokens == 0 and not any("rows" in str(i) for i in ids)
    assert ids[-1] == "t:Hello?"
    for family in ("qwen2-vl", "llava-onevision"):
        with pytest.raises(ValueError, match=f"The {family} twin needs a picture"):
            _runner(tmp_path, family).run("Hello?", None, None, 8)


def test_a_video_is_read_as_the_runners_video_num_frames(tmp_path):
    import cv2
    import numpy as np

    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10, (32, 24))
    for shade in range(20):
        writer.write(np.full((24, 32, 3), shade * 10, dtype=np.uint8))
    writer.release()
    # the release reads args.video_path, not load_test_data's parameter
    runner = _runner(tmp_path, "llava-onevision", video_num_frames=8, video_path=str(path))
    assert len(runner.load_test_data(None, None)) == 8
    assert _runner(tmp_path / "c", "llava-onevision", video_num_frames=8).load_test_data(None, str(path)) is None
    frames = _runner(tmp_path / "b", "llava-onevision", video_num_frames=4, video_path=str(path)).load_test_data()
    assert len(frames) == 4 and frames[0].size == (32, 24)
    # setup_inputs picks video or image mode from args.video_path, as the release does
    _, [[answer]] = runner.run("Why?", frames, None, 8)
    assert answer == "reply"
    with pytest.raises(ValueError, match="video mode .* got one picture"):
        runner.run("Why?", Image.new("RGB", (32, 24)), None, 8)
    runner.args.video_path = None
    with pytest.raises(ValueError, match="image mode .* got frames"):
        runner.run("Why?", frames, None, 8)
