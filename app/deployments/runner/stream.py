"""A reply from the runner model: each response's text_output is new text (one piece per response when the runner
streams, the whole reply in one response when it cannot), and the final response carries the figures:
finish_reason, reply_mode ("streamed" or "whole reply"), runner_era and prompt_format; beside them the request's
own notes (a setting sent in place of one the runner cannot read). The figures line gets the short part (how the
reply came and the family's format by name); the rest goes to the reply's folded "What the model saw"
(`image_report`)."""

from __future__ import annotations

from dataclasses import replace

from app.deployments.messages import (
    MSG_RUNNER_FAMILY_FORMAT,
    MSG_RUNNER_FINISHED,
    MSG_RUNNER_PROMPT_FORMAT,
    MSG_RUNNER_RELEASE_ERA,
)
from app.triton.client import ModelInfo, TokenStream

FIGURES = ("finish_reason", "reply_mode", "runner_era", "prompt_format")


class RunnerStream(TokenStream):
    """`details` holds the figures the model returned with the reply."""

    def __init__(self, url: str, info: ModelInfo, inputs: list, stall_timeout: float, notes: tuple[str, ...] = (),
                 family: str = ""):
        self.details: dict[str, str] = {}
        self.notes = notes  # what the request sent differently from what was asked (and why)
        self.family = family  # the served family's name, for the figures' short format note
        super().__init__(url, replace(info, accumulated_text=False, engine_model=None), inputs, stall_timeout)

    def _observe(self, result) -> None:
        for name in FIGURES:
            value = result.as_numpy(name)
            if value is not None and value.size:
                item = value.reshape(-1)[0]
                self.details[name] = item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)

    def details_line(self) -> str:
        """The figures line's short part: 'streamed · Kosmos-2 format'; empty when nothing came."""
        d = self.details
        if not d:
            return ""
        parts = [d["reply_mode"]] if d.get("reply_mode") else []
        parts += [MSG_RUNNER_FAMILY_FORMAT.format(family=self.family)] if self.family else []
        return " · ".join(parts)

    def internals(self) -> list[str]:
        """The rest of the figures, one line each: the prompt format, the app's prompt and settings notes, how the
        reply finished and the runner's release era."""
        d = self.details
        lines = [MSG_RUNNER_PROMPT_FORMAT.format(format=d["prompt_format"])] if d.get("prompt_format") else []
        lines += list(self.notes)
        lines += [MSG_RUNNER_FINISHED.format(reason=d["finish_reason"])] if d.get("finish_reason") else []
        lines += [MSG_RUNNER_RELEASE_ERA.format(era=d["runner_era"])] if d.get("runner_era") else []
        return lines

    @property
    def image_report(self):
        """The internals as one report for the reply's folded "What the model saw" (None when there are none)."""
        lines = self.internals()
        return (lambda: [{"details": lines}]) if lines else None

    @property
    def whole_reply(self) -> bool:
        """The runner sent its reply at once (its LLM cannot stream: encoder-decoder, mllama, an earlier era)."""
        return self.details.get("reply_mode") == "whole reply"

    @property
    def finish_reason(self) -> str | None:
        reason = self.details.get("finish_reason")
        return None if self.cancelled or not reason else reason
