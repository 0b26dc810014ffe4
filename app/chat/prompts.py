"""Prompt building lives with the deployments that need it (app.deployments.prompts); re-exported here."""

from app.deployments.prompts import (
    ADAPTER_TAG_RE,
    PromptBuilder,
    chat_messages,
    message_text,
    named_templates,
)

__all__ = ["ADAPTER_TAG_RE", "PromptBuilder", "chat_messages", "message_text", "named_templates"]
