"""Issue #47 item 12: BLIP-2's prompt is [32 image ids, BOS, text], as upstream's preprocessing builds it
(tensorrtllm_backend v0.12.0 all_models/inflight_batcher_llm/preprocessing/1/model.py 418-422, v0.19.0 620-624:
the fake ids, then the query encoded with its special tokens), as TensorRT-LLM 0.12's setup_fake_prompts does
([fake_prompt_id, pre_input_ids] when there is no post prompt) and as Hugging Face's Blip2 does (query-token
embeddings before the text's). Our preprocessing put the BOS first. Other families keep [BOS, ..., image ids, ...].

The model is started through its own initialize (the visual engine's config.json says which family it serves),
with a one-id-per-character tokenizer in place of the checkpoint's.
"""

from __future__ import annotations

import json

import pytest

from tests.unit.setup.repo.test_multimodal_repo import _load_model

BOS, VOCAB, ROWS = 2, 50272, 32  # OPT's BOS id and vocab size; BLIP-2's 32 Q-Former rows per image


class OptLikeTokenizer:
    """One id per character; OPT's BOS (2, "</s>") first when special tokens are asked for."""

    bos_token, eos_token, eos_token_id, pad_token_id = "</s>", "</s>", 2, 1

    def encode(self, text, add_special_tokens=False, **_):
        return ([BOS] if add_special_tokens else []) + [ord(c) for c in text]

    def __len__(self):
        return VOCAB


def started_preprocessing(tmp_path, model_type: str):
    llm, visual = tmp_path / "llm", tmp_path / "visual"
    llm.mkdir()
    visual.mkdir()
    (llm / "config.json").write_text(json.dumps({"pretrained_config": {"vocab_size": VOCAB},
                                                 "build_config": {"max_batch_size": 8,
                                                                  "max_prompt_embedding_table_size": 8 * ROWS}}))
    (visual / "config.json").write_text(json.dumps({"builder_config": {"model_type": model_type}}))
    module = _load_model("inflight_batcher_llm/preprocessing/1/model.py")
    module.load_tokenizer = lambda *args, **kwargs: OptLikeTokenizer()
    values = {"tokenizer_dir": "/hf", "add_special_tokens": "true", "gpt_model_path": str(llm),
              "multimodal_model_path": str(visual), "max_num_images": "1", "image_marker": "<image>",
              "pre_prompt": "", "post_prompt": ""}
    model = module.TritonPythonModel()
    model.initialize({"model_config": json.dumps(
        {"parameters": {k: {"string_value": v} for k, v in values.items()}})})
    return model


IMAGE = list(range(VOCAB, VOCAB + ROWS))
QUESTION = "Question: what is this? Answer:"


@pytest.mark.parametrize("prompt", ["<image>" + QUESTION, QUESTION])  # the family's user format, or no marker
def test_blip2_image_ids_come_before_the_bos_as_upstream(tmp_path, prompt):
    model = started_preprocessing(tmp_path, "blip2-opt")
    upstream = IMAGE + OptLikeTokenizer().encode(QUESTION, add_special_tokens=True)  # v0.19.0 preprocessing 620-624
    assert model._encode(prompt, 1) == upstream
    assert model._encode(prompt, 1)[:ROWS + 1] == [*IMAGE, BOS]


def test_other_families_keep_the_bos_first(tmp_path):
    model = started_preprocessing(tmp_path, "llava")
    assert model._encode("<image>" + QUESTION, 1)[:ROWS + 1] == [BOS, *IMAGE]
    assert model._encode("USER: <image>\nhi", 1)[0] == BOS
