"""Is the adapter really applied? Compare its greedy replies on a few probe prompts with the base model's.

Servers sometimes answer with the base model although an adapter was asked for (a bad path, a rank or module
mismatch, an adapter that changes nothing). The probes are the adapter's own training prompts when this app trained
it (recorded in its folder), else one fixed prompt. On each probe the greedy tokens are compared, and where they are
the same, their log-probabilities (when the server returns them): an adapter shifts log-probabilities long before
it changes a greedy token. The verdict:

- applied: some probe's tokens or log-probabilities differ from the base model's;
- not applied: log-probabilities were compared on every probe and all were equal within LOGPROB_TOLERANCE;
- inconclusive: the texts were the same but there were no log-probabilities to compare (a weak comparison, which
  says nothing against the adapter);
- unknown: the check could not run, or cannot tell (below).

Where a text probe cannot show an adapter (InternLM-XComposer2 answers only about an image, and its Partial LoRA
acts only at image rows) both probes ask about a small picture drawn with Pillow. The model's own adapter, on in
every reply, has no reply without it to compare with: the check says so instead of calling it not applied.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.chat.messages import (
    HOW_LOGPROBS,
    HOW_TOKENS,
    MSG_APPLIED,
    MSG_CHECK_BUILT_IN,
    MSG_CHECK_CROWDED,
    MSG_CHECK_FAILED,
    MSG_INCONCLUSIVE,
    MSG_NOT_APPLIED,
    PROBE_TEXT,
    PROBE_TRAINING,
    PROBE_TRAINING_ONE,
    PROBE_WITH_PICTURE,
)
from app.core.errors import ChatError
from app.deployments.base import Probe
from app.vision.probe_picture import probe_picture
from setup.lora.record import TrainingPair

PROBE_PROMPT = "What is the capital of France? Answer in one sentence."
PROBE_IMAGE_PROMPT = "What is in this picture? Answer in one sentence."
PROBE_TOKENS = 4
QUIET_WAIT_SECONDS = 60.0  # the longest a check waits for the app's replies to end before it probes
QUIET_POLL_SECONDS = 0.1
MAX_TRAINING_PROBES = 3  # a check stays cheap: at most this many training prompts, PROBE_TOKENS tokens each
LOGPROB_TOLERANCE = 1e-3  # log-probabilities closer than this count as the same
MIN_ANSWER_START = 10  # a reply this long (characters) that starts a training answer counts as giving it


class Verdict(enum.Enum):
    APPLIED = "applied"
    NOT_APPLIED = "not applied"
    INCONCLUSIVE = "inconclusive"
    UNKNOWN = "unknown"  # the check could not run, or cannot tell (the model's own adapter)


@dataclass(frozen=True)
class ProbeAnswer:
    """One probe prompt and the base model's greedy text on it."""

    prompt: str
    base_text: str


@dataclass(frozen=True)
class CheckResult:
    """The outcome for one adapter, with what a reply needs to tell whether it shows the adapter itself."""

    adapter: str
    verdict: Verdict
    message: str
    probes: tuple[ProbeAnswer, ...] = ()
    training_answers: tuple[str, ...] = ()

    @property
    def applied(self) -> bool | None:
        """True (applied), False (not applied), None (inconclusive or unknown)."""
        return {Verdict.APPLIED: True, Verdict.NOT_APPLIED: False}.get(self.verdict)


@dataclass(frozen=True)
class Comparison:
    """How one probe's adapter reply compares with the base model's."""

    differs: bool
    by_logprobs: bool  # log-probabilities were compared (a strong comparison), not just the text
    how: str


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= LOGPROB_TOLERANCE


def compare_probes(base: Probe, tuned: Probe) -> Comparison:
    """Different greedy tokens differ; the same tokens are compared by their log-probabilities where both probes
    carry them (every position's top few, else the chosen tokens' own), else they count as the same text only."""
    if base.tokens != tuned.tokens:
        return Comparison(True, False, HOW_TOKENS)
    if base.logprobs and tuned.logprobs and len(base.logprobs) == len(tuned.logprobs):
        same = all(a.keys() == b.keys() and all(_close(a[t], b[t]) for t in a)
                   for a, b in zip(base.logprobs, tuned.logprobs, strict=True))
        return Comparison(not same, True, HOW_LOGPROBS)
    chosen, other = base.chosen_logprobs, tuned.chosen_logprobs
    if chosen and other and len(chosen) == len(other):
        same = all(_close(a, b) for a, b in zip(chosen, other, strict=True))
        return Comparison(not same, True, HOW_LOGPROBS)
    return Comparison(False, False, HOW_TOKENS)


def probe_request(deployment) -> tuple[str, tuple[bytes, ...]]:
    """The fixed probe's prompt and images: text alone, or a question about the probe picture where the deployment
    needs one to show an adapter."""
    if deployment.probe_needs_image():
        return PROBE_IMAGE_PROMPT, (probe_picture(),)
    return PROBE_PROMPT, ()


@dataclass(frozen=True)
class ProbePlan:
    """The prompts a check sends (with their images) and how its messages name them."""

    prompts: tuple[str, ...]
    images: tuple[bytes, ...]
    named: str  # all the probes, as a message names them
    from_training: bool

    def name_of(self, prompt: str) -> str:
        """How a message names the one probe that showed the adapter."""
        return PROBE_TRAINING_ONE.format(prompt=shortened(prompt)) if self.from_training else self.named


def shortened(prompt: str, limit: int = 60) -> str:
    """A prompt as a message quotes it: on one line, cut to `limit` characters."""
    text = " ".join(prompt.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def probe_plan(deployment, training: Sequence[TrainingPair]) -> ProbePlan:
    """The adapter's first training prompts when there are some (and the deployment takes text probes), else the
    fixed probe."""
    prompts = tuple(dict.fromkeys(p.prompt for p in training))[:MAX_TRAINING_PROBES]
    if prompts and not deployment.probe_needs_image():
        named = (PROBE_TRAINING_ONE.format(prompt=shortened(prompts[0])) if len(prompts) == 1
                 else PROBE_TRAINING.format(count=len(prompts)))
        return ProbePlan(prompts, (), named, True)
    prompt, images = probe_request(deployment)
    return ProbePlan((prompt,), images, PROBE_WITH_PICTURE if images else PROBE_TEXT, False)


def check_adapter_applied(deployment, adapter: str, training: Sequence[TrainingPair] = ()) -> CheckResult:
    """Probe the base model and the adapter on the deployment (with the adapter's training prompts, when known);
    never raises."""
    if adapter == deployment.built_in_adapter():
        return CheckResult(adapter, Verdict.UNKNOWN, MSG_CHECK_BUILT_IN.format(adapter=adapter))
    answers = tuple(p.response for p in training)
    plan = probe_plan(deployment, training)
    seen, strong = [], True
    try:
        for prompt in plan.prompts:
            base = deployment.probe(None, prompt, PROBE_TOKENS, plan.images)
            tuned = deployment.probe(adapter, prompt, PROBE_TOKENS, plan.images)
            seen.append(ProbeAnswer(prompt, base.text))
            result = compare_probes(base, tuned)
            if result.differs:
                message = MSG_APPLIED.format(adapter=adapter, probe=plan.name_of(prompt), how=result.how)
                return CheckResult(adapter, Verdict.APPLIED, message, tuple(seen), answers)
            strong = strong and result.by_logprobs
    except ChatError as exc:
        message = MSG_CHECK_FAILED.format(adapter=adapter, error=exc)
        return CheckResult(adapter, Verdict.UNKNOWN, message, tuple(seen), answers)
    if strong:
        message = MSG_NOT_APPLIED.format(adapter=adapter, probe=plan.named, tolerance=LOGPROB_TOLERANCE)
        return CheckResult(adapter, Verdict.NOT_APPLIED, message, tuple(seen), answers)
    message = MSG_INCONCLUSIVE.format(adapter=adapter, probe=plan.named)
    return CheckResult(adapter, Verdict.INCONCLUSIVE, message, tuple(seen), answers)


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


def gives_training_answer(reply: str, answers: Sequence[str]) -> bool:
    """Whether `reply` holds one of `answers` (or is the start of one, cut short by the token limit)."""
    text = _plain(reply)
    return any(answer in text or (len(text) >= MIN_ANSWER_START and answer.startswith(text))
               for answer in map(_plain, answers) if answer)


def reply_shows_adapter(result: CheckResult, prompt: str, reply: str) -> bool:
    """Whether a reply itself shows the adapter at work: it gives one of the adapter's training answers, or on a
    probe prompt it is not what the base model answered there."""
    if not _plain(reply):
        return False
    if gives_training_answer(reply, result.training_answers):
        return True
    asked, text = _plain(prompt), _plain(reply)
    return any(_plain(p.prompt) == asked and not text.startswith(_plain(p.base_text)) for p in result.probes)


TrainingPairs = Callable[[str], Sequence[TrainingPair]]


class AdapterChecks:
    """One check per (deployment, adapter), started on the adapter's first use and run in the background.

    `training_pairs(name)` gives an adapter's recorded training pairs (the registry's), used as its probes."""

    def __init__(self, training_pairs: TrainingPairs | None = None, replies_in_flight: Callable[[], int] | None = None,
                 quiet_wait: float = QUIET_WAIT_SECONDS) -> None:
        self._training_pairs = training_pairs or (lambda _name: ())
        self._in_flight = replies_in_flight or (lambda: 0)
        self._quiet_wait = quiet_wait
        self._lock = threading.Lock()
        self._results: dict[tuple, CheckResult] = {}
        self._running: dict[tuple, threading.Event] = {}

    @staticmethod
    def _key(deployment, adapter: str) -> tuple:
        return deployment.kind, deployment.url, deployment.model, adapter

    def check(self, deployment, adapter: str) -> CheckResult:
        """Run the check with the adapter's training pairs (not remembered), once the app's replies have ended.

        A server can apply an adapter to every request of a batch that holds one with it: vLLM's CPU build answered
        the base probe like the adapter while the chat's reply with that adapter streamed beside it, and the check
        called a working adapter not applied. So the probes wait (up to `quiet_wait` seconds) until none of the
        app's replies streams, and a "not applied" found while others still streamed counts as inconclusive."""
        deadline = time.monotonic() + self._quiet_wait
        while self._in_flight() > 0 and time.monotonic() < deadline:
            time.sleep(QUIET_POLL_SECONDS)
        crowded = self._in_flight() > 0
        result = check_adapter_applied(deployment, adapter, self._training_pairs(adapter))
        if result.verdict is Verdict.NOT_APPLIED and (crowded or self._in_flight() > 0):
            return replace(result, verdict=Verdict.INCONCLUSIVE,
                           message=MSG_CHECK_CROWDED.format(adapter=adapter))
        return result

    def start(self, deployment, adapter: str) -> None:
        """Run the check unless it ran (or runs) already for this deployment and adapter."""
        key = self._key(deployment, adapter)
        with self._lock:
            if key in self._results or key in self._running:
                return
            done = self._running[key] = threading.Event()
        threading.Thread(target=self._run, args=(deployment, adapter, key, done), daemon=True,
                         name=f"adapter-check-{adapter}").start()

    def _remember(self, key: tuple, result: CheckResult) -> None:
        if result.verdict is not Verdict.UNKNOWN:  # a check that could not run is tried again on the next use
            with self._lock:
                self._results[key] = result

    def _run(self, deployment, adapter: str, key: tuple, done: threading.Event) -> None:
        try:
            self._remember(key, self.check(deployment, adapter))
        finally:  # whatever happened, a reply waiting for the check stops waiting
            with self._lock:
                self._running.pop(key, None)
            done.set()

    def run_now(self, deployment, adapter: str) -> CheckResult:
        """Check again, now (the Adapters tab's button, and after a training)."""
        result = self.check(deployment, adapter)
        self._remember(self._key(deployment, adapter), result)
        return result

    def result(self, deployment, adapter: str, wait: float = 0.0) -> CheckResult | None:
        """The finished check (waiting up to `wait` seconds for a running one), else None."""
        key = self._key(deployment, adapter)
        with self._lock:
            running = self._running.get(key)
        if running is not None and wait > 0:
            running.wait(wait)
        with self._lock:
            return self._results.get(key)
