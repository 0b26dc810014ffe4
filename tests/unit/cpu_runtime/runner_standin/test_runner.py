"""StandInRunner: a family's own output (twin_output) is bounded by max_new_tokens as a generation is; the late
surface the runner model streams through (decoder_llm per family, session, preprocess's fake ids and prompt table,
model.generate's snapshots of the LLM's answer or of the family's output)."""

import json
from types import SimpleNamespace

import pytest
import torch
from PIL import Image

from cpu_runtime.runner_standin.runner import StandInRunner
from setup.catalog.family_data import family_files
from setup.cpu.runner_demo import runner_families
from setup.repo.runner_checks import recorded_model_types


class WordTokenizer:
    def encode(self, text, add_special_tokens=False):
        return text.split(" ")

    def decode(self, ids):
        return " ".join(ids)


def runner_with_output(text: str) -> StandInRunner:
    runner = object.__new__(StandInRunner)  # the parts generate() reads, without model folders
    runner.args, runner.tokenizer, runner._raw = SimpleNamespace(batch_size=2), WordTokenizer(), []
    runner.output = lambda pictures, prompt: text
    return runner


def test_a_family_output_longer_than_max_new_tokens_is_cut_there():
    reply = runner_with_output("one two three four five six").generate("", "", ["frame"], None, 4)
    assert reply == [["one two three four"], ["one two three four"]]


def test_a_family_output_within_max_new_tokens_is_whole():
    assert runner_with_output("a red circle").generate("", "", ["frame"], None, 3) == [["a red circle"]] * 2


# ---- the late surface the runner model streams through (preprocess, model, decoder_llm, session) -------------------
BYTES_VOCAB, EOS = 258, 256  # a byte tokenizer: ids 0-255 are bytes
ENC_DEC = {"nougat", "deplot", "blip2-t5"}  # their runners' LLMs are encoder-decoder ([V]: t5, nougat, pix2struct)


class ByteTokenizer:
    eos_token_id = EOS

    def encode(self, text, add_special_tokens=False):
        return list(text.encode())

    def decode(self, ids, skip_special_tokens=False):
        return bytes(int(i) for i in ids if int(i) < 256).decode("utf-8", "replace")

    def batch_decode(self, rows, skip_special_tokens=False):
        return [self.decode(row) for row in rows]

    def apply_chat_template(self, *args, **kwargs):
        raise ValueError("no chat template")  # the stand-in then gives the ids alone


class Wired(StandInRunner):
    """The stand-in's own logic with the model folder's wiring replaced: a byte LLM answering `ANSWER`, a vision step
    seeing the picture as 'rows', a family output of `OUTPUT` (None: the LLM answers)."""

    ANSWER, OUTPUT = "It is a cat.", None

    def load_llm(self, folder):
        self.given = []
        given, answer = self.given, self.ANSWER

        class LLM:
            vocab_size, max_seq_len = BYTES_VOCAB, 512

            def tokens(self, ids, max_new_tokens, end_id, sampling):
                given.append(list(ids))
                yield from list(answer.encode())[:max_new_tokens]

        return LLM(), ByteTokenizer()

    def load_vision(self, folder):
        return lambda images: list(b"rows")

    def load_output(self, folder):
        return lambda pictures, prompt: self.OUTPUT


def wired(tmp_path, family: str, **attrs) -> Wired:
    folder = tmp_path / family
    (folder / "vision").mkdir(parents=True)
    (folder / "llm").mkdir()
    model_type = sorted(recorded_model_types(family))[0]
    config = {"builder_config": {"model_type": model_type},
              "runner_format": {"family": family, **family_files()[family]["runner_format"]}}
    (folder / "vision" / "config.json").write_text(json.dumps(config))
    args = SimpleNamespace(engine_dir=str(folder), batch_size=1, temperature=1.0, top_k=1, top_p=0.0,
                           repetition_penalty=1.0, video_num_frames=None, session="cpp_llm_only")
    return type("Twin", (Wired,), attrs)(args)


def streamed_text(runner: StandInRunner, question: str, max_new_tokens: int = 128) -> list[str]:
    """What each snapshot adds, through setup_inputs, preprocess and model.generate as the runner model calls them."""
    _, pre, post, image, _, vision, audio, _ = runner.setup_inputs(question, Image.new("RGB", (64, 48)), None)
    ids, lengths, ptuning, _, _ = runner.preprocess(pre, post, image, vision, audio)
    table = torch.stack([ptuning[0]]).view(len(ids), -1, ptuning[0].shape[-1])
    stream = runner.model.generate(ids, prompt_table=table, prompt_tasks="0", max_new_tokens=max_new_tokens,
                                   end_id=EOS, pad_id=0, streaming=True, return_dict=True, output_sequence_lengths=True)
    start, texts = int(lengths[0]), []
    for snapshot in stream:
        texts.append(runner.tokenizer.batch_decode(
            snapshot["output_ids"][0, 0:1, start:int(snapshot["sequence_lengths"][0][0])])[0])
    return texts


@pytest.mark.parametrize("family", sorted(runner_families()))
def test_decoder_llm_and_the_llm_runner_per_family(tmp_path, family):
    runner = wired(tmp_path, family)
    assert runner.decoder_llm is (family not in ENC_DEC), family
    assert (runner.model is None) is (family in ENC_DEC)  # EncDecModelRunner upstream: no streaming surface
    assert runner.session == "cpp_llm_only" and runner.cpp_e2e is False


def test_preprocess_puts_fake_ids_where_the_picture_goes_and_the_rows_in_the_table(tmp_path):
    runner = wired(tmp_path, "neva")
    _, pre, post, image, _, vision, audio, _ = runner.setup_inputs("What is it?", Image.new("RGB", (64, 48)), None)
    ids, lengths, ptuning, features, last = runner.preprocess(pre, post, image, vision, audio)
    row = ids[0].tolist()
    fake = [i for i in row if i >= BYTES_VOCAB]
    assert fake == [BYTES_VOCAB + i for i in range(4)] and lengths.tolist() == [len(row)]
    assert ptuning[0].view(-1).tolist() == list(b"rows") and len(ptuning) == 3 and last is None
    assert features.shape == (1, 4, 1)
    assert runner.model.scripted is None
    assert wired(tmp_path / "f", "fuyu").preprocess(pre, post, image, vision, audio)[2][0].shape == (4, 1)


def test_the_llm_streams_its_answer_to_the_family_prompt_with_the_picture_rows(tmp_path):
    runner = wired(tmp_path, "llava-next")
    texts = streamed_text(runner, "What is it?")
    assert texts[0] == "I" and texts[-1] == "It is a cat." and len(texts) == len("It is a cat.")
    [given] = runner.given
    assert bytes(given).count(b"rows") == 1 and b"What is it?" in bytes(given)  # the table's rows, looked up
    whole = wired(tmp_path / "w", "llava-next")
    assert whole.run("What is it?", Image.new("RGB", (64, 48)), None, 64)[1] == [["It is a cat."]]
    assert whole.given == [given]  # the whole reply's prompt is the same


def test_a_family_output_is_played_back_token_by_token(tmp_path):
    output = "An image of<phrase> a cat</phrase><object><patch_index_0044></object>"
    runner = wired(tmp_path, "kosmos-2", OUTPUT=output)
    texts = streamed_text(runner, "")
    assert texts[-1] == output and len(texts) == len(output.encode()) and runner.given == []
    assert streamed_text(wired(tmp_path / "b", "kosmos-2", OUTPUT=output), "", max_new_tokens=5)[-1] == "An im"


def test_video_neva_refuses_one_picture_as_the_release_does(tmp_path):
    """Every release's video-neva decodes the path load_test_data returns inside run(); a picture falls to the
    never-set self.video_path (ertkonuk/TensorRT-LLM@201135e5 multimodal_model_runner.py:337-360, 1038)."""
    runner = wired(tmp_path, "video-neva")
    with pytest.raises(AttributeError, match="no attribute 'video_path'"):
        streamed_text(runner, "What is it?")
