"""'Is the adapter really applied?' against the real tritonserver and CPU engine. On both demo kinds the probe
carries log-probabilities and pirate is applied. An adapter trained in the app on three "howdy" pairs answers like
its training data although its greedy first tokens on the fixed France probe are the base model's: the check tells
it apart by log-probabilities there, probes it with its own training prompts, and its replies carry no warning."""

from __future__ import annotations

import math

import pytest

from app.chat import messages as CM
from app.chat.adapter_check import PROBE_PROMPT, PROBE_TOKENS, Verdict, check_adapter_applied
from app.chat.turns import stream_reply
from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from setup.lora.dataset import examples_from_pairs
from setup.lora.record import TrainingPair
from setup.lora.train_settings import default_settings
from tests.lora_training_helpers import app_on_own_adapters

HOWDY_PAIRS = [["Say hello.", "Howdy, partner!"], ["Greet me.", "Well howdy there, partner!"],
               ["Hi!", "Howdy! Pull up a chair, partner."]]
TRAIN_STEPS = 4  # enough to answer "Howdy, partner!"; at 8 steps (learning rate 0.002) it starts on France too
TRAIN_TIMEOUT = 600.0  # 3 pairs x 4 steps on one core: well under a minute idle, more on a loaded machine


def test_pirate_is_applied_on_each_demo_kind(demo_app):
    ctx, _ = demo_app
    base = ctx.deployment.probe(None, "What is the capital of France?", 4)
    pirate = ctx.deployment.probe("pirate", "What is the capital of France?", 4)
    assert base.tokens and pirate.tokens and base.tokens != pirate.tokens
    for probe in (base, pirate):  # the server returned them, one per token (engine) or a running sum (llmapi)
        assert probe.chosen_logprobs and all(math.isfinite(v) and v <= 0 for v in probe.chosen_logprobs), probe
    assert check_adapter_applied(ctx.deployment, "pirate").applied is True


@pytest.fixture
def howdy(tmp_path, triton, cpu_model_dir):
    """The app on its own adapters folder with 'tour-tmp' trained there as a user would (three pairs, a few steps
    at the default learning rate)."""
    with app_on_own_adapters(tmp_path, triton) as (ctx, _url, _folder):
        settings = default_settings().with_changes(steps=TRAIN_STEPS)
        job = ctx.training.start("tour-tmp", ctx.training.default_base, examples_from_pairs(HOWDY_PAIRS), settings)
        assert job.wait(TRAIN_TIMEOUT) and job.state == "done", job.message
        yield ctx


def test_an_adapter_that_answers_like_its_training_data_is_not_called_unapplied(howdy):
    ctx = howdy
    assert ctx.adapters.training_pairs("tour-tmp") == tuple(TrainingPair(*p) for p in HOWDY_PAIRS)
    base = ctx.deployment.probe(None, PROBE_PROMPT, PROBE_TOKENS)
    tuned = ctx.deployment.probe("tour-tmp", PROBE_PROMPT, PROBE_TOKENS)
    assert base.tokens == tuned.tokens, (base, tuned)  # the situation reported: the France probe cannot show it
    assert base.chosen_logprobs != tuned.chosen_logprobs

    fixed = check_adapter_applied(ctx.deployment, "tour-tmp")  # the fixed probe alone: by log-probabilities
    assert fixed.verdict is Verdict.APPLIED, fixed.message
    assert fixed.message == CM.MSG_APPLIED.format(adapter="tour-tmp", probe=CM.PROBE_TEXT, how=CM.HOW_LOGPROBS)

    result = ctx.adapter_checks.run_now(ctx.deployment, "tour-tmp")  # as the app runs it: its training prompts
    assert result.verdict is Verdict.APPLIED, result.message
    assert "its training prompt" in result.message

    history = Conversation.asking("Say hello.")
    reply = list(stream_reply(ctx, "s", history, SamplingParams(max_tokens=12, top_k=1), adapter="tour-tmp"))
    text = reply[-1].reply.text + reply[-1].reply.current.note
    assert "Howdy" in text and "does not seem to be applied" not in text and "⚠️" not in text, text
