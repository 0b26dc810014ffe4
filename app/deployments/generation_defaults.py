"""A model folder's own sampling defaults (its generation_config.json), for requests that leave them out.

As vLLM's `--generation-config auto` (its default): the fields of the model's generation_config.json that a
sampler reads become the defaults of an OpenAI request that does not send them, field by field (the request's
value, else the model's, else OpenAI's). `do_sample` is not read (vLLM does not either), and `max_new_tokens` is
left to the app's own limit. A value outside the app's bounds (app.core.sampling) is left out; temperature 0 is
kept, meaning greedy as in a request.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from app.core.sampling import SAMPLING_LIMITS

FILE_NAME = "generation_config.json"
# generation_config.json keys read, as vLLM reads them (less min_p, which the app has no setting for)
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "repetition_penalty", "presence_penalty", "frequency_penalty")
LOG = logging.getLogger(__name__)


def _valid(name: str, value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    _, low, high = SAMPLING_LIMITS[name]
    return low <= value <= high or (name == "temperature" and value == 0)


def read_generation_defaults(folder: str | Path | None) -> dict[str, float]:
    """{field: value} from `folder`/generation_config.json; {} without a folder, a file or sampling fields."""
    if not folder:
        return {}
    path = Path(folder) / FILE_NAME
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        LOG.warning("%s is not readable JSON (%s); requests use OpenAI's defaults", path, exc)
        return {}
    if not isinstance(config, dict):
        return {}
    defaults = {}
    for name in SAMPLING_KEYS:
        value = config.get(name)
        if value is None:
            continue
        if _valid(name, value):
            defaults[name] = value
        else:
            LOG.warning("%s: %s %r is outside the app's bounds; left out", path, name, value)
    return defaults
