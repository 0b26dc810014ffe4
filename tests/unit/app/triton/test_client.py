"""Client request building against model configs of different backend versions (no server needed)."""

import pytest

from app.core.errors import InvalidRequest, ModelNotReady
from app.core.sampling import SamplingParams
from app.triton.client import ModelInfo, TritonChatClient


def config(inputs: dict[str, str], decoupled=True, accumulate=None, name="tensorrt_llm_bls") -> dict:
    cfg = {
        "name": name,
        "input": [{"name": n, "data_type": t, "dims": ["1"]} for n, t in inputs.items()],
        "model_transaction_policy": {"decoupled": decoupled},
        "parameters": {},
    }
    if accumulate is not None:
        cfg["parameters"]["accumulate_tokens"] = {"string_value": str(accumulate).lower()}
    return cfg


V019 = {"text_input": "TYPE_STRING", "max_tokens": "TYPE_INT32", "stream": "TYPE_BOOL", "temperature": "TYPE_FP32",
        "top_k": "TYPE_INT32", "top_p": "TYPE_FP32", "random_seed": "TYPE_UINT64", "repetition_penalty": "TYPE_FP32",
        "stop_words": "TYPE_STRING", "min_length": "TYPE_INT32"}
POST_1_0 = {**{k: v for k, v in V019.items() if k not in ("random_seed", "min_length")},
            "seed": "TYPE_UINT64", "min_tokens": "TYPE_INT32"}
V09_MINIMAL = {"text_input": "TYPE_STRING", "max_tokens": "TYPE_INT32", "stream": "TYPE_BOOL"}


def names_and_types(tensors) -> dict[str, str]:
    return {t.name(): t.datatype() for t in tensors}


def test_v019_inputs_and_dtypes():
    info = ModelInfo.from_config(config(V019, accumulate=True))
    assert info.accumulated_text and info.decoupled
    tensors = TritonChatClient("x:1").build_inputs("hi", SamplingParams(seed=7), {"stop_words": ["<|im_end|>"]}, info)
    got = names_and_types(tensors)
    assert got["random_seed"] == "UINT64" and got["text_input"] == "BYTES" and got["stream"] == "BOOL"
    assert set(got) == {"text_input", "stream", "max_tokens", "temperature", "top_k", "top_p", "random_seed",
                        "repetition_penalty", "stop_words"}


def test_post_1_0_renames_are_followed():
    info = ModelInfo.from_config(config(POST_1_0))
    got = names_and_types(TritonChatClient("x:1").build_inputs("hi", SamplingParams(seed=3), {"min_length": 2}, info))
    assert "seed" in got and "random_seed" not in got
    assert "min_tokens" in got and "min_length" not in got


def test_only_declared_inputs_are_sent():
    info = ModelInfo.from_config(config(V09_MINIMAL))
    got = names_and_types(TritonChatClient("x:1").build_inputs("hi", SamplingParams(), {"lora_task_id": 5}, info))
    assert set(got) == {"text_input", "max_tokens", "stream"}


def test_values_shapes_follow_batch_convention():
    info = ModelInfo.from_config(config(V019))
    tensors = TritonChatClient("x:1").build_inputs("héllo", SamplingParams(max_tokens=12), None, info)
    by_name = {t.name(): t for t in tensors}
    assert by_name["text_input"].shape() == [1, 1]
    assert by_name["max_tokens"].shape() == [1, 1]
    stop_info = ModelInfo.from_config(config({**V019, "stop_words": "TYPE_STRING"}))
    t = TritonChatClient("x:1").build_inputs("x", SamplingParams(), {"stop_words": ["a", "b"]}, stop_info)
    assert {x.name(): x.shape() for x in t}["stop_words"] == [1, 2]  # dims [-1] -> [B, N]
    seeded = TritonChatClient("x:1").build_inputs("x", SamplingParams(seed=2**40), None, info)
    assert {x.name(): x for x in seeded}["random_seed"].datatype() == "UINT64"


def test_non_decoupled_model_is_refused_with_a_clear_message():
    info = ModelInfo.from_config(config(V019, decoupled=False))
    with pytest.raises(ModelNotReady, match="not decoupled"):
        TritonChatClient("x:1").build_inputs("hi", SamplingParams(), None, info)


@pytest.mark.parametrize("field, value", [("max_tokens", 0), ("temperature", 0), ("top_p", 1.5), ("top_k", -1),
                                          ("repetition_penalty", 9), ("seed", -1)])
def test_sampling_validated_before_any_request(field, value):
    with pytest.raises(InvalidRequest, match=field.replace("_", " ")):
        SamplingParams(**{field: value})


def test_ensemble_knows_its_engine_step_for_stop_requests():
    cfg = config(V019, name="ensemble")
    cfg["ensemble_scheduling"] = {"step": [{"model_name": "preprocessing"}, {"model_name": "tensorrt_llm"},
                                           {"model_name": "postprocessing"}]}
    assert ModelInfo.from_config(cfg).engine_model == "tensorrt_llm"
    assert ModelInfo.from_config(config(V019)).engine_model is None
