"""Turn streamed text_output chunks into clean text deltas.

Two server styles exist: deltas (the ensemble; each chunk holds the bytes of new tokens only) and
accumulated text (BLS with accumulate_tokens; each chunk holds everything so far). Either way the
bytes go through an incremental UTF-8 decoder, so a character split over two chunks is held back
until it is complete instead of turning into U+FFFD.
"""

from __future__ import annotations

import codecs


class IncrementalText:
    """Feed raw text_output chunks; get back only the new, complete text."""

    def __init__(self, accumulated: bool):
        self.accumulated = accumulated
        self._bytes = b""
        self._consumed = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.text = ""

    def feed(self, chunk: bytes | str) -> str:
        data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
        if self.accumulated:
            if not data.startswith(self._bytes[: self._consumed]):
                return ""  # the server rewrote earlier text (e.g. blanked a stop word); keep what we showed
            self._bytes = data
        else:
            self._bytes += data
        new = self._bytes[self._consumed :]
        self._consumed = len(self._bytes)
        delta = self._decoder.decode(new)
        self.text += delta
        return delta

    def finish(self) -> str:
        """Flush: an incomplete trailing character becomes U+FFFD (the stream really ended mid-character)."""
        delta = self._decoder.decode(b"", final=True)
        self.text += delta
        return delta


class StopWordTrim:
    """Ends the text before the first stop word, as OpenAI-style replies do.

    The TensorRT-LLM backend stops at a stop word but keeps it in text_output; this holds back any tail
    that could be the start of a stop word until the next delta settles it, and drops the stop word.
    """

    def __init__(self, stop_words: list[str] | tuple[str, ...] | None):
        self.words = [w for w in (stop_words or ()) if w]
        self.text = ""
        self.stopped = False
        self._pending = ""

    def feed(self, delta: str) -> str:
        """The part of `delta` (with what was held back) that is surely not a stop word."""
        if self.stopped or not delta:
            return ""
        if not self.words:
            self.text += delta
            return delta
        self._pending += delta
        found = [i for i in (self._pending.find(w) for w in self.words) if i >= 0]
        if found:
            release, self._pending, self.stopped = self._pending[: min(found)], "", True
        else:
            hold = max((k for w in self.words for k in range(1, len(w)) if self._pending.endswith(w[:k])), default=0)
            cut = len(self._pending) - hold
            release, self._pending = self._pending[:cut], self._pending[cut:]
        self.text += release
        return release

    def finish(self) -> str:
        """At the end of the stream: what was held back was not a stop word after all."""
        release, self._pending = ("" if self.stopped else self._pending), ""
        self.text += release
        return release
