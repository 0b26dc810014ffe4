"""The runner model's streamed replies (runner_lib/streaming.py, llm_call.py, deltas.py) against a 1.x
MultimodalModelRunner whose LLM runner streams as ModelRunnerCpp does.

TensorRT-LLM cannot be installed here (no GPU), so the runner and its LLM runner are mocks, written from the
streaming facts (sources V: multimodal_model_runner.py@65b31db, M: model_runner_cpp.py@0383291), not from
runner_eras.yaml: the decoder-only LLM call's keywords in order (§1), ModelRunnerCpp.generate's parameters (§4) and
its snapshots (prompt + generated so far, padded with end_id, sequence lengths before the padding). The model must
call the runner's own preprocessing and LLM call with streaming on, send each settled piece of text, and drain the
generator to its end whatever happens.
"""

from __future__ import annotations

import inspect
import io
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from setup.paths import TEMPLATES_DIR
from tests.unit.templates.conftest import ask_all, start_model
from tests.unit.templates.release_runners import Release016
from tests.unit.templates.test_multimodal_runner import LATE

RUNNER_DIR = TEMPLATES_DIR / "multimodal_runner" / "multimodal_runner" / "1"

# §1 [V]: the keywords of MultimodalModelRunner.generate's decoder-only LLM call, in order
FACTS_CALL = ("input_position_ids", "mrope_params", "encoder_input_features", "sampling_config", "prompt_table",
              "prompt_tasks", "max_new_tokens", "end_id", "pad_id", "top_k", "top_p", "temperature",
              "repetition_penalty", "num_beams", "lora_uids", "output_sequence_lengths", "return_dict",
              "mm_embedding_offloading")
# §4 [M]: ModelRunnerCpp.generate's keyword-only parameters, in order (then **kwargs)
FACTS_CPP = ("position_ids", "encoder_input_ids", "encoder_input_features", "encoder_output_lengths",
             "cross_attention_masks", "mrope_params", "sampling_config", "lora_uids", "lookahead_config", "streaming",
             "stopping_criteria", "logits_processor_names", "max_new_tokens", "end_id", "pad_id", "bad_words_list",
             "stop_words_list", "return_dict", "output_sequence_lengths", "output_generation_logits",
             "output_log_probs", "output_cum_log_probs", "prompt_table", "prompt_tasks", "input_token_extra_ids",
             "return_all_generated_tokens", "language_adapter_uids", "mm_embedding_offloading")

EOS, OTHER_SPECIAL, VOCAB = 256, 257, 258  # a byte tokenizer: ids 0-255 are bytes
ROWS, HIDDEN, MAX_SEQ = 3, 4, 96  # the picture's prompt-table rows, their width, the engine's max_seq_len


@dataclass
class MropeParams:  # tensorrt_llm.layers' class, which the runner's module imports ([V], facts §3)
    mrope_rotary_cos_sin: object = None
    mrope_position_deltas: object = None


class ByteTokenizer:
    eos_token_id, pad_token_id, all_special_ids = EOS, None, [OTHER_SPECIAL, EOS]

    def __init__(self, fail_on: int | None = None):
        self.decodes, self.fail_on = 0, fail_on

    def encode(self, text, add_special_tokens=False):
        return list(text.encode("utf-8"))

    def batch_decode(self, rows, skip_special_tokens=False):
        assert skip_special_tokens  # [V] decodes with special tokens skipped
        self.decodes += 1
        if self.decodes == self.fail_on:
            raise RuntimeError("the tokenizer broke")
        return [bytes(int(i) for i in row if int(i) < 256).decode("utf-8", "replace") for row in rows]


class FakeModelRunnerCpp:
    """ModelRunnerCpp.generate's signature ([M]); with streaming, a generator of snapshots (`per_yield` tokens
    each) of the runner's `script`, up to max_new_tokens; `fail_after` yields, the executor's error."""

    def __init__(self, owner):
        self.owner, self.calls, self.yielded, self.drained = owner, [], 0, False

    def generate(self, batch_input_ids, *, position_ids=None, encoder_input_ids=None, encoder_input_features=None,
                 encoder_output_lengths=None, cross_attention_masks=None, mrope_params=None, sampling_config=None,
                 lora_uids=None, lookahead_config=None, streaming=False, stopping_criteria=None,
                 logits_processor_names=None, max_new_tokens=1, end_id=None, pad_id=None, bad_words_list=None,
                 stop_words_list=None, return_dict=False, output_sequence_lengths=False,
                 output_generation_logits=False, output_log_probs=False, output_cum_log_probs=False,
                 prompt_table=None, prompt_tasks=None, input_token_extra_ids=None, return_all_generated_tokens=False,
                 language_adapter_uids=None, mm_embedding_offloading=False, **kwargs):
        values = dict(locals())
        del values["self"], values["kwargs"]
        self.calls.append({**values, **kwargs})
        assert streaming and return_dict and output_sequence_lengths
        return self._stream(batch_input_ids, max_new_tokens, end_id)

    def _stream(self, batch_input_ids, max_new_tokens, end_id):
        owner = self.owner
        prompt = [int(i) for i in batch_input_ids[0]]
        tokens = list(owner.script.encode("utf-8"))[:max_new_tokens]
        for start in range(0, len(tokens), owner.per_yield):
            if self.yielded == owner.fail_after:
                raise RuntimeError("Executor error: the request ran out of KV cache blocks")
            generated = tokens[:start + owner.per_yield]
            row = prompt + generated
            output_ids = torch.full((1, 1, MAX_SEQ), end_id, dtype=torch.int32)
            output_ids[0, 0, :len(row)] = torch.tensor(row, dtype=torch.int32)
            self.yielded += 1
            yield {"output_ids": output_ids, "sequence_lengths": torch.tensor([[len(row)]], dtype=torch.int32)}
        self.drained = True


class LateStreamingRunner:
    """A 1.x runner ([V]): decoder-only LLM in session cpp_llm_only, ModelRunnerCpp as runner.model."""

    FIELDS = LATE
    model_type, decoder_llm = "llava", True
    script, per_yield, fail_after, tokenizer_fails_on = "A cat é sits.", 1, None, None
    last = None

    def __init__(self, args):
        missing = [f for f in self.FIELDS if not hasattr(args, f)]
        assert not missing, f"args lacks {missing}"
        self.args, self.session = args, args.session
        self.tokenizer = ByteTokenizer(self.tokenizer_fails_on)
        self.model = FakeModelRunnerCpp(self)
        self.setups, self.preprocessed, self.ran = [], [], []
        type(self).last = self

    @property
    def cpp_e2e(self):
        return self.session == "cpp"

    def load_test_data(self, image_path=None, video_path=None): ...
    def load_test_audio(self, audio_path): ...

    def setup_inputs(self, input_text, raw_image, raw_audio=None):
        seen = [i.size for i in raw_image] if isinstance(raw_image, list) else getattr(raw_image, "size", None)
        self.setups.append((input_text, seen, raw_audio))
        return input_text, "USER: ", f" {input_text} ASSISTANT:", "pixels", None, {"fresh": True}, {}, {}

    def preprocess(self, pre_prompt, post_prompt, image, other_vision_inputs, other_audio_inputs):
        self.preprocessed.append((pre_prompt, post_prompt, image, dict(other_vision_inputs), other_audio_inputs))
        other_vision_inputs.pop("fresh")  # preprocess mutates setup_inputs' dicts (qwen2_vl does, [V])
        ids = list(pre_prompt.encode()) + [VOCAB + i for i in range(ROWS)] + list(post_prompt.encode())
        table = torch.arange(ROWS * HIDDEN, dtype=torch.float32).view(ROWS, HIDDEN)  # [batch * rows, hidden]
        fifth = [torch.zeros(1, 8), torch.zeros(1, 1, dtype=torch.int32)] if self.model_type == "qwen2_vl" else None
        return (torch.tensor([ids], dtype=torch.int32), torch.IntTensor([len(ids)]),
                [table, torch.tensor([0]), torch.tensor([ROWS])], table, fifth)

    def prepare_position_ids_for_cogvlm(self, input_ids):
        return [torch.arange(input_ids.shape[1], dtype=torch.int32)]

    def generate(self, pre_prompt, post_prompt, image, decoder_input_ids, max_new_tokens, other_vision_inputs={},  # noqa: B006
                 other_audio_inputs={}, other_decoder_inputs={}): ...  # noqa: B006

    def run(self, input_text, input_image, input_audio, max_new_tokens):
        self.ran.append((input_text, max_new_tokens))
        return input_text, [[f"whole reply to {input_text}"]]


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (32, 24), (10, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def runner(**overrides) -> type:
    """A LateStreamingRunner subclass with `overrides` (script, model_type, decoder_llm, ...)."""
    return type("Runner", (LateStreamingRunner,), overrides)


def pieces_and_final(sent):
    """(the texts of the non-final responses, the final response); each non-final one carries text_output only."""
    *pieces, (final, flags) = sent
    assert flags == 1 and all(f == 0 and set(r.tensors) == {"text_output"} for r, f in pieces)
    return [r.tensors["text_output"].decode() for r, _ in pieces], final


def _text(response, name):
    return response.tensors[name].decode()


# ---- the call --------------------------------------------------------------------------------------------------
def test_the_recorded_call_and_llm_runner_are_the_facts():
    raw = yaml.safe_load((RUNNER_DIR / "runner_eras.yaml").read_text())
    late = raw["eras"]["1.x"]["streaming"]
    assert tuple(late["llm_call"]["kwargs"]) == FACTS_CALL and late["llm_call"]["positional"] == ["input_ids"]
    assert late["stream_with"] == {"streaming": True, "return_dict": True, "output_sequence_lengths": True}
    cpp = raw["llm_runners"]["ModelRunnerCpp"]
    assert tuple(cpp["generate"]["keyword_only"]) == FACTS_CPP and cpp["generate"]["positional"] == ["batch_input_ids"]
    for key in (*late["sources"], *cpp["sources"]):  # each source names its repository, commit and path
        assert {"repo", "commit", "path"} <= set(raw["sources"][key]), key
    params = inspect.signature(FakeModelRunnerCpp.generate).parameters
    assert tuple(params)[2:-1] == FACTS_CPP  # the mock below has the recorded signature
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in FACTS_CPP)
    assert all("streaming" not in raw["eras"][release] for release in ("0.12", "0.13", "0.16"))


class KwargOrder(FakeModelRunnerCpp):
    """Takes the call's keywords through **kwargs, so their order is kept."""

    def generate(self, batch_input_ids, *, streaming=False, **kwargs):
        self.calls.append(list(kwargs))
        return self._stream(batch_input_ids, kwargs["max_new_tokens"], kwargs["end_id"])


def test_the_llm_call_has_the_recorded_keywords_in_order_with_streaming_on(folders):
    cls = runner()
    cls.__init__ = lambda self, args: (LateStreamingRunner.__init__(self, args), setattr(self, "model",
                                                                                          KwargOrder(self)))[0]
    pieces_and_final(ask_all(start_model(folders, cls), text_input="Hi"))
    assert cls.last.model.calls == [list(FACTS_CALL)]


def test_the_llm_call_is_valued_as_the_runner_values_it(folders):
    cls = runner()
    model = start_model(folders, cls)
    assert model.plan is not None and model.plan.llm_runner == "ModelRunnerCpp"  # by its recorded signature
    sent = ask_all(model, text_input="What is it?", image_bytes=[_png()], max_tokens=np.int32(40),
                   top_k=np.int32(3), temperature=np.float32(0.5))
    pieces_and_final(sent)
    run = cls.last
    assert run.setups == [("What is it?", (32, 24), None)]  # setup_inputs afresh with the picture
    assert run.preprocessed == [("USER: ", " What is it? ASSISTANT:", "pixels", {"fresh": True}, {})]
    [call] = run.model.calls
    assert (call["streaming"], call["return_dict"], call["output_sequence_lengths"]) == (True, True, True)
    assert call["prompt_table"].shape == (1, ROWS, HIDDEN) and call["prompt_tasks"] == "0"
    assert (call["end_id"], call["pad_id"], call["max_new_tokens"]) == (EOS, OTHER_SPECIAL, 40)
    assert (call["top_k"], call["temperature"], call["top_p"], call["repetition_penalty"], call["num_beams"]) == \
        (3, 0.5, 0.0, 1.0, 1)
    assert call["lora_uids"] is None and call["sampling_config"] is None and call["encoder_input_features"] is None
    assert call["input_position_ids"] is None and call["mrope_params"] is None
    assert call["mm_embedding_offloading"] is None  # args' value
    assert call["batch_input_ids"][0, 6:6 + ROWS].tolist() == [VOCAB, VOCAB + 1, VOCAB + 2]  # fake ids as given


def test_qwen2_vl_gets_mrope_params_and_cogvlm_its_position_ids(folders):
    cls = runner(model_type="qwen2_vl")
    pieces_and_final(ask_all(start_model(folders, cls), text_input="Hi", image_bytes=[_png()]))
    # [V]: one text and one picture per batch slot, the picture at load_test_data's 504x504
    assert cls.last.setups == [(["Hi"], [(504, 504)], None)]
    [call] = cls.last.model.calls
    assert isinstance(call["mrope_params"], MropeParams) and call["mrope_params"].mrope_position_deltas.shape == (1, 1)
    cls = runner(model_type="cogvlm")
    pieces_and_final(ask_all(start_model(folders, cls), text_input="Hi", image_bytes=[_png()]))
    [call] = cls.last.model.calls
    assert call["input_position_ids"][0].tolist() == list(range(call["batch_input_ids"].shape[1]))
    assert call["mrope_params"] is None


def test_blip2_opt_ends_on_a_newline_and_lora_reaches_the_call(folders):
    cls = runner(model_type="blip2-opt")
    pieces_and_final(ask_all(start_model(folders, cls), text_input="Hi", lora_task_id=np.uint64(4)))
    [call] = cls.last.model.calls
    assert call["end_id"] == ord("\n") and call["lora_uids"] == ["4"]


# ---- the pieces --------------------------------------------------------------------------------------------------
def test_each_snapshot_sends_its_settled_new_text_and_the_final_response_the_figures(folders):
    cls = runner()
    sent = ask_all(start_model(folders, cls), text_input="What is it?", image_bytes=[_png()])
    pieces, final = pieces_and_final(sent)
    # é is two tokens: its first byte alone decodes to U+FFFD, so it waits for the second; a trailing space waits
    assert pieces == ["A", " c", "a", "t", " é", " s", "i", "t", "s", "."]
    assert _text(final, "text_output") == "" and _text(final, "reply_mode") == "streamed"
    assert _text(final, "finish_reason") == "stop" and _text(final, "runner_era") == "1.x"
    assert cls.last.model.drained and cls.last.ran == []


def test_several_tokens_per_snapshot_and_whitespace_stripped_as_the_runner_strips(folders):
    cls = runner(script="  Two cats.\n\n", per_yield=3)
    pieces, final = pieces_and_final(ask_all(start_model(folders, cls), text_input="How many?"))
    assert "".join(pieces) + _text(final, "text_output") == "Two cats."
    assert not any("\ufffd" in p for p in pieces) and pieces[0] == "T"


def test_a_stop_string_cuts_the_reply_and_the_generator_is_still_drained(folders):
    cls = runner()
    pieces, final = pieces_and_final(ask_all(start_model(folders, cls), text_input="Hi", stop_words=["sits"]))
    assert "".join(pieces) + _text(final, "text_output") == "A cat é "
    assert _text(final, "finish_reason") == "stop"
    assert cls.last.model.drained and cls.last.model.yielded == len("A cat é sits.".encode())


def test_a_reply_that_takes_every_token_it_may_says_length(folders):
    cls = runner(script="A cat sits on a warm sofa.")
    pieces, final = pieces_and_final(ask_all(start_model(folders, cls), text_input="Hi", max_tokens=np.int32(5)))
    assert "".join(pieces) + _text(final, "text_output") == "A cat" and _text(final, "finish_reason") == "length"


def test_an_executor_error_mid_stream_ends_the_request_with_an_error_response(folders):
    cls = runner(fail_after=3)
    sent = ask_all(start_model(folders, cls), text_input="Hi")
    *pieces, (error, flags) = sent
    assert [r.tensors["text_output"].decode() for r, _ in pieces] == ["A", " c"] and flags == 1
    assert error.error == "The runner failed: Executor error: the request ran out of KV cache blocks"


def test_a_decoding_failure_drains_the_generator_before_the_error_response(folders):
    cls = runner(tokenizer_fails_on=2)
    sent = ask_all(start_model(folders, cls), text_input="Hi")
    assert [r.tensors.get("text_output") for r, _ in sent[:-1]] == [b"A"]
    assert "the tokenizer broke" in sent[-1][0].error and sent[-1][1] == 1
    assert cls.last.model.drained


def test_a_client_that_goes_away_gets_nothing_more_and_the_generator_is_drained(folders):
    cls = runner()
    sent = ask_all(start_model(folders, cls), cancel_after=2, text_input="Hi")
    assert [(r.tensors["text_output"] if r else None, f) for r, f in sent] == [(b"A", 0), (b" c", 0), (None, 1)]
    assert cls.last.model.drained


# ---- who keeps the whole reply -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("overrides", "why"), [
    ({"decoder_llm": False, "model_type": "nougat"}, "nougat has an encoder-decoder LLM"),
    ({"decoder_llm": False, "model_type": "blip2-t5"}, "blip2-t5 has an encoder-decoder LLM"),
    ({"model_type": "mllama"}, "mllama's LLM call is its own"),
])
def test_enc_dec_llms_and_mllama_send_the_whole_reply(folders, overrides, why):
    cls = runner(**overrides)
    model = start_model(folders, cls)
    assert model.plan is None
    [(final, flags)] = ask_all(model, text_input="Hi")
    assert flags == 1 and _text(final, "text_output") == "whole reply to Hi"
    assert _text(final, "reply_mode") == "whole reply" and cls.last.model.calls == []
    from runner_lib.eras import load_eras
    from runner_lib.streaming import stream_plan

    assert stream_plan(cls.last, model.era, load_eras()).startswith(why)


def test_a_cpp_end_to_end_session_or_an_llm_runner_without_streaming_keeps_the_whole_reply(folders):
    from runner_lib.eras import load_eras
    from runner_lib.streaming import stream_plan

    model = start_model(folders, runner(), runner_settings="session=cpp")
    assert model.plan is None and "session is cpp; streaming is confirmed only in cpp_llm_only or python" in \
        stream_plan(model.runner, model.era, load_eras())
    model.finalize()

    class NoStreaming:
        def generate(self, batch_input_ids, *, max_new_tokens=1, end_id=None, **kwargs): ...

    cls = runner()
    model = start_model(folders, cls)
    cls.last.model = NoStreaming()
    assert stream_plan(cls.last, model.era, load_eras()) == \
        "its LLM runner (NoStreaming) takes no streaming parameter"
    model.finalize()


def test_the_016_runner_keeps_the_whole_reply_even_with_a_streaming_llm_runner(folders):
    class Middle(Release016):
        decoder_llm, session, script, per_yield, fail_after = True, "cpp_llm_only", "x", 1, None

        def __init__(self, args):
            super().__init__(args)
            self.model = FakeModelRunnerCpp(self)

    model = start_model(folders, Middle)
    assert model.era.name == "0.16" and model.plan is None
    [(final, _)] = ask_all(model, text_input="Hi")
    assert _text(final, "reply_mode") == "whole reply" and model.runner.model.calls == []
