"""Is the adapter really applied? Compare its first tokens on a fixed probe prompt with the base model's.

Servers sometimes answer with the base model although an adapter was asked for (a bad path, a rank or
module mismatch, an adapter that changes nothing). The check compares the first-token log-probabilities
when the server gives them, else the greedy first tokens; identical means the adapter changed nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from app.core.errors import ChatError
from app.deployments.base import Probe

PROBE_PROMPT = "What is the capital of France? Answer in one sentence."
PROBE_TOKENS = 4
LOGPROB_TOLERANCE = 1e-3  # log-probabilities closer than this count as the same
MSG_APPLIED = "Adapter '{adapter}' is applied: its first tokens differ from the base model's ({how})."
MSG_NOT_APPLIED = ("⚠️ Adapter '{adapter}' does not seem to be applied: on the probe prompt its {how} are identical "
                   "to the base model's. Check the adapter's files and how the server loaded it.")
MSG_CHECK_FAILED = "The adapter check for '{adapter}' could not run: {error}"


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


def check_adapter_applied(deployment, adapter: str) -> CheckResult:
    """Probe the base model and the adapter on the deployment; never raises."""
    try:
        base = deployment.probe(None, PROBE_PROMPT, PROBE_TOKENS)
        tuned = deployment.probe(adapter, PROBE_PROMPT, PROBE_TOKENS)
    except ChatError as exc:
        return CheckResult(adapter, None, MSG_CHECK_FAILED.format(adapter=adapter, error=exc))
    same, how = same_output(base, tuned)
    template = MSG_NOT_APPLIED if same else MSG_APPLIED
    return CheckResult(adapter, not same, template.format(adapter=adapter, how=how))


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
        result = check_adapter_applied(deployment, adapter)
        with self._lock:
            if result.applied is not None:  # a check that could not run is tried again on the next use
                self._results[key] = result
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
