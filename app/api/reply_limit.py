"""How many replies the app streams at once (the OpenAI-compatible API's slots and Gradio's queue workers).

Without --concurrency the limit is the served model's batch (its max_batch_size, read once at start), at least
DEFAULT_REPLY_LIMIT: the app should pass on every chat the server can batch, and a server with a small batch
queues the rest itself (as Triton's and vLLM's schedulers do), so the app refuses only past a GPU server's usual
batch. Past the limit the OpenAI-compatible API answers 429 with a sentence naming it.
"""

from __future__ import annotations

from app.core.constants import DEFAULT_CONCURRENCY
from app.deployments.base import Deployment

DEFAULT_REPLY_LIMIT = DEFAULT_CONCURRENCY


def served_reply_limit(batch_size: int | None, floor: int = DEFAULT_REPLY_LIMIT) -> int:
    """The default limit for a served batch of `batch_size` requests (None: the server did not say)."""
    return max(batch_size or 0, floor)


def reply_limit(configured: int | None, deployment: Deployment) -> int:
    """The --concurrency the app was given, else the served model's batch (at least the floor)."""
    return configured if configured else served_reply_limit(deployment.batch_size())
