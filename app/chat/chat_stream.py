"""The one reply stream the chat's logic hands out (app.chat.turns.open_stream: the chat, Compare, the Arena, both
APIs): the deployment's stream, its failures ended with a sentence (app/chat/reply_guard.py), counted for the Server
tab (app/chat/live.py) until it ends, is cancelled or is dropped. The declared figures are the deployment stream's."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from app.chat.live import LiveReplies
from app.chat.reply_guard import reply_failed
from app.core.errors import ChatError
from app.core.streams import ForwardedStream


class ChatStream(ForwardedStream):
    def __init__(self, stream, replies: LiveReplies):
        self._stream, self._replies = stream, replies
        self._key = replies.opened()
        self._seen = 0  # chunks already counted
        self._lora_counted = False
        # A reader that drops the stream without finishing it must not count as a reply in progress forever.
        weakref.finalize(self, replies.ended, self._key)

    @classmethod
    def open(cls, open_reply: Callable[[], object], replies: LiveReplies) -> ChatStream:
        """open_reply()'s stream as a ChatStream; ReplyFailed if opening fails on anything but a ChatError."""
        try:
            stream = open_reply()
        except ChatError:
            raise
        except Exception as exc:  # noqa: BLE001 - turned into a sentence, traceback logged
            raise reply_failed(exc) from exc
        return cls(stream, replies)

    def __iter__(self):
        return self

    def __next__(self) -> str:
        try:
            piece = next(self._stream)
        except (StopIteration, ChatError):
            self._end()
            raise
        except Exception as exc:  # noqa: BLE001 - turned into a sentence, traceback logged
            self._end()
            raise reply_failed(exc) from exc
        except BaseException:  # the reader's thread is going away: the reply is over for it
            self._end()
            raise
        count = max(0, self._stream.chunks - self._seen)
        self._seen += count
        self._replies.progressed(self._key, count, self._stream.time_to_first_token)
        return piece

    def cancel(self) -> None:
        try:
            self._stream.cancel()
        finally:
            self._end()

    def _end(self) -> None:
        if not self._lora_counted:  # once per reply: what its request sent of the adapter, for the Server tab
            self._lora_counted = True
            self._replies.sent_lora(self._stream.lora_bytes_sent, self._stream.weights_sent)
        self._replies.ended(self._key)

    def _inner(self):
        return self._stream
