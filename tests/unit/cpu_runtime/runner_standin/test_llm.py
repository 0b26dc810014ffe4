"""The twin's runner.model (cpu_runtime/runner_standin/llm.py): ModelRunnerCpp's generate as recorded ([M] in
runner_eras.yaml) over a token-by-token LLM; prompt-table lookups of fake ids, snapshots of prompt + generated so
far padded with end_id, the family output played back, the checks ModelRunnerCpp makes before it enqueues."""

from __future__ import annotations

import inspect

import pytest
import torch
import yaml

from cpu_runtime.runner_standin.llm import StandInModel
from setup.paths import TEMPLATES_DIR

VOCAB, END, MAX_SEQ = 100, 99, 16
ERAS = TEMPLATES_DIR / "multimodal_runner" / "multimodal_runner" / "1" / "runner_eras.yaml"


class ListLLM:
    """Yields `answer` (up to max_new_tokens); records the ids it was given and whether it was closed."""

    vocab_size, max_seq_len = VOCAB, MAX_SEQ

    def __init__(self, answer=(5, 6, 7)):
        self.answer, self.given, self.closed = list(answer), [], 0

    def tokens(self, ids, max_new_tokens, end_id, sampling):
        self.given.append((list(ids), max_new_tokens, end_id, sampling))
        try:
            yield from self.answer[:max_new_tokens]
        finally:
            self.closed += 1


PROMPT = [[1, 2, VOCAB, VOCAB + 1, 3]]
TABLE = torch.tensor([[[40], [41]]], dtype=torch.int32)  # [batch, rows, 1]: one id per row


def call(model, **given):
    values = {"max_new_tokens": 8, "end_id": END, "pad_id": 0, "prompt_table": TABLE, "prompt_tasks": "0",
              "temperature": 0.5, "top_k": 3, **given}
    return model.generate(torch.tensor(PROMPT, dtype=torch.int32), **values)


def test_generate_has_model_runner_cpps_recorded_parameters():
    spec = yaml.safe_load(ERAS.read_text())["llm_runners"]["ModelRunnerCpp"]["generate"]
    params = inspect.signature(StandInModel.generate).parameters
    assert tuple(params) == ("self", *spec["positional"], *spec["keyword_only"], spec["var_keyword"])
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in spec["keyword_only"])
    assert params["streaming"].default is False and params["max_new_tokens"].default == 1


def test_a_stream_yields_prompt_and_generated_so_far_padded_with_end_id():
    llm = ListLLM()
    stream = call(StandInModel(llm), streaming=True, return_dict=True, output_sequence_lengths=True)
    snapshots = list(stream)
    assert len(snapshots) == 3
    assert llm.given == [([1, 2, 40, 41, 3], 8, END, {"temperature": 0.5, "top_k": 3, "top_p": 0.0,
                                                       "repetition_penalty": 1.0})]
    for count, snapshot in enumerate(snapshots, 1):
        ids = snapshot["output_ids"]
        assert ids.shape == (1, 1, MAX_SEQ) and ids.dtype == torch.int32
        assert ids[0, 0].tolist() == PROMPT[0] + [5, 6, 7][:count] + [END] * (MAX_SEQ - 5 - count)
        assert snapshot["sequence_lengths"].tolist() == [[5 + count]]
    assert llm.closed == 1


def test_without_streaming_the_finished_output_as_asked():
    output = call(StandInModel(ListLLM()))
    assert isinstance(output, torch.Tensor) and output[0, 0, :8].tolist() == PROMPT[0] + [5, 6, 7]
    as_dict = call(StandInModel(ListLLM()), return_dict=True)
    assert set(as_dict) == {"output_ids"}


def test_a_scripted_reply_is_played_once_instead_of_the_llm():
    llm = ListLLM()
    model = StandInModel(llm)
    model.scripted = [11, 12, 13, 14]
    snapshots = list(call(model, max_new_tokens=3, streaming=True, return_dict=True, output_sequence_lengths=True))
    assert [s["output_ids"][0, 0, 5:8].tolist() for s in snapshots] == [[11, END, END], [11, 12, END], [11, 12, 13]]
    assert llm.given == [] and model.scripted is None
    list(call(model, streaming=True))
    assert len(llm.given) == 1  # the next request runs the LLM


def test_an_abandoned_stream_frees_the_llms_request():
    llm = ListLLM()
    stream = call(StandInModel(llm), streaming=True)
    next(stream)
    stream.close()
    assert llm.closed == 1


def test_an_llm_that_ends_at_once_still_gives_one_snapshot():
    snapshots = list(call(StandInModel(ListLLM(answer=())), streaming=True, return_dict=True,
                          output_sequence_lengths=True))
    assert len(snapshots) == 1 and snapshots[0]["sequence_lengths"].tolist() == [[5]]


@pytest.mark.parametrize(("given", "message"), [
    ({"max_new_tokens": 12}, r"prompt \(5 tokens\) plus max_new_tokens \(12\) exceeds the CPU engine's max_seq_len"),
    ({"stopping_criteria": object()}, "stopping_criteria is not supported in C\\+\\+ session"),
    ({"num_beams": 2}, "runs one beam; num_beams was 2"),
    ({"end_id": None}, "end_id is required"),
])
def test_model_runner_cpps_checks_raise_when_called_not_when_read(given, message):
    llm = ListLLM()
    with pytest.raises(RuntimeError, match=message):
        call(StandInModel(llm), streaming=True, **given)
    assert llm.given == []
