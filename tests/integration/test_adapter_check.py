"""'Is the adapter really applied?' against both Triton demo kinds: the probe's greedy first tokens differ
between the base model and pirate, so the check passes (the OpenAI kind is tested against vLLM)."""

from __future__ import annotations

from app.chat.adapter_check import check_adapter_applied


def test_pirate_is_applied_on_each_demo_kind(demo_app):
    ctx, _ = demo_app
    base = ctx.deployment.probe(None, "What is the capital of France?", 4)
    pirate = ctx.deployment.probe("pirate", "What is the capital of France?", 4)
    assert base.tokens and pirate.tokens and base.tokens != pirate.tokens
    assert check_adapter_applied(ctx.deployment, "pirate").applied is True
