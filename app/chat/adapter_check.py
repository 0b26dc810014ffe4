"""Is the adapter really applied? Compare its first tokens on a fixed probe prompt with the base model's.

Servers sometimes answer with the base model although an adapter was asked for (a bad path, a rank or
module mismatch, an adapter that changes nothing). The check compares the first-token log-probabilities
when the server gives them, else the greedy first tokens; identical means the adapter changed nothing.

Where a text probe cannot show an adapter (InternLM-XComposer2 answers only about an image, and its Partial LoRA
acts only at image rows) both probes ask about a small picture drawn with Pillow. The model's own adapter, on in
every reply, has no reply without it to compare with: the check says so instead of calling it not applied.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from app.chat.messages import (
    MSG_APPLIED,
    MSG_CHECK_BUILT_IN,
    MSG_CHECK_FAILED,
    MSG_NOT_APPLIED,
    PROBE_TEXT,
    PROBE_WITH_PICTURE,
)
from app.core.errors import ChatError
from app.deployments.base import Probe
from app.vision.probe_picture import probe_picture

PROBE_PROMPT = "What is the capital of France? Answer in one sentence."
PROBE_IMAGE_PROMPT = "What is in this picture? Answer in one sentence."
PROBE_TOKENS = 4
LOGPROB_TOLERANCE = 1e-3  # log-probabilities closer than this count as the same


@dataclass(frozen=True)
class CheckResult:
    """The outcome for one adapter: applied, not applied, or None when the check could not run."""

    adapter: str
    applied: bool | None
    message: str


def same_output(base: Probe, tuned: Probe) -> tuple[bool, str]:
    """Whether two probes agree, and what was compared."""
    if base.logprobs and tuned.logprobs:
        first, other = base.logprobs[0], tuned.logprobs[0]
        same = first.keys() == other.keys() and all(abs(first[t] - other[t]) <= LOGPROB_TOLERANCE for t in first)
        return same, "first-token log-probabilities"
    return base.tokens == tuned.tokens, "greedy first tokens"


def probe_request(deployment) -> tuple[str, tuple[bytes, ...]]:
    """The probe's prompt and images: text alone, or a question about the probe picture where the deployment needs
    one to show an adapter."""
    if deployment.probe_needs_image():
        return PROBE_IMAGE_PROMPT, (probe_picture(),)
    return PROBE_PROMPT, ()


def check_adapter_applied(deployment, adapter: str) -> CheckResult:
    """Probe the base model and the adapter on the deployment; never raises."""
    if adapter == deployment.built_in_adapter():
        return CheckResult(adapter, None, MSG_CHECK_BUILT_IN.format(adapter=adapter))
    try:
        prompt, images = probe_request(deployment)
        base = deployment.probe(None, prompt, PROBE_TOKENS, images)
        tuned = deployment.probe(adapter, prompt, PROBE_TOKENS, images)
    except ChatError as exc:
        return CheckResult(adapter, None, MSG_CHECK_FAILED.format(adapter=adapter, error=exc))
    same, how = same_output(base, tuned)
    template = MSG_NOT_APPLIED if same else MSG_APPLIED
    probe = PROBE_WITH_PICTURE if images else PROBE_TEXT
    return CheckResult(adapter, not same, template.format(adapter=adapter, how=how, probe=probe))


class AdapterChecks:
    """One check per (deployment, adapter), started on the adapter's first use and run in the background."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[tuple, CheckResult] = {}
        self._running: dict[tuple, threading.Event] = {}

    @staticmethod
    def _key(deployment, adapter: str) -> tuple:
        return deployment.kind, deployment.url, deployment.model, adapter

    def start(self, deployment, adapter: str) -> None:
        """Run the check unless it ran (or runs) already for this deployment and adapter."""
        key = self._key(deployment, adapter)
        with self._lock:
            if key in self._results or key in self._running:
                return
            done = self._running[key] = threading.Event()
        threading.Thread(target=self._run, args=(deployment, adapter, key, done), daemon=True,
                         name=f"adapter-check-{adapter}").start()

    def _run(self, deployment, adapter: str, key: tuple, done: threading.Event) -> None:
        try:
            result = check_adapter_applied(deployment, adapter)
            with self._lock:
                if result.applied is not None:  # a check that could not run is tried again on the next use
                    self._results[key] = result
        finally:  # whatever happened, a reply waiting for the check stops waiting
            with self._lock:
                self._running.pop(key, None)
            done.set()

    def run_now(self, deployment, adapter: str) -> CheckResult:
        """Check again, now (the Adapters tab's button)."""
        result = check_adapter_applied(deployment, adapter)
        if result.applied is not None:
            with self._lock:
                self._results[self._key(deployment, adapter)] = result
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
