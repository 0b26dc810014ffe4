"""The multimodal template set: writer checks, config drift against the text templates, fake-id
placement in preprocessing, the BLS image routing, and the CPU encoder's folder (its library:
tests/unit/cpu_runtime/encoder/)."""

import json
import re
import types
from pathlib import Path

import numpy as np
import pytest

from setup.catalog.families import get_family
from setup.paths import TEMPLATES_DIR
from setup.repo.fill import placeholders
from setup.repo.writer import (
    DeploymentConfig,
    RepoError,
    load_template,
    parameter_specs,
    parse_model_config,
    write_repository,
)
from tests.template_models import load_template_model

ROWS = get_family("cpu-ocr").visual_tokens_per_image  # the CPU demo's prompt-table rows per image

MULTIMODAL_MODELS = {"ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls",
                     "multimodal_encoders"}
IMAGE_INPUTS = {"image_input", "image_bytes_input", "image_url_input", "video_bytes_input"}


def engines(tmp_path, table=8 * 576, batch=8, model_type="llava"):
    engine, visual = tmp_path / "llm", tmp_path / "visual"
    engine.mkdir(exist_ok=True)
    visual.mkdir(exist_ok=True)
    (engine / "config.json").write_text(json.dumps({
        "pretrained_config": {"vocab_size": 32064, "hidden_size": 4096},
        "build_config": {"max_batch_size": batch, "max_prompt_embedding_table_size": table}}))
    (visual / "config.json").write_text(json.dumps({"builder_config": {"model_type": model_type, "precision": "float16"}}))
    return engine, visual


def mm_config(tmp_path, engine="tensorrtllm", **parameters) -> DeploymentConfig:
    llm, visual = tmp_path / "llm", tmp_path / "visual"
    if not (llm / "config.json").exists():
        engines(tmp_path)
    base = {"engine_dir": str(llm), "tokenizer_dir": "/hf/llava", "multimodal_model_path": str(visual),
            "max_num_images": 1, "multimodal_family": "llava-1.5"}
    return DeploymentConfig(template="multimodal", engine=engine, parameters={**base, **parameters})


def model_inputs(text: str) -> dict[str, tuple[int, tuple[int, ...], bool]]:
    config = parse_model_config(text, "config")
    return {i.name: (i.data_type, tuple(i.dims), i.optional) for i in config.input}


def template_inputs(template: str, model: str) -> dict:
    text = (TEMPLATES_DIR / template / model / "config.pbtxt").read_text()
    text = re.sub(r"data_type: \$\{\w+\}", "data_type: TYPE_FP32", text)
    return model_inputs(re.sub(r"\$\{\w+\}", "1", text))


# ---- writer --------------------------------------------------------------------------------------
def test_writes_multimodal_repository(tmp_path):
    out = write_repository(mm_config(tmp_path), tmp_path / "repo")
    assert {p.name for p in out.iterdir()} == MULTIMODAL_MODELS
    for model in MULTIMODAL_MODELS:
        text = (out / model / "config.pbtxt").read_text()
        assert "${" not in text and parse_model_config(text, model).name == model
    bls = parse_model_config((out / "tensorrt_llm_bls" / "config.pbtxt").read_text(), "bls")
    assert bls.parameters["multimodal_encoders_name"].string_value == "multimodal_encoders"
    assert bls.parameters["multimodal_family"].string_value == "llava-1.5"
    encoders = parse_model_config((out / "multimodal_encoders" / "config.pbtxt").read_text(), "enc")
    assert encoders.parameters["multimodal_model_path"].string_value == str(tmp_path / "visual")
    assert "hf_model_path" not in encoders.parameters  # optional and unset for llava: dropped
    pre = parse_model_config((out / "preprocessing" / "config.pbtxt").read_text(), "pre")
    assert pre.parameters["max_num_images"].string_value == "1"
    assert pre.parameters["gpt_model_path"].string_value == str(tmp_path / "llm")
    assert (out / "tensorrt_llm_bls" / "1" / "model.py").is_file()  # model code inherited from the base
    assert "tensorrt" in (out / "multimodal_encoders" / "1" / "model.py").read_text()  # GPU: the TensorRT encoder


def test_text_template_is_unchanged_by_the_cpu_overlay(tmp_path):
    config = DeploymentConfig(engine="cpu", parameters={"engine_dir": "/e", "tokenizer_dir": "/t"})
    out = write_repository(config, tmp_path / "repo")
    assert "multimodal_encoders" not in {p.name for p in out.iterdir()}
    assert not IMAGE_INPUTS & set(model_inputs((out / "tensorrt_llm_bls" / "config.pbtxt").read_text()))


def test_cpu_overlay_brings_the_ocr_encoder(tmp_path):
    llm, visual = engines(tmp_path, table=8 * ROWS * 2, model_type="cpu-ocr")
    config = DeploymentConfig(template="multimodal", engine="cpu", parameters={
        "engine_dir": str(llm), "tokenizer_dir": "/t", "multimodal_model_path": str(visual), "hf_model_path": "/hf",
        "max_num_images": 2, "multimodal_family": "cpu-ocr"})
    out = write_repository(config, tmp_path / "repo")
    assert (out / "multimodal_encoders" / "1" / "cpu_runtime" / "encoder" / "ocr.py").is_file()
    assert (out / "multimodal_encoders" / "1" / "cpu_runtime" / "encoder" / "imagenet_classes.txt").is_file()
    assert (out / "tensorrt_llm" / "1" / "cpu_runtime" / "engine" / "engine.py").is_file()
    assert "make_encoder" in (out / "multimodal_encoders" / "1" / "model.py").read_text()  # overlay replaced it
    assert (out / "tensorrt_llm" / "1" / "model.py").is_file()
    encoders = parse_model_config((out / "multimodal_encoders" / "config.pbtxt").read_text(), "enc")
    assert [i.name for i in encoders.input] == ["IMAGE", "max_tokens", "DESCRIBE"]  # the CPU-only extra appended
    assert [o.name for o in encoders.output][-1] == "OUT_DESCRIPTION"
    assert not (out / "multimodal_encoders" / "config.extra.pbtxt").exists()


def test_gpu_encoder_has_no_describe_extra(tmp_path):
    out = write_repository(mm_config(tmp_path), tmp_path / "repo")
    encoders = parse_model_config((out / "multimodal_encoders" / "config.pbtxt").read_text(), "enc")
    assert "DESCRIBE" not in {i.name for i in encoders.input}
    assert "OUT_DESCRIPTION" not in {o.name for o in encoders.output}


def test_prompt_table_size_must_match_batch_tokens_images(tmp_path):
    engines(tmp_path, table=4000)
    with pytest.raises(RepoError) as caught:
        write_repository(mm_config(tmp_path), tmp_path / "repo")
    message = str(caught.value)
    assert "4000" in message and "8 x 576 visual tokens per image" in message and "--max_multimodal_len 4608" in message
    assert not (tmp_path / "repo").exists()
    # The engine holds two images per request but the config says one: the message names the fix.
    engines(tmp_path, table=8 * 196 * 2, model_type="vila")
    with pytest.raises(RepoError, match="or set max_num_images to 2"):
        write_repository(mm_config(tmp_path, multimodal_family="vila"), tmp_path / "repo")
    write_repository(mm_config(tmp_path, multimodal_family="vila", max_num_images=2), tmp_path / "repo")


@pytest.mark.parametrize("parameters,match", [
    ({"multimodal_family": "blip2-opt"}, "reports model_type 'llava'"),
    ({"max_num_images": 3}, "above what LLaVA-1.5 takes"),
    ({"multimodal_model_path": ""}, "needs multimodal_model_path"),
    ({"max_num_images": "two"}, "whole number"),
    ({"image_marker": "<img>"}, "marks images with '<image>'"),
])
def test_multimodal_checks_name_the_problem(tmp_path, parameters, match):
    with pytest.raises(RepoError, match=match):
        write_repository(mm_config(tmp_path, **parameters), tmp_path / "repo")


def test_server_side_processor_families_are_refused(tmp_path):
    engines(tmp_path, model_type="qwen2_vl")
    with pytest.raises(RepoError, match="Hugging Face processor on the server"):
        write_repository(mm_config(tmp_path, multimodal_family="qwen2-vl"), tmp_path / "repo")


def test_template_chain_and_placeholders_documented():
    template = load_template("multimodal")
    assert set(template.models) == MULTIMODAL_MODELS
    assert template.models["postprocessing"] == (TEMPLATES_DIR / "inflight_batcher_llm" / "postprocessing",)
    assert template.config_path("tensorrt_llm_bls").parent.parent.name == "multimodal"
    specs = parameter_specs()
    for config in (TEMPLATES_DIR / "multimodal").glob("*/config.pbtxt"):
        assert not placeholders(config.read_text()) - set(specs), config


# ---- drift: the multimodal configs are the text ones plus image inputs ----------------------------
def test_bls_is_the_text_bls_plus_image_inputs():
    text, multi = template_inputs("inflight_batcher_llm", "tensorrt_llm_bls"), template_inputs("multimodal", "tensorrt_llm_bls")
    assert set(multi) - set(text) == IMAGE_INPUTS
    assert {k: multi[k] for k in text} == text
    assert all(multi[name][2] for name in IMAGE_INPUTS)  # optional


def test_ensemble_is_the_text_ensemble_plus_images_minus_client_prompt_table():
    text, multi = template_inputs("inflight_batcher_llm", "ensemble"), template_inputs("multimodal", "ensemble")
    assert set(multi) - set(text) == IMAGE_INPUTS
    assert set(text) - set(multi) == {"prompt_embedding_table", "prompt_vocab_size"}
    assert {k: multi[k] for k in multi if k in text} == {k: text[k] for k in multi if k in text}


def test_preprocessing_is_the_text_one_plus_preprocessed_pixels():
    """Both take upstream's IMAGE_BYTES/IMAGE_URL/VIDEO_BYTES (refused in a sentence); IMAGE_INPUT is ours."""
    text, multi = template_inputs("inflight_batcher_llm", "preprocessing"), template_inputs("multimodal", "preprocessing")
    assert set(multi) - set(text) == {"IMAGE_INPUT"}
    assert {k: multi[k] for k in text} == text


# ---- model code with a stand-in for triton_python_backend_utils -----------------------------------
class _Tensor:
    def __init__(self, name, value):
        self.name, self.value = name, value

    def as_numpy(self):
        return self.value


def _load_model(relative: str):
    stub = types.ModuleType("triton_python_backend_utils")
    stub.Tensor = _Tensor
    stub.get_input_tensor_by_name = lambda request, name: (
        _Tensor(name, request[name]) if request.get(name) is not None else None)
    return load_template_model(relative, stub, name=f"model_{Path(relative).parent.parent.name}")


class CharTokenizer:
    """One id per character; BOS (1) when special tokens are asked for."""

    def encode(self, text, add_special_tokens=False):
        return ([1] if add_special_tokens else []) + [ord(c) for c in text]


def preprocessing(add_special_tokens=False, max_images=2, tokens=3, base=1000):
    module = _load_model("inflight_batcher_llm/preprocessing/1/model.py")
    model = module.TritonPythonModel()
    model.tokenizer, model.add_special_tokens = CharTokenizer(), add_special_tokens
    model.max_images, model.marker, model.fake_base, model.image_tokens = max_images, "<image>", base, tokens
    model.pre_prompt = model.post_prompt = ""
    return module, model


def test_fake_ids_go_where_the_markers_are():
    _, model = preprocessing()
    ids = model._encode("a<image>b<image>", 2)
    assert ids == [ord("a"), 1000, 1001, 1002, ord("b"), 1003, 1004, 1005]
    assert model._encode("no images", 0) == [ord(c) for c in "no images"]


def test_fake_ids_without_markers_go_first_after_bos():
    _, model = preprocessing(add_special_tokens=True)
    assert model._encode("hi", 1) == [1, 1000, 1001, 1002, ord("h"), ord("i")]


def test_marker_count_must_match_image_count():
    _, model = preprocessing()
    with pytest.raises(ValueError, match="2 image marker"):
        model._encode("<image><image> two markers", 1)


def test_tokens_per_image_from_engine_config(tmp_path):
    module, _ = preprocessing()
    llm, _ = engines(tmp_path, table=8 * 96 * 2, batch=8)
    assert module.tokens_per_image(llm, 2) == (32064, 96)


@pytest.mark.parametrize("request_inputs,match", [
    ({"IMAGE_INPUT": np.zeros((1, 1, 3, 4, 4), np.float16), "IMAGE_URL": np.array([[b"data:"]], object)},
     "one kind of image input"),
    ({"IMAGE_BYTES": np.zeros((1, 1, 4, 4, 3), np.uint8)}, "server-side image processor"),
    ({"IMAGE_INPUT": np.zeros((1, 3, 3, 4, 4), np.float16)}, "at most 2 image"),
])
def test_image_inputs_are_checked(request_inputs, match):
    module, _ = preprocessing()
    with pytest.raises(ValueError, match=match):
        module.image_count(request_inputs, 2)


def test_image_count_and_text_only():
    module, _ = preprocessing()
    assert module.image_count({"IMAGE_INPUT": np.zeros((1, 2, 3, 4, 4), np.float16)}, 2) == 2
    assert module.image_count({}, 0) == 0
    with pytest.raises(ValueError, match="text-only"):
        module.image_count({"IMAGE_INPUT": np.zeros((1, 1, 3, 4, 4), np.float16)}, 0)


def test_bls_rejects_mixed_image_kinds_and_images_on_text_only():
    module = _load_model("inflight_batcher_llm/tensorrt_llm_bls/1/model.py")
    bls = module.TritonPythonModel()
    bls.encoders_name = "multimodal_encoders"
    pixels = np.zeros((1, 1, 3, 4, 4), np.float16)
    assert set(bls._images({"image_input": pixels})) == {"image_input"}
    with pytest.raises(ValueError, match="one kind of image input"):
        bls._images({"image_input": pixels, "image_url_input": np.array([[b"x"]], object)})
    with pytest.raises(ValueError, match="either images or a prompt_embedding_table"):
        bls._images({"image_input": pixels, "prompt_embedding_table": np.zeros((1, 2, 4), np.float16)})
    bls.encoders_name = ""
    with pytest.raises(ValueError, match="text-only"):
        bls._images({"image_input": pixels})


# ---- the CPU encoder's folder ----------------------------------------------------------------------
def test_cpu_encoder_folder_matches_the_family(tmp_path):
    from setup.catalog.families import get_family
    from setup.cpu.encoder import build_cpu_encoder

    folder = build_cpu_encoder(get_family("cpu-ocr"), 2, 576, root=tmp_path)
    config = json.loads((folder / "config.json").read_text())
    assert config["builder_config"]["model_type"] == "cpu-ocr"
    assert config["builder_config"]["num_visual_features"] == ROWS
    assert (folder / config["hf_model_dir"]).resolve() == (tmp_path / "models" / "smollm2-135m-instruct").resolve()
    assert Path(folder).name == "cpu-ocr-encoder"
