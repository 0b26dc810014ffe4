"""Build the model prompt from the chat history (Triton engine topology): the tokenizer's own chat template
when the app can read the tokenizer, else a named template from setup/data/prompt_templates.yaml.
OpenAI-compatible servers get the messages themselves (`chat_messages`)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import yaml

from app.core.constants import ADAPTER_TAG_PATTERN
from setup.paths import DATA_DIR

ADAPTER_TAG_RE = re.compile(ADAPTER_TAG_PATTERN)  # the footer chat replies carry


def message_text(content: object) -> str:
    """Text of a Gradio 6 message content (a string or a list of typed blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text", "")) if content.get("type", "text") == "text" else ""
    if isinstance(content, list | tuple):
        return "".join(message_text(block) for block in content)
    return ""


def chat_messages(history: list[dict], system: str | None) -> list[dict[str, str]]:
    """[{role, content: text}] for a model: system prompt first, adapter footers removed, split turns merged."""
    out = [{"role": "system", "content": system}] if system else []
    for message in history:
        role = message.get("role")
        text = ADAPTER_TAG_RE.sub("", message_text(message.get("content")))
        if role in ("user", "assistant") and text:
            if out and out[-1]["role"] == role:  # Gradio splits a turn into blocks; merge them
                out[-1]["content"] += "\n" + text
            else:
                out.append({"role": role, "content": text})
    return out


DEFAULT_TEMPLATE = "chatml"  # when neither the user, the tokenizer nor the served family names one


def named_templates() -> dict[str, dict]:
    return yaml.safe_load((DATA_DIR / "prompt_templates.yaml").read_text())


@dataclass
class PromptBuilder:
    """Turns [{role, content}] into one prompt string."""

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

    def messages(self, history: list[dict], system_prompt: str | None = None) -> list[dict[str, str]]:
        return chat_messages(history, self.system_prompt if system_prompt is None else system_prompt)

    def build(self, history: list[dict], system_prompt: str | None = None) -> str:
        messages = self.messages(history, system_prompt)
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


def file_path(content: object) -> str | None:
    """Path of a Gradio file message content (either of the shapes Gradio 6 uses), else None."""
    if isinstance(content, list | tuple):
        return next((p for p in map(file_path, content) if p), None)
    if isinstance(content, dict):
        if content.get("type") == "file":
            return file_path(content.get("file"))
        if content.get("type", "file") != "text" and isinstance(content.get("path"), str):
            return content["path"]
    return None


def current_turn_images(history) -> list[str]:
    """Files attached to the trailing user turn (after the last reply)."""
    files = []
    for message in reversed(history):
        if message.get("role") != "user":
            break
        path = file_path(message.get("content"))
        if path:
            files.insert(0, path)
    return files
