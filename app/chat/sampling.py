"""Values from API callers, checked before use: wrong types get a plain message, not a traceback; the chat
panel's Sampling settings as one value (ChatSampling) and its Greedy / Sample choice as the values the server
needs."""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, replace

from app.chat.messages import MSG_NOT_A_NUMBER_FIELD, MSG_NOT_TEXT
from app.core.conversation import ContextPolicy
from app.core.errors import InvalidRequest
from app.core.sampling import SAMPLING_LIMITS, SamplingParams

INTEGER_FIELDS = ("max_tokens", "top_k", "seed")


def _number(name: str, value: object) -> int | float:
    label = name.replace("_", " ")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidRequest(MSG_NOT_A_NUMBER_FIELD.format(name=label, value=value))
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        raise InvalidRequest(MSG_NOT_A_NUMBER_FIELD.format(name=label, value=value)) from None
    if name in INTEGER_FIELDS and not (isinstance(number, float) and not math.isfinite(number)):
        if isinstance(number, float) and not number.is_integer():
            raise InvalidRequest(f"{label} must be a whole number, got {value!r}.")
        return int(number)
    return float(number)


def sampling_params(**raw: object) -> SamplingParams:
    """SamplingParams from caller values (numbers or numeric strings); InvalidRequest with a plain message."""
    return SamplingParams(**{name: _number(name, value) for name, value in raw.items()})


def require_text(value: object) -> str:
    """A text argument from an API caller as it is (None: ""); InvalidRequest when it is not a string (a list,
    a number) rather than turning it into text."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidRequest(MSG_NOT_TEXT.format(kind=type(value).__name__))
    return value


GREEDY, SAMPLE = "greedy", "sample"
DECODING_MODES = (GREEDY, SAMPLE)
WHOLE_DISTRIBUTION = 1.0  # top-p that keeps every token: sampling shaped by temperature alone


def panel_sampling(mode: str, max_tokens: object, temperature: object, top_k: object, top_p: object,
                   repetition_penalty: object, seed: object | None, presence_penalty: object = None,
                   frequency_penalty: object = None) -> SamplingParams:
    """The panel's settings as the server reads them. TensorRT-LLM decodes greedily unless top-k > 1 or
    top-p > 0, whatever the temperature, so "greedy" sends top-k 1 and "sample" always sends a setting that
    samples (top-k 0 or 1 means off; top-p 0 becomes the whole distribution). No seed: a fresh one per reply,
    so Regenerate gives a new reply."""
    if mode not in DECODING_MODES:
        raise InvalidRequest(f"Decoding must be one of {', '.join(DECODING_MODES)}, got {mode!r}.")
    fresh_seed = seed is None or (isinstance(seed, str) and not seed.strip())
    penalties = {name: value for name, value in (("presence_penalty", presence_penalty),
                                                 ("frequency_penalty", frequency_penalty)) if value is not None}
    params = sampling_params(max_tokens=max_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                             repetition_penalty=repetition_penalty,
                             seed=secrets.randbelow(2**31) if fresh_seed else seed, **penalties)
    if mode == GREEDY:
        return replace(params, top_k=1, top_p=0.0)
    top_k = params.top_k if params.top_k > 1 else 0
    return replace(params, top_k=top_k, top_p=params.top_p or WHOLE_DISTRIBUTION)


SAME_ADAPTER = "same adapter"  # the context mode that sends each adapter only the turns it answered


@dataclass(frozen=True)
class ChatSampling:
    """The chat panel's Sampling settings as one value, in the order of its widgets (`from_values` takes them so);
    checked by `params()`, which draws a fresh seed per reply when none is set."""

    decoding: str = GREEDY
    max_tokens: object = SAMPLING_LIMITS["max_tokens"][0]
    temperature: object = SAMPLING_LIMITS["temperature"][0]
    top_k: object = SAMPLING_LIMITS["top_k"][0]
    top_p: object = SAMPLING_LIMITS["top_p"][0]
    repetition_penalty: object = SAMPLING_LIMITS["repetition_penalty"][0]
    seed: object = ""
    presence_penalty: object = SAMPLING_LIMITS["presence_penalty"][0]
    frequency_penalty: object = SAMPLING_LIMITS["frequency_penalty"][0]
    system_prompt: str = ""
    context_mode: str = SAME_ADAPTER
    keep_pictures: bool = False

    @classmethod
    def from_values(cls, *values: object) -> ChatSampling:
        """From the widgets' values in the order of the fields."""
        return cls(*values)

    def params(self) -> SamplingParams:
        """The values the server reads; InvalidRequest in a sentence for a bad one."""
        return panel_sampling(self.decoding, self.max_tokens, self.temperature, self.top_k, self.top_p,
                              self.repetition_penalty, self.seed, self.presence_penalty, self.frequency_penalty)

    def policy(self) -> ContextPolicy:
        """Which earlier turns the model is sent."""
        return ContextPolicy(same_adapter=self.context_mode == SAME_ADAPTER, keep_pictures=bool(self.keep_pictures))
