"""model_repo_templates/shared/word_lists.py: stop/bad words in TensorRT-LLM's [batch, 2, width] layout and the
embedding bias, with a tokenizer whose ids are the letters' code points."""

from __future__ import annotations

import types

import numpy as np

from tests.template_models import load_shared_helper


class Letters:
    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]


def helpers():
    return load_shared_helper("word_lists.py", types.ModuleType("triton_python_backend_utils"))


def test_words_become_ids_then_end_offsets_padded_per_batch():
    out = helpers().word_list(Letters(), [np.array([b"ab", b"", "c"], object), None])
    assert out.dtype == np.int32 and out.shape == (2, 2, 3)
    assert out[0].tolist() == [[97, 98, 99], [2, 3, -1]]  # the empty word is left out
    assert out[1].tolist() == [[0, 0, 0], [-1, -1, -1]]  # a row without words


def test_no_words_at_all_is_one_empty_column():
    assert helpers().word_list(Letters(), [None]).tolist() == [[[0], [-1]]]


def test_embedding_bias_adds_each_weight_at_each_token():
    module = helpers()
    bias = module.embedding_bias(Letters(), np.array([[b"aa", b"b"]], object), np.array([[0.5, -2.0]]), 1, 128)
    assert bias.shape == (1, 128) and bias[0, 97] == 1.0 and bias[0, 98] == -2.0 and np.count_nonzero(bias) == 2
    assert module.embedding_bias(Letters(), None, None, 3, 128).shape == (3, 0)
