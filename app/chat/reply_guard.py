"""Every reply ends with a sentence: a failure that is not a ChatError (a bug, a template that refuses the
messages, a broken connection library) becomes ReplyFailed where the reply opens or streams, with its
traceback in the log, so the chat, Compare and both APIs end the reply with a message instead of hanging."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from app.chat.messages import MSG_REPLY_FAILED
from app.core.errors import ChatError, ReplyFailed
from app.core.streams import ForwardedStream

log = logging.getLogger(__name__)
T = TypeVar("T")


def reply_failed(exc: Exception) -> ReplyFailed:
    """The ChatError that says `exc` ended the reply (logged with its traceback once, here)."""
    log.error("A reply failed on an unexpected error", exc_info=exc)
    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else "no details"
    return ReplyFailed(MSG_REPLY_FAILED.format(kind=type(exc).__name__, detail=detail))


def opened(open_reply: Callable[[], T]) -> GuardedStream:
    """`open_reply()`'s stream, guarded; ReplyFailed if opening it fails on anything but a ChatError."""
    try:
        return GuardedStream(open_reply())
    except ChatError:
        raise
    except Exception as exc:  # noqa: BLE001 - turned into a sentence, traceback logged
        raise reply_failed(exc) from exc


class GuardedStream(ForwardedStream):
    """A reply stream whose failures are ChatErrors; everything else (text, cancel, the declared figures) is the
    stream's."""

    def __init__(self, stream):
        self._guarded_stream = stream

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self._guarded_stream)
        except (StopIteration, ChatError):
            raise
        except Exception as exc:  # noqa: BLE001 - turned into a sentence, traceback logged
            raise reply_failed(exc) from exc

    def cancel(self) -> None:
        self._guarded_stream.cancel()

    def _inner(self):
        return self._guarded_stream
