"""Issue #47 item 14: the visual engine's rows per image must be the prompt table's T. Another model size of a family
(VILA 1.5 3B makes 196 rows per image, other sizes other counts) silently misaligned every image.

Checked twice: by the writer, where the visual engine's config.json records its rows (builder_config.
num_visual_features of our CPU encoder, builder_config.output_shape of the 0.19+ builder), against the family's
recorded T; and by the GPU multimodal_encoders when it starts, from the engine's own output shape against the LLM
engine's prompt table (max_prompt_embedding_table_size // max_batch_size // max_num_images, as preprocessing
places fake ids). The model is started here with stand-ins for tensorrt and torch.
"""

from __future__ import annotations

import json
import sys
import types

import pytest

from setup.repo.writer import DeploymentConfig, RepoError, write_repository
from tests.template_models import StandInTensor, load_template_model

VILA_ROWS, BATCH, IMAGES = 196, 8, 4  # vila1.5-3b; the family's build defaults


def vila_engines(tmp_path, visual_builder: dict, table=BATCH * VILA_ROWS * IMAGES):
    llm, visual = tmp_path / "llm", tmp_path / "visual"
    llm.mkdir(exist_ok=True)
    visual.mkdir(exist_ok=True)
    (llm / "config.json").write_text(json.dumps({
        "pretrained_config": {"vocab_size": 32000, "hidden_size": 2560},
        "build_config": {"max_batch_size": BATCH, "max_prompt_embedding_table_size": table}}))
    (visual / "config.json").write_text(json.dumps({"builder_config": {"model_type": "vila", "precision": "float16",
                                                                       **visual_builder}}))
    return llm, visual


def vila_config(llm, visual) -> DeploymentConfig:
    return DeploymentConfig(template="multimodal", parameters={
        "engine_dir": str(llm), "tokenizer_dir": "/hf/vila", "multimodal_model_path": str(visual),
        "hf_model_path": "/hf/vila", "max_num_images": IMAGES, "multimodal_family": "vila"})


# ---- at repository time ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("builder", [{"output_shape": [32, 576, 2560]}, {"num_visual_features": 576}])
def test_the_writer_refuses_a_visual_engine_with_other_rows_than_the_family(tmp_path, builder):
    llm, visual = vila_engines(tmp_path, builder)  # the LLM table sized for 196 rows, as the family says
    with pytest.raises(RepoError, match=r"makes 576 prompt-table rows per image .* VILA has 196 visual tokens"):
        write_repository(vila_config(llm, visual), tmp_path / "repo")
    assert not (tmp_path / "repo").exists()


@pytest.mark.parametrize("builder", [{"output_shape": [32, VILA_ROWS, 2560]}, {"num_visual_features": VILA_ROWS},
                                     {}])  # {}: the 0.12-0.18 builders record no rows (checked at model start)
def test_the_writer_takes_a_visual_engine_with_the_familys_rows(tmp_path, builder):
    llm, visual = vila_engines(tmp_path, builder)
    repo = write_repository(vila_config(llm, visual), tmp_path / "repo")
    encoders = (repo / "multimodal_encoders" / "config.pbtxt").read_text()
    assert f'key: "gpt_model_path" value: {{ string_value: "{llm}" }}' in encoders


# ---- at model start ----------------------------------------------------------------------------------------------
class FakeEngine:
    def __init__(self, output_shape):
        self.names, self.shapes = ["input", "encoder_output"], {"input": (-1, 3, 384, 384), "encoder_output": output_shape}
        self.num_io_tensors = 2

    def get_tensor_name(self, index):
        return self.names[index]

    def get_tensor_shape(self, name):
        return self.shapes[name]

    def get_tensor_dtype(self, name):
        return "fp16"

    def create_execution_context(self):
        return object()


class Refused(Exception):
    pass


def start_encoder(tmp_path, monkeypatch, output_shape, table=BATCH * VILA_ROWS * IMAGES):
    llm, visual = vila_engines(tmp_path, {}, table=table)
    (visual / "model.engine").write_bytes(b"plan")
    trt = types.SimpleNamespace(float16="fp16", float32="fp32", bfloat16="bf16", Logger=lambda level: None,
                                Runtime=lambda logger: types.SimpleNamespace(
                                    deserialize_cuda_engine=lambda data: FakeEngine(output_shape)))
    trt.Logger.WARNING = 0
    torch = types.SimpleNamespace(device=lambda name: name, float16="t16", float32="t32", bfloat16="tb16")
    monkeypatch.setitem(sys.modules, "tensorrt", trt)
    monkeypatch.setitem(sys.modules, "torch", torch)
    pb_utils = types.ModuleType("triton_python_backend_utils")
    pb_utils.Tensor, pb_utils.TritonModelException = StandInTensor, Refused
    module = load_template_model("multimodal/multimodal_encoders/1/model.py", pb_utils, name="gpu_encoders")
    model = module.TritonPythonModel()
    values = {"multimodal_model_path": str(visual), "max_num_images": str(IMAGES), "gpt_model_path": str(llm)}
    model.initialize({"model_config": json.dumps({"parameters": {k: {"string_value": v} for k, v in values.items()}})})
    return model


def test_the_encoder_refuses_to_start_when_the_engine_rows_are_not_the_tables(tmp_path, monkeypatch):
    with pytest.raises(Refused) as refused:
        start_encoder(tmp_path, monkeypatch, (-1, 576, 2560))
    text = str(refused.value)
    assert "makes 576 prompt-table rows per image" in text and "holds 196 rows per image" in text
    assert "max_prompt_embedding_table_size 6272 // max_batch_size 8 // max_num_images 4" in text


def test_the_encoder_starts_when_the_rows_agree(tmp_path, monkeypatch):
    model = start_encoder(tmp_path, monkeypatch, (-1, VILA_ROWS, 2560))
    assert model.output_name == "encoder_output" and model.engine_batch == 1
