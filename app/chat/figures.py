"""The figures shown under a reply: tokens, tokens per second, time to first token, model, deployment and what the
kind itself reports."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from app.adapters.audit import AdapterAudit
from app.chat.messages import BASE_MODEL_WORDS, MSG_PARTIAL_ADAPTER
from app.core.conversation import Conversation


@dataclass(frozen=True)
class ReplyFigures:
    """How one reply went. `tokens` counts streamed pieces (one per token when the server streams)."""

    tokens: int
    seconds: float  # from sending the request to the last token
    first_token: float | None  # seconds to the first token, None when no token came
    lora_bytes: int = 0  # bytes of LoRA inputs the request sent (task id, and weights + config on first use)
    lora_weights: bool = False  # the weights went with it (else the task id alone)
    sent_adapter: str | None = None  # the adapter the request carried (the model's own one, when it has one)
    details: str = ""  # the kind's own figures (the runner's finish, reply mode and family format; llmapi's KV cache)
    whole_reply: bool = False  # the server sent the reply at once (the runner topology): no token count to show

    @property
    def tokens_per_second(self) -> float | None:
        """Generation speed after the first token (the first one also waits for the prompt)."""
        if self.first_token is None or self.tokens < 2 or self.seconds <= self.first_token:
            return None
        return (self.tokens - 1) / (self.seconds - self.first_token)


def measure(stream, started: float, ended: float | None = None) -> ReplyFigures:
    """Figures of a stream opened at `started` (time.monotonic()) that ended at `ended` (default: now)."""
    ended = time.monotonic() if ended is None else ended
    return ReplyFigures(tokens=stream.chunks, seconds=max(0.0, ended - started),
                        first_token=stream.time_to_first_token, lora_bytes=stream.lora_bytes_sent,
                        lora_weights=stream.weights_sent, sent_adapter=stream.adapter or None,
                        details=stream.details_line(), whole_reply=stream.whole_reply)


def size_text(count: int) -> str:
    """Bytes as people read them: '8 B', '3.7 MB'."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def lora_text(figures: ReplyFigures) -> str:
    """What the request sent of its adapter, e.g. 'LoRA 3.7 MB sent (weights)' or 'LoRA 8 B sent (task id only)'."""
    if not figures.lora_bytes:
        return ""
    return f"LoRA {size_text(figures.lora_bytes)} sent ({'weights' if figures.lora_weights else 'task id only'})"


def figures_text(figures: ReplyFigures, adapter: str | None, kind: str) -> str:
    """One quiet line, e.g. '42 tokens · 27.1 tokens/s · first token 0.12 s · base model · Triton engine topology'."""
    if figures.whole_reply:  # one piece: a token count and speed would be wrong; the details say "whole reply"
        parts = [f"{figures.seconds:.2f} s"]
    else:
        parts = [f"{figures.tokens} token{'' if figures.tokens == 1 else 's'}"]
        if figures.tokens_per_second is not None:
            parts.append(f"{figures.tokens_per_second:.1f} tokens/s")
        if figures.first_token is not None:
            parts.append(f"first token {figures.first_token:.2f} s")
    parts += [adapter or figures.sent_adapter or BASE_MODEL_WORDS, lora_text(figures), short_kind(kind),
              figures.details]
    return " · ".join(p for p in parts if p)


def short_kind(kind: str) -> str:
    """The deployment kind without its bracketed gloss: 'Triton runner topology (TensorRT-LLM's ...)' -> 'Triton
    runner topology' (the status line names it in full)."""
    return kind.split(" (")[0].strip()



def with_partial_warning(figures: str, audit: AdapterAudit | None, adapter: str | None,
                         conversation: Conversation) -> str:
    """The figures line with a warning when the reply came from an adapter the deployment applies only in part,
    once per conversation: not when an earlier reply of `conversation` carried it for that adapter."""
    if not adapter or audit is None or not audit.partial:
        return figures
    warning = MSG_PARTIAL_ADAPTER.format(adapter=adapter, percent=audit.applied_percent,
                                         dropped=", ".join(name for d in audit.dropped for name in d.names))
    if any(warning in version.figures for turn in conversation.turns if turn.is_reply for version in turn.versions):
        return figures
    return f"{figures} · {warning}"


_TOKENS = re.compile(r"^(\d+) tokens?\b")


def continued_figures(figures: str, earlier: str) -> str:
    """A continued reply's figures line counting the whole reply: 'T tokens (N after Continue) · ...' where `earlier`
    is the figures line of the reply before Continue ('figures' unchanged when either has no token count)."""
    now, before = _TOKENS.match(figures), _TOKENS.match(earlier or "")
    if not now or not before:
        return figures
    added, total = int(now.group(1)), int(now.group(1)) + int(before.group(1))
    return f"{total} token{'' if total == 1 else 's'} ({added} after Continue)" + figures[now.end():]
