"""Values from API callers, checked before use: wrong types get a plain message, not a traceback."""

from __future__ import annotations

import math

from app.core.constants import MSG_NOT_A_NUMBER_FIELD, MSG_NOT_TEXT
from app.core.errors import InvalidRequest
from app.triton.client import SamplingParams

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


def message_text(value: object) -> str:
    """The caller's message as text; InvalidRequest when it is not a string."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidRequest(MSG_NOT_TEXT.format(kind=type(value).__name__))
    return value
