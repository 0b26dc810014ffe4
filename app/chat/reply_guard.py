"""Every reply ends with a sentence: a failure that is not a ChatError (a bug, a template that refuses the
messages, a broken connection library) becomes ReplyFailed where the reply opens or streams, with its
traceback in the log, so the chat, Compare and both APIs end the reply with a message instead of hanging (the
stream that applies it: app/chat/chat_stream.py)."""

from __future__ import annotations

import logging

from app.chat.messages import MSG_REPLY_FAILED
from app.core.errors import ReplyFailed

log = logging.getLogger(__name__)


def reply_failed(exc: Exception) -> ReplyFailed:
    """The ChatError that says `exc` ended the reply (logged with its traceback once, here)."""
    log.error("A reply failed on an unexpected error", exc_info=exc)
    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else "no details"
    return ReplyFailed(MSG_REPLY_FAILED.format(kind=type(exc).__name__, detail=detail))
