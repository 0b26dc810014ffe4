"""The InternLM-XComposer2 preprocessing model without TensorRT: splitting at <ImageHere>, the fake-id splice,
image and table shape checks, the engine's table size, the LoRA task on every request; and the BLS routing
when preprocessing runs the visual engine itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.unit.setup.repo.test_template_models import _load, _response, _Sender

VOCAB, TOKENS, HIDDEN = 92544, 1225, 8
BOS = 1


@pytest.fixture(scope="module")
def pre():
    return _load("internlm_xcomposer2/preprocessing/1/model.py")


class CharTokenizer:
    """Token id = code point; BOS (1) first when special tokens are asked for."""

    bos_token, eos_token_id, pad_token_id = "<s>", 2, 2

    def encode(self, text, add_special_tokens=True):
        return ([BOS] if add_special_tokens else []) + [ord(c) for c in text]

    def __len__(self):
        return 128


def model(pre, default_task="1"):
    instance = pre.TritonPythonModel()
    instance.add_special_tokens, instance.marker, instance.tokens = True, "<ImageHere>", TOKENS
    instance.default_task, instance.tokenizer = default_task, CharTokenizer()
    instance.end_id, instance.pad_id, instance.vocab_size = 2, 2, VOCAB
    instance.visual = lambda pixels: np.ones((pixels.shape[0], TOKENS, HIDDEN), np.float16)
    return instance


def request(text="Hi<ImageHere>Q", image=True, **extra):
    values = {"QUERY": np.array([[text.encode()]], object), "REQUEST_OUTPUT_LEN": np.array([[16]], np.int32), **extra}
    if image:
        values["IMAGE_INPUT"] = np.zeros((1, 3, 490, 490), np.float16)
    return values


def test_split_at_exactly_one_marker(pre):
    assert pre.split_at_marker("a<ImageHere>b") == ("a", "b")
    assert pre.split_at_marker("<ImageHere>") == ("", "")
    for text, count in (("no image", 0), ("<ImageHere><ImageHere>", 2)):
        with pytest.raises(ValueError, match=f"exactly once.*has {count}"):
            pre.split_at_marker(text)


def test_fake_ids_are_spliced_where_the_marker_was(pre):
    ids = pre.splice([1, 10], [20, 21], VOCAB, TOKENS)
    assert ids[:2] == [1, 10] and ids[-2:] == [20, 21] and len(ids) == 4 + TOKENS
    assert ids[2:-2] == list(range(VOCAB, VOCAB + TOKENS))  # 35 x 35 rows of the table, in order


def test_image_and_table_shapes(pre):
    assert pre.one_image(np.zeros((3, 490, 490), np.float32)).shape == (1, 3, 490, 490)
    assert pre.one_image(np.zeros((1, 3, 490, 490), np.float16)).dtype == np.float16
    for bad, match in ((None, "has none"), (np.zeros((0,), np.float16), "has none"),
                       (np.zeros((1, 3, 336, 336), np.float16), r"shape \[1, 3, 336, 336\]"),
                       (np.zeros((2, 3, 490, 490), np.float16), "exactly one image")):
        with pytest.raises(ValueError, match=match):
            pre.one_image(bad)
    assert pre.table_rows(np.zeros((1, TOKENS, HIDDEN)), TOKENS).shape == (TOKENS, HIDDEN)
    with pytest.raises(ValueError, match="returned 576 rows.*expects 1225"):
        pre.table_rows(np.zeros((1, 576, HIDDEN)), TOKENS)


def test_engine_vocab_size_and_table_room(pre, tmp_path):
    def engine(table):
        (tmp_path / "config.json").write_text(json.dumps({"pretrained_config": {"vocab_size": VOCAB},
                                                          "build_config": {"max_batch_size": 4,
                                                                           "max_prompt_embedding_table_size": table}}))
        return tmp_path

    assert pre.engine_vocab_size(engine(4 * TOKENS), TOKENS) == VOCAB
    with pytest.raises(ValueError, match="--max_multimodal_len 4900"):
        pre.engine_vocab_size(engine(4 * 576), TOKENS)


def test_lora_task_is_on_every_request(pre):
    assert pre.lora_task(None, "1").tolist() == [[1]]
    assert pre.lora_task(np.array([[7]], np.uint64), "1").tolist() == [[7]]  # the client's wins
    with pytest.raises(ValueError, match="Partial LoRA must be active"):
        pre.lora_task(None, "")


def test_one_request_end_to_end(pre):
    response = model(pre)._one(request(PROMPT_TABLE_EXTRA_ID=np.array([[5]], np.uint64)))
    out = {name: tensor.value for name, tensor in response.tensors.items()}
    ids = out["INPUT_ID"][0].tolist()
    assert ids[:3] == [BOS, ord("H"), ord("i")] and ids[-1] == ord("Q")  # no second BOS after the image
    assert ids[3:-1] == list(range(VOCAB, VOCAB + TOKENS))
    assert out["REQUEST_INPUT_LEN"].tolist() == [[3 + TOKENS + 1]]
    assert out["OUT_PROMPT_EMBEDDING_TABLE"].shape == (1, TOKENS, HIDDEN)
    assert out["OUT_PROMPT_EMBEDDING_TABLE"].dtype == np.float16
    assert out["OUT_PROMPT_VOCAB_SIZE"].tolist() == [[TOKENS]] and out["OUT_LORA_TASK_ID"].tolist() == [[1]]
    extra = out["OUT_PROMPT_TABLE_EXTRA_IDS"][0]
    assert set(extra[3:-1].tolist()) == {5} and extra[:3].tolist() == [0, 0, 0]


def test_the_adapter_goes_with_the_first_request_only(pre, tmp_path):
    np.save(tmp_path / "model.lora_weights.npy", np.ones((1, 4, 6), np.float16))
    np.save(tmp_path / "model.lora_config.npy", np.zeros((1, 4, 3), np.int32))
    instance = model(pre)
    instance.lora_weights_dir = str(tmp_path)
    first, second = (dict(instance._one(request()).tensors) for _ in range(2))
    assert first["OUT_LORA_WEIGHTS"].value.shape == (1, 4, 6) and first["OUT_LORA_CONFIG"].value.shape == (1, 4, 3)
    assert "OUT_LORA_WEIGHTS" not in second and second["OUT_LORA_TASK_ID"].value.tolist() == [[1]]
    client = dict(instance._one(request(LORA_WEIGHTS=np.zeros((1, 2, 6), np.float16),
                                        LORA_CONFIG=np.zeros((1, 2, 3), np.int32))).tensors)
    assert client["OUT_LORA_WEIGHTS"].value.shape == (1, 2, 6)  # a client's own weights pass through
    assert "OUT_LORA_WEIGHTS" not in dict(model(pre)._one(request()).tensors)  # 0.19+: prefetched, never sent


def test_bad_requests_get_an_error_each(pre):
    instance = model(pre)
    responses = instance.execute([request(image=False), request("no marker"), request()])
    assert "exactly one image" in responses[0].error_value
    assert "exactly once" in responses[1].error_value
    assert responses[2].error_value is None


@pytest.mark.parametrize("client_lora", [False, True])
def test_bls_sends_the_image_to_preprocessing_and_its_table_to_the_engine(client_lora):
    seen = {}

    def preprocessing(inputs):
        seen["preprocessing"] = set(inputs)
        return _response(INPUT_ID=np.array([[1, VOCAB]], np.int32), REQUEST_INPUT_LEN=np.array([[2]], np.int32),
                         REQUEST_OUTPUT_LEN=inputs["REQUEST_OUTPUT_LEN"],
                         OUT_PROMPT_EMBEDDING_TABLE=np.ones((1, 1, HIDDEN), np.float16),
                         OUT_PROMPT_VOCAB_SIZE=np.array([[1]], np.int32), OUT_LORA_TASK_ID=np.array([[1]], np.uint64))

    def engine(inputs):
        seen["engine"] = inputs
        return [_response(output_ids=np.array([[[ord("a")]]], np.int32), sequence_length=np.array([[1]], np.int32))]

    def postprocessing(inputs):
        return _response(OUTPUT=np.array([[b"a"]], dtype=object))

    module = _load("inflight_batcher_llm/tensorrt_llm_bls/1/model.py", {
        "preprocessing": preprocessing, "tensorrt_llm": engine, "postprocessing": postprocessing})
    bls = module.TritonPythonModel()  # no multimodal_encoders model: calling one would fail the test
    bls.decoupled, bls.accumulate, bls.exclude_input = True, False, True
    bls.llm_name, bls.encoders_name, bls.engine_names, bls.vision_in_preprocessing = "tensorrt_llm", "", {}, True
    bls.finished_streams = module.FinishedStreams()
    sender = _Sender()
    lora = {"lora_task_id": np.array([[1]], np.uint64), "lora_weights": np.ones((1, 2, 8), np.float16),
            "lora_config": np.ones((1, 2, 3), np.int32)} if client_lora else {}
    bls._run({"text_input": np.array([[b"<ImageHere>Q"]], object), "max_tokens": np.array([[4]], np.int32),
              "stream": np.array([[True]], bool), "image_input": np.zeros((1, 3, 490, 490), np.float16), **lora},
             sender)
    assert "IMAGE_INPUT" in seen["preprocessing"]
    # the client's Partial-LoRA task (and its weights on first use) reach preprocessing, which requires a task
    wanted = {"LORA_TASK_ID", "LORA_WEIGHTS", "LORA_CONFIG"}
    assert seen["preprocessing"] & wanted == (wanted if client_lora else set())
    assert seen["engine"]["prompt_embedding_table"].shape == (1, 1, HIDDEN)
    assert seen["engine"]["lora_task_id"].tolist() == [[1]] and seen["engine"]["prompt_vocab_size"].tolist() == [[1]]
    assert all(r is None or not r.has_error() for r, _ in sender.sent)
