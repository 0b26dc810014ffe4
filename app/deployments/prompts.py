"""Build the model prompt from the conversation (Triton engine topology, llmapi): the tokenizer's own chat
template when the app can read the tokenizer, else a named template from setup/data/prompt_templates.yaml.
OpenAI-compatible servers get the messages themselves (`chat_messages`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from app.core.conversation import Conversation
from setup.shipped import shipped_yaml


def chat_messages(conversation: Conversation, system: str | None) -> list[dict[str, str]]:
    """The conversation in a chat template's (and OpenAI's) shape, [{role, content: text}]: the system prompt
    first, each turn's words (a reply's shown version), turns without words left out (but a person's picture, video or
    PDF sent alone stays, as an empty message the image markers go into), two messages of the same role in a row
    merged (templates expect the roles to alternate)."""
    out = [{"role": "system", "content": system}] if system else []
    for turn in conversation.turns:
        if not turn.text and (turn.is_reply or not turn.media):
            continue
        if out and out[-1]["role"] == turn.role:
            out[-1]["content"] = "\n".join(part for part in (out[-1]["content"], turn.text) if part)
        else:
            out.append({"role": turn.role, "content": turn.text})
    return out


DEFAULT_TEMPLATE = "chatml"  # when neither the user, the tokenizer nor the served family names one


def named_templates() -> dict[str, dict]:
    return shipped_yaml("prompt_templates.yaml")


@dataclass
class PromptBuilder:
    """Turns a conversation into one prompt string."""

    template_name: str = DEFAULT_TEMPLATE
    tokenizer_dir: str | None = None
    system_prompt: str = ""

    def __post_init__(self) -> None:
        self._tokenizer = None
        self._counter = None  # the tokenizer, also without a chat template: counts a prompt's tokens
        self._count_lock = threading.Lock()
        if self.tokenizer_dir and Path(self.tokenizer_dir).is_dir():
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_dir)
            self._counter = tokenizer
            if getattr(tokenizer, "chat_template", None):
                self._tokenizer = tokenizer
        templates = named_templates()
        if self.template_name not in templates:
            raise ValueError(f"Unknown prompt template '{self.template_name}'; known: {', '.join(templates)}.")
        self._template = templates[self.template_name]

    @property
    def source(self) -> str:
        return "tokenizer chat template" if self._tokenizer else f"'{self.template_name}' template"

    def messages(self, conversation: Conversation, system_prompt: str | None = None) -> list[dict[str, str]]:
        return chat_messages(conversation, self.system_prompt if system_prompt is None else system_prompt)

    def build(self, conversation: Conversation, system_prompt: str | None = None) -> str:
        messages = self.messages(conversation, system_prompt)
        if self._tokenizer is not None:
            return self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        t = self._template
        parts = [t.get("prefix", "")]
        for m in messages:
            parts.append(t[m["role"]].format(**{m["role"]: m["content"]}))
        parts.append(t["generation"])
        return "".join(parts)

    def count_tokens(self, prompt: str) -> int | None:
        """Tokens of `prompt` as the deployment's preprocessing counts them (with special tokens); None
        when the app has no tokenizer."""
        if self._counter is None:
            return None
        with self._count_lock:  # one tokenizer object shared by the request threads
            return len(self._counter.encode(prompt, add_special_tokens=True, verbose=False))

    def stop_words(self) -> list[str]:
        return [] if self._tokenizer else list(self._template.get("stop_words", []))

