"""Sampling settings every surface shares: their defaults and bounds, and the validated value object."""

from __future__ import annotations

from dataclasses import dataclass

from app.core.errors import InvalidRequest

# name: (default, min, max); the chat panel's sliders, the APIs' checks and SamplingParams use these
SAMPLING_LIMITS = {
    "max_tokens": (256, 1, 4096),
    "temperature": (0.7, 0.01, 2.0),
    "top_k": (0, 0, 1000),
    "top_p": (0.0, 0.0, 1.0),
    "repetition_penalty": (1.0, 0.5, 2.0),
    # OpenAI's meaning, on generated tokens only (a code copied from the prompt is not penalised): presence
    # subtracts once from every token already generated, frequency once per time it was generated. 0.5 and 0.5
    # keep the greedy demo model out of loops on the ten questions of tests/integration/test_cpu_perception.py
    # (presence 0.5 alone still let a 200-token reply about a rocket say one sentence four times).
    "presence_penalty": (0.5, -2.0, 2.0),
    "frequency_penalty": (0.5, -2.0, 2.0),
    "seed": (0, 0, 2**63 - 1),
}

# TensorRT-LLM's MultimodalModelRunner hands its LLM only top_k, top_p, temperature and repetition_penalty (facts:
# multimodal_runner_facts.md §1, the runner's generate): the presence and frequency penalties above cannot reach
# it. When a request sets them and leaves its repetition penalty at 1, the runner kind sends this repetition
# penalty in their place and says so in the reply's figures. It counts the prompt too, so it stays mild: 1.2 kept
# the greedy runner twins from naming the colours their picture's description gave, 1.05 kept them out of loops
# on the three questions of tests/integration/test_runner_twins.py.
REPETITION_FOR_PENALTIES = 1.05


@dataclass(frozen=True)
class SamplingParams:
    """Generation settings; validated before any network call."""

    max_tokens: int = SAMPLING_LIMITS["max_tokens"][0]
    temperature: float = SAMPLING_LIMITS["temperature"][0]
    top_k: int = SAMPLING_LIMITS["top_k"][0]
    top_p: float = SAMPLING_LIMITS["top_p"][0]
    repetition_penalty: float = SAMPLING_LIMITS["repetition_penalty"][0]
    presence_penalty: float = SAMPLING_LIMITS["presence_penalty"][0]
    frequency_penalty: float = SAMPLING_LIMITS["frequency_penalty"][0]
    seed: int = SAMPLING_LIMITS["seed"][0]

    def __post_init__(self) -> None:
        for name, (_, low, high) in SAMPLING_LIMITS.items():
            value = getattr(self, name)
            if value is None or not low <= value <= high:
                raise InvalidRequest(f"{name.replace('_', ' ')} must be between {low} and {high}, got {value}.")
