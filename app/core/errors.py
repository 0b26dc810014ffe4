"""Typed errors with plain messages, mapped from Triton/gRPC error text (one place for all of them)."""

from __future__ import annotations

import re


class ChatError(Exception):
    """Base class: `str(error)` is a message fit to show a user."""


class ServerUnreachable(ChatError):
    pass


class ModelNotReady(ChatError):
    pass


class DecoupledMismatch(ChatError):
    pass


class InputTooLong(ChatError):
    pass


class InvalidRequest(ChatError):
    pass


class LoraNotInCache(ChatError):
    def __init__(self, message: str, task_id: int | None = None):
        super().__init__(message)
        self.task_id = task_id


class LoraCacheFull(ChatError):
    pass


class StreamStalled(ChatError):
    pass


class Cancelled(ChatError):
    pass


class ReplyFailed(ChatError):
    """A reply ended by an error the app did not expect (app.chat.reply_guard); the log has its traceback."""


_RULES: list[tuple[re.Pattern, type[ChatError], str]] = [
    (re.compile(r"LoRA task (\d+) not found in cache", re.I), LoraNotInCache,
     "The server no longer holds adapter task {0}; it has to be sent again."),
    (re.compile(r"(Cache is full|PEFT Cache is full)", re.I), LoraCacheFull,
     "The server's LoRA cache is full of adapters in use; try again when a request finishes."),
    (re.compile(r"(Prompt length \(\d+\) exceeds maximum input length \(\d+\)[^\n]*)", re.I), InputTooLong,
     "{0} Shorten the conversation or clear it."),
    (re.compile(r"(leaves no room under max_seq_len[^\n]*)", re.I), InputTooLong,
     "The conversation is too long for this engine ({0}). Clear it and start again."),
    (re.compile(r"(Streaming is only supported if model is deployed using decoupled mode|"
                r"doesn't support models with decoupled transaction policy)", re.I), DecoupledMismatch,
     "The deployment's streaming setting does not match its models: {0}."),
    (re.compile(r"Request for unknown model: '([^']+)'", re.I), ModelNotReady,
     "The server has no model named '{0}'."),
    (re.compile(r"'([^']+)' is not (ready|found)|model is not ready|unavailable model", re.I), ModelNotReady,
     "The model is not ready on the server yet."),
    (re.compile(r"Server is stopping", re.I), ServerUnreachable, "The Triton server is shutting down."),
    (re.compile(r"(failed to connect|connection refused|unavailable|deadline exceeded|"
                r"Socket closed|failed to establish)", re.I), ServerUnreachable,
     "The Triton server cannot be reached ({0})."),
    (re.compile(r"CANCELLED|cancelled", re.I), Cancelled, "The request was cancelled."),
]


def parse_error(text: str) -> ChatError:
    """Map raw server error text to a typed error with a plain message."""
    text = str(text).strip()
    for pattern, kind, template in _RULES:
        match = pattern.search(text)
        if match:
            message = template.format(*(g for g in match.groups() if g is not None), text)
            if kind is LoraNotInCache:
                return LoraNotInCache(message, int(match.group(1)))
            return kind(message)
    return InvalidRequest(f"The server refused the request: {text}")


class InvalidImage(ChatError):
    """An uploaded file cannot be used as an image; the message says why and what to do."""


class TooManyImages(InvalidImage):
    """More pictures than the deployment takes in one message; `limit` is how many it takes (None: not said)."""

    def __init__(self, message: str, limit: int | None = None):
        super().__init__(message)
        self.limit = limit


class InvalidVideo(InvalidImage):
    """An uploaded video cannot be used (a kind of InvalidImage: every surface refuses it the same way)."""


class InvalidDocument(InvalidImage):
    """An uploaded PDF cannot be used (a kind of InvalidImage: every surface refuses it the same way)."""


class TextOnlyDeployment(ChatError):
    """Images were attached, but the deployed model declares no image input."""
