"""The line under a reply: tokens, generation speed after the first token, time to first token, model, kind."""

from dataclasses import replace

from app.chat.figures import ReplyFigures, figures_text, measure, with_partial_warning
from app.core.conversation import Conversation, ReplyVersion, Turn
from app.core.streams import StreamDefaults
from app.deployments.messages import RUNNER_KIND
from setup.lora.adapter_facts import read_adapter
from setup.lora.audit import audit, engine_target
from tests.lora_helpers import write_engine_config, write_peft


def stream_with(**figures) -> StreamDefaults:
    """A finished stream with `figures`, and the declared defaults for the rest (as every stream class has)."""
    stream = StreamDefaults()
    for name, value in figures.items():
        setattr(stream, name, value)
    return stream


def test_tokens_per_second_counts_after_the_first_token():
    figures = ReplyFigures(tokens=11, seconds=1.5, first_token=0.5)
    assert figures.tokens_per_second == 10.0  # 10 tokens in the second after the first one
    assert ReplyFigures(tokens=1, seconds=0.4, first_token=0.4).tokens_per_second is None
    assert ReplyFigures(tokens=0, seconds=2.0, first_token=None).tokens_per_second is None


def test_measure_reads_the_stream():
    stream = stream_with(chunks=5, time_to_first_token=0.25)
    figures = measure(stream, started=100.0, ended=101.25)
    assert figures == ReplyFigures(tokens=5, seconds=1.25, first_token=0.25)
    assert figures.tokens_per_second == 4.0


def test_text_names_everything_a_person_looks_for():
    text = figures_text(ReplyFigures(tokens=41, seconds=2.12, first_token=0.12), None, "Triton engine topology")
    assert text == "41 tokens · 20.0 tokens/s · first token 0.12 s · base model · Triton engine topology"
    assert figures_text(ReplyFigures(1, 0.3, 0.3), "pirate", "K") == "1 token · first token 0.30 s · pirate · K"
    assert figures_text(ReplyFigures(0, 5.0, None), None, "K") == "0 tokens · base model · K"


def test_the_adapter_data_a_request_sent_is_shown():
    first = measure(stream_with(chunks=3, time_to_first_token=0.1, lora_bytes_sent=8 + 3 * 1024 * 1024,
                                    weights_sent=True, adapter="xc2-partial"), started=0.0, ended=1.0)
    later = measure(stream_with(chunks=3, time_to_first_token=0.1, lora_bytes_sent=8, weights_sent=False,
                                    adapter="xc2-partial"), started=0.0, ended=1.0)
    assert "· xc2-partial · LoRA 3.0 MB sent (weights) · K" in figures_text(first, None, "K")
    assert "· xc2-partial · LoRA 8 B sent (task id only) · K" in figures_text(later, None, "K")
    assert "LoRA" not in figures_text(ReplyFigures(3, 1.0, 0.1), None, "K")  # no adapter: nothing sent


def test_the_kinds_own_figures_follow_and_a_whole_reply_shows_no_token_count():
    runner = stream_with(chunks=1, time_to_first_token=2.5, whole_reply=True,
                             details_line=lambda: "finished: stop · whole reply · runner era late · prompt: fuyu")
    figures = measure(runner, started=10.0, ended=12.5)
    assert figures_text(figures, None, "Triton runner topology") == (
        "2.50 s · base model · Triton runner topology · finished: stop · whole reply · runner era late · prompt: fuyu")
    assert figures_text(figures, None, RUNNER_KIND).startswith("2.50 s · base model · Triton runner topology · ")
    llmapi = stream_with(chunks=3, time_to_first_token=0.5, details_line=lambda: "finished: stop · KV cache: 3 blocks")
    assert figures_text(measure(llmapi, started=0.0, ended=1.5), None, "K") == (
        "3 tokens · 2.0 tokens/s · first token 0.50 s · base model · K · finished: stop · KV cache: 3 blocks")


def test_a_partial_adapter_is_warned_of_once_per_conversation(tmp_path):
    engine = engine_target(write_engine_config(tmp_path / "engine", modules=("attn_q", "attn_v")))
    partial = audit(read_adapter(write_peft(tmp_path / "a", rank=4, modules=("q_proj", "k_proj"))), engine)
    whole = replace(partial, dropped=())
    asked = Conversation.asking("Hi")
    line = with_partial_warning("3 tokens · a", partial, "a", asked)
    assert line == ("3 tokens · a · ⚠️ a is applied only in part: 60% of its weights (k_proj dropped; see the "
                    "Adapters tab)")
    assert with_partial_warning("3 tokens · a", whole, "a", asked) == "3 tokens · a"
    warned = asked.with_turn(Turn.reply(ReplyVersion(text="Hello", adapter="a", figures=line)))
    assert with_partial_warning("5 tokens · a", partial, "a", warned.with_turn(Turn.user("More"))) == "5 tokens · a"
