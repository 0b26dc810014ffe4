"""Values from API callers, checked before use: wrong types get a plain message, not a traceback; the chat
panel's Greedy / Sample choice as the values the server needs."""

from __future__ import annotations

import math
import secrets
from dataclasses import replace

from app.chat.messages import MSG_NOT_A_NUMBER_FIELD, MSG_NOT_TEXT
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams

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
