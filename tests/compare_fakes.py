"""Fakes for Compare's unit tests (the run, the Gradio endpoint, the command): a deployment that records what it
opens, streams that answer word by word (one word a token, up to the request's max_tokens; a request that continues a
reply gets the words after those it was given, each after a space, as a model's tokens come), and streams that run
until cancelled."""

from __future__ import annotations

import threading

from app.core.errors import InvalidImage
from app.deployments.base import DeploymentDefaults, StreamDefaults, check_adapter_name


class WordStream(StreamDefaults):
    def __init__(self, text: str, max_tokens: int | None = None, continues: str = ""):
        self.text, self.cancelled, self.chunks, self.time_to_first_token = "", False, 0, None
        self.finish_reason: str | None = None
        self._parts, self._limit = text.split(" ")[len(continues.split()):], max_tokens
        self._continues = bool(continues)

    def __iter__(self):
        return self

    def __next__(self):
        if self.chunks == len(self._parts):
            self.finish_reason = "stop"
            raise StopIteration
        if self._limit is not None and self.chunks >= self._limit:
            self.finish_reason = "length"
            raise StopIteration
        part = self._parts[self.chunks]
        self.text += " " + part if self._continues else part + " "
        self.chunks += 1
        return part

    def cancel(self):
        self.cancelled = True


class EndlessStream(WordStream):
    """One word, then nothing until cancelled (a long reply whose reader may go away)."""

    def __init__(self, text: str, max_tokens: int | None = None, continues: str = ""):
        super().__init__(text, max_tokens, continues)
        self._stop = threading.Event()

    def __next__(self):
        if self.chunks == 0:
            return super().__next__()
        self._stop.wait(30)
        raise StopIteration

    def cancel(self):
        self.cancelled = True
        self._stop.set()


class RecordingDeployment(DeploymentDefaults):
    """Takes any image but 'broken.png' and the adapters in `known`; records every request it opens. `endless`:
    every reply runs until cancelled; `replies`: a column's reply by adapter (None: the base model), else "reply
    from <adapter>"."""

    kind, url, model = "fake", "fake://", "fake"

    def __init__(self, known: tuple[str, ...] = ("pirate", "french", "formal", "terse"), endless: bool = False,
                 replies: dict[str | None, str] | None = None):
        self.requests, self.checked, self.opened = [], [], []
        self.known, self.endless, self.replies = known, endless, replies or {}

    def check_images(self, files, text):
        self.checked.append(list(files))
        if any(str(f).endswith("broken.png") for f in files):
            raise InvalidImage("broken.png is truncated or damaged and cannot be read completely.")

    def adapter_names(self):
        return list(self.known)

    def open_reply(self, request):
        check_adapter_name(request.adapter, self.known)
        self.requests.append(request)
        text = self.replies.get(request.adapter, f"reply from {request.adapter or 'base'}")
        stream = (EndlessStream if self.endless else WordStream)(text,
                                                                 request.sampling.max_tokens, request.continues)
        self.opened.append(stream)
        return stream
