"""'Is the adapter really applied?': verdicts from log-probabilities where the probes carry them ("not applied" only
then), "inconclusive" from greedy text alone, the adapter's training prompts as probes, the reply warning only for
a definite "not applied" the reply does not contradict; and where a text probe cannot tell: on InternLM-XComposer2
(answers only about an image; its Partial LoRA acts only at image rows) both probes ask about a small picture drawn
with Pillow, and the model's own adapter is reported as part of the model rather than "not applied"."""

from __future__ import annotations

import io
import threading

import pytest
from PIL import Image

from app.adapters.registry import AdapterRegistry
from app.chat import messages as CM
from app.chat.adapter_check import (
    LOGPROB_TOLERANCE,
    MAX_TRAINING_PROBES,
    PROBE_IMAGE_PROMPT,
    PROBE_PROMPT,
    AdapterChecks,
    Verdict,
    check_adapter_applied,
    compare_probes,
)
from app.chat.turns import check_note
from app.deployments.base import Probe
from app.deployments.messages import MSG_OWN_ADAPTER_ONLY
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from app.vision.probe_picture import probe_picture
from setup.lora.dataset import Example
from setup.lora.record import TrainingPair, write_record
from tests.lora_helpers import TINY, write_peft
from tests.xcomposer2_fakes import FakeClient, FakeStream, xc2_registry


class TextDeployment:
    """A deployment a text probe shows adapters on; records each probe."""

    kind, url, model = "fake", "fake://", "fake"

    def __init__(self, pirate_text: str = "Arr, Paris"):
        self.probes, self.pirate_text = [], pirate_text

    def built_in_adapter(self):
        return None

    def probe_needs_image(self):
        return False

    def probe(self, adapter, prompt, tokens, images=()):
        self.probes.append((adapter, prompt, tuple(images)))
        return Probe(tokens=(self.pirate_text if adapter else "Paris",))


class LoraTextClient(FakeClient):
    """Answers by the adapter task the request carries, as a server applying it would."""

    def stream(self, prompt, params, extra):
        self.sent.append((prompt, dict(extra)))
        return FakeStream((f"In the picture (task {extra.get('lora_task_id')})",))


@pytest.fixture
def xc2(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))
    registry = xc2_registry(tmp_path / "adapters")

    def make(**parameters):
        client = LoraTextClient(**parameters)
        return TritonEngineDeployment(client, registry, template="internlm2", model_adapter="xc2-partial"), client
    return make


def test_the_picture_is_small_and_the_same_every_time():
    data = probe_picture()
    assert data is probe_picture() and len(data) < 4096
    assert Image.open(io.BytesIO(data)).size == (224, 224)


def test_a_text_deployment_is_probed_with_text_alone():
    deployment = TextDeployment()
    result = check_adapter_applied(deployment, "pirate")
    assert result.verdict is Verdict.APPLIED and result.applied is True
    assert result.message == CM.MSG_APPLIED.format(adapter="pirate", probe=CM.PROBE_TEXT, how=CM.HOW_TOKENS)
    assert deployment.probes == [(None, PROBE_PROMPT, ()), ("pirate", PROBE_PROMPT, ())]


class LogprobDeployment(TextDeployment):
    """Both probes answer the same greedy text; their log-probabilities are the ones given (None: not returned)."""

    def __init__(self, base: tuple | None, tuned: tuple | None, text: str = "The capital"):
        super().__init__()
        self.lps, self.text = {None: base, "pirate": tuned}, text

    def probe(self, adapter, prompt, tokens, images=()):
        self.probes.append((adapter, prompt, tuple(images)))
        return Probe(tokens=(self.text,), chosen_logprobs=self.lps[adapter])


def test_the_same_greedy_tokens_with_other_log_probabilities_are_an_applied_adapter():
    result = check_adapter_applied(LogprobDeployment((-0.5, -1.2), (-0.5, -0.9)), "pirate")
    assert result.verdict is Verdict.APPLIED and result.applied is True
    assert result.message == CM.MSG_APPLIED.format(adapter="pirate", probe=CM.PROBE_TEXT, how=CM.HOW_LOGPROBS)


def test_equal_log_probabilities_on_every_probe_are_not_applied():
    near = (-0.5, -1.2 + LOGPROB_TOLERANCE / 2)
    result = check_adapter_applied(LogprobDeployment((-0.5, -1.2), near), "pirate")
    assert result.verdict is Verdict.NOT_APPLIED and result.applied is False
    assert result.message == CM.MSG_NOT_APPLIED.format(adapter="pirate", probe=CM.PROBE_TEXT,
                                                       tolerance=LOGPROB_TOLERANCE)


class Replies:
    """The app's replies in flight, as LiveReplies.in_progress counts them; each probe is logged with the count."""

    def __init__(self, count: int):
        self.count = count

    def __call__(self) -> int:
        return self.count


def test_the_probes_wait_until_the_apps_replies_have_ended():
    """vLLM's CPU build applied the chat's adapter to a base probe batched beside it: the probes wait for quiet."""
    replies = Replies(1)
    deployment = LogprobDeployment((-0.5, -1.2), (-0.5, -1.2))
    seen = []
    probe = deployment.probe
    deployment.probe = lambda *args, **kw: (seen.append(replies.count), probe(*args, **kw))[1]
    checks = AdapterChecks(replies_in_flight=replies, quiet_wait=30)
    timer = threading.Timer(0.3, lambda: setattr(replies, "count", 0))  # the chat's reply ends
    timer.start()
    result = checks.check(deployment, "pirate")
    timer.join()
    assert seen and set(seen) == {0} and result.verdict is Verdict.NOT_APPLIED


def test_a_not_applied_found_while_other_replies_stream_is_inconclusive():
    deployment = LogprobDeployment((-0.5, -1.2), (-0.5, -1.2))
    result = AdapterChecks(replies_in_flight=Replies(2), quiet_wait=0.2).check(deployment, "pirate")
    assert result.verdict is Verdict.INCONCLUSIVE and result.applied is None
    assert result.message == CM.MSG_CHECK_CROWDED.format(adapter="pirate")
    applied = LogprobDeployment((-0.5, -1.2), (-0.5, -0.9))  # a difference shows however busy the server is
    assert AdapterChecks(replies_in_flight=Replies(2), quiet_wait=0.2).check(applied, "pirate").applied is True


@pytest.mark.parametrize(("base", "tuned"), [(None, None), ((-0.5,), None), ((-0.5,), (-0.5, -1.0))])
def test_the_same_greedy_text_without_comparable_log_probabilities_is_inconclusive(base, tuned):
    result = check_adapter_applied(LogprobDeployment(base, tuned), "pirate")
    assert result.verdict is Verdict.INCONCLUSIVE and result.applied is None
    assert result.message == CM.MSG_INCONCLUSIVE.format(adapter="pirate", probe=CM.PROBE_TEXT)
    assert "⚠️" not in result.message


def test_top_log_probabilities_are_compared_at_every_position_not_only_the_first():
    base = Probe(("The", " capital"), ({"The": -1.0, "A": -2.0}, {" capital": -0.3, " city": -1.5}))
    later = Probe(("The", " capital"), ({"The": -1.0001, "A": -2.0}, {" capital": -0.6, " city": -1.1}))
    same = Probe(("The", " capital"), ({"The": -1.0001, "A": -2.0}, {" capital": -0.3, " city": -1.5}))
    assert compare_probes(base, later).differs and compare_probes(base, later).how == CM.HOW_LOGPROBS
    assert not compare_probes(base, same).differs and compare_probes(base, same).by_logprobs
    other = compare_probes(base, Probe(("Arr",), ({"Arr": -0.1, "The": -3.0},)))
    assert other.differs and other.how == CM.HOW_TOKENS
    text_only = compare_probes(Probe(("Paris is",)), Probe(("Paris is",)))
    assert not text_only.differs and not text_only.by_logprobs


HOWDY = [TrainingPair("Say hello.", "Howdy, partner!"), TrainingPair("Greet me.", "Well howdy there, partner!"),
         TrainingPair("Hi!", "Howdy! Pull up a chair, partner."), TrainingPair("Good morning.", "Mornin', partner!")]


class TrainedDeployment(TextDeployment):
    """The adapter answers its training prompts like its training data and the fixed probe like the base model."""

    def probe(self, adapter, prompt, tokens, images=()):
        self.probes.append((adapter, prompt, tuple(images)))
        trained = {p.prompt: p.response for p in HOWDY}
        return Probe(tokens=(trained[prompt] if adapter and prompt in trained else "Hello! How",))


def test_an_adapter_the_app_trained_is_probed_with_its_training_prompts():
    deployment = TrainedDeployment()
    result = check_adapter_applied(deployment, "tour-tmp", HOWDY)
    assert result.verdict is Verdict.APPLIED
    assert result.message == CM.MSG_APPLIED.format(adapter="tour-tmp", how=CM.HOW_TOKENS,
                                                   probe=CM.PROBE_TRAINING_ONE.format(prompt="Say hello."))
    assert deployment.probes == [(None, "Say hello.", ()), ("tour-tmp", "Say hello.", ())]  # the first one shows it
    assert PROBE_PROMPT not in [prompt for _, prompt, _ in deployment.probes]


def test_at_most_a_few_training_prompts_are_probed_and_none_showing_a_difference_stays_inconclusive():
    deployment = TextDeployment(pirate_text="Paris")
    result = check_adapter_applied(deployment, "tour-tmp", HOWDY)
    assert [prompt for _, prompt, _ in deployment.probes] == [p.prompt for p in HOWDY[:MAX_TRAINING_PROBES]
                                                              for _ in (None, "tour-tmp")]
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.message == CM.MSG_INCONCLUSIVE.format(adapter="tour-tmp", probe=CM.PROBE_TRAINING.format(count=3))


def test_the_checks_read_an_adapters_training_pairs_from_its_folder(tmp_path):
    write_peft(tmp_path / "tour-tmp", shape=TINY, seed=3)
    write_record(tmp_path / "tour-tmp", [Example.from_pair(p.prompt, p.response) for p in HOWDY])
    write_peft(tmp_path / "found", shape=TINY, seed=4)  # not trained by the app: no record
    checks, deployment = AdapterChecks(AdapterRegistry(tmp_path).training_pairs), TrainedDeployment()
    assert checks.run_now(deployment, "tour-tmp").verdict is Verdict.APPLIED
    assert deployment.probes[0] == (None, "Say hello.", ())
    deployment.probes.clear()
    assert checks.run_now(deployment, "found").verdict is Verdict.INCONCLUSIVE  # the France probe: same text
    assert deployment.probes == [(None, PROBE_PROMPT, ()), ("found", PROBE_PROMPT, ())]


class Ctx:
    """What check_note reads of the app context."""

    def __init__(self, deployment, training=()):
        self.deployment = deployment
        self.adapter_checks = AdapterChecks(lambda _name: training)


def test_the_reply_warning_comes_only_with_a_definite_not_applied():
    unapplied = Ctx(LogprobDeployment((-0.5,), (-0.5,), text="Paris"))
    unapplied.adapter_checks.run_now(unapplied.deployment, "pirate")
    assert check_note(unapplied, "pirate", "Tell me a joke.", "Why did the chicken...").startswith("⚠️")
    weak = Ctx(LogprobDeployment(None, None, text="Paris"))
    weak.adapter_checks.run_now(weak.deployment, "pirate")
    assert check_note(weak, "pirate", "Tell me a joke.", "Why did the chicken...") == ""


def test_no_warning_on_a_reply_that_shows_the_adapter_itself():
    ctx = Ctx(LogprobDeployment((-0.5,), (-0.5,), text="Hello! How"), training=HOWDY)
    assert ctx.adapter_checks.run_now(ctx.deployment, "pirate").verdict is Verdict.NOT_APPLIED
    assert check_note(ctx, "pirate", "Say hello.", "Howdy, partner!") == ""  # its training answer
    assert check_note(ctx, "pirate", "Hey there", "Well howdy there, partner! Good to see you.") == ""
    assert check_note(ctx, "pirate", "Say hello.", "Ahoy, matey!") == ""  # not the base model's answer here
    assert check_note(ctx, "pirate", "Say hello.", "Hello! How can I help you today?").startswith("⚠️")


def test_xcomposer2_probes_ask_about_the_picture_and_tell_a_combined_adapter_apart(xc2):
    deployment, client = xc2(combines_adapters="true")
    assert deployment.probe_needs_image()
    result = check_adapter_applied(deployment, "pirate")
    assert result.applied is True, result.message
    assert result.message == CM.MSG_APPLIED.format(adapter="pirate", probe=CM.PROBE_WITH_PICTURE, how=CM.HOW_TOKENS)
    assert len(client.sent) == 2
    for prompt, extra in client.sent:
        assert prompt.count("<ImageHere>") == 1 and PROBE_IMAGE_PROMPT in prompt
        assert extra["image_input"].shape == (1, 3, 490, 490)


def test_the_models_own_adapter_is_said_to_be_part_of_it_not_unapplied(xc2):
    deployment, client = xc2()
    result = check_adapter_applied(deployment, "xc2-partial")
    assert result.applied is None and result.message == CM.MSG_CHECK_BUILT_IN.format(adapter="xc2-partial")
    assert client.sent == []  # nothing to compare with, so nothing is asked


def test_an_adapter_the_deployment_cannot_combine_is_refused_in_the_checks_sentence(xc2):
    deployment, _ = xc2()
    result = check_adapter_applied(deployment, "pirate")
    refusal = MSG_OWN_ADAPTER_ONLY.format(family="InternLM-XComposer2", own="'xc2-partial'", adapter="pirate")
    assert result.applied is None and result.message == CM.MSG_CHECK_FAILED.format(adapter="pirate", error=refusal)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the crash, on purpose
def test_a_check_that_crashes_does_not_keep_replies_waiting():
    class Broken(TextDeployment):
        def probe(self, adapter, prompt, tokens, images=()):
            raise RuntimeError("bug")

    checks, deployment = AdapterChecks(), Broken()
    checks.start(deployment, "pirate")
    assert checks.result(deployment, "pirate", wait=5.0) is None
    assert not checks._running  # the next use runs it again
