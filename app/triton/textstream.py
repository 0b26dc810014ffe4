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
