"""Text deltas of a streamed reply: each snapshot's decode of everything generated so far, turned into the new text
since the last one. The runner strips its final text and the model cuts it at the first stop string, so the deltas
add up to that text: leading whitespace is never sent, and trailing whitespace, a character whose bytes are not all
generated yet (U+FFFD at the end) and a tail that may begin a stop string wait for the next snapshot."""

from __future__ import annotations

import os

INCOMPLETE = "\ufffd"  # what a decoder gives for a character whose remaining bytes come with the next token


def held_back(text: str, stop: tuple[str, ...]) -> int:
    """How many characters at the end of `text` could be the start of a stop string."""
    longest = 0
    for word in stop:
        for size in range(min(len(word) - 1, len(text)), longest, -1):
            if text.endswith(word[:size]):
                longest = size
                break
    return longest


class StreamedText:
    """Feed each decode with `update` (returns the delta to send), the last one with `finish` (the rest)."""

    def __init__(self, stop: tuple[str, ...] = ()):
        self.stop = tuple(s for s in stop if s)
        self.sent = ""  # the text the client has
        self.stopped = False  # a stop string came: the reply is complete

    def _cut(self, text: str) -> str | None:
        """`text` before the first stop string (and mark the reply stopped), or None when none is in it."""
        hits = [text.find(s) for s in self.stop if s in text]
        if not hits:
            return None
        self.stopped = True
        return text[:min(hits)]

    def _settled(self, decoded: str) -> str:
        text = decoded.lstrip()
        cut = self._cut(text)
        if cut is not None:
            return cut
        shown = text.rstrip()
        while shown.endswith(INCOMPLETE):
            shown = shown[:-1].rstrip()
        return shown[:len(shown) - held_back(shown, self.stop)]

    def _advance(self, shown: str, final: bool = False) -> str:
        if shown.startswith(self.sent):
            delta = shown[len(self.sent):]
        elif final:  # the decoder rewrote text already sent: send what differs after the common part
            delta = shown[len(os.path.commonprefix([shown, self.sent])):]
        else:  # wait until the decode settles on what was sent
            return ""
        self.sent += delta
        return delta

    def update(self, decoded: str) -> str:
        """The new text of this snapshot's decode that is sure to stay ("" when nothing new is settled)."""
        if self.stopped:
            return ""
        return self._advance(self._settled(decoded))

    def finish(self, decoded: str) -> str:
        """The rest of the reply after the last snapshot: its decode stripped, cut at the first stop string."""
        if self.stopped:
            return ""
        text = decoded.strip()
        cut = self._cut(text)
        return self._advance(text if cut is None else cut, final=True)
