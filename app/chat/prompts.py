"""Prompt building lives with the deployments that need it (app.deployments.prompts); re-exported here."""

from app.deployments.prompts import PromptBuilder, chat_messages, named_templates

__all__ = ["PromptBuilder", "chat_messages", "named_templates"]
