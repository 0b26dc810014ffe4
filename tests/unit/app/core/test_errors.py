import pytest

from app.core import errors


@pytest.mark.parametrize("raw, kind", [
    ("[StatusCode.UNAVAILABLE] failed to connect to all addresses", errors.ServerUnreachable),
    ("Request for unknown model: 'ensemble' is not found", errors.ModelNotReady),
    ("Prompt length (9000) exceeds maximum input length (2048).", errors.InputTooLong),
    ("Streaming is only supported if model is deployed using decoupled mode.", errors.DecoupledMismatch),
    ("HTTP end point doesn't support models with decoupled transaction policy", errors.DecoupledMismatch),
    ("[TensorRT-LLM][ERROR] Assertion failed: LoRA task 7 not found in cache. Please send LoRA weights with request",
     errors.LoraNotInCache),
    ("Error storing task=3 in PEFT cache -- Cache is full. There are no done tasks to evict", errors.LoraCacheFull),
    ("Server is stopping, scheduler for model has stopped accepting new inference requests",
     errors.ServerUnreachable),
    ("something nobody expected", errors.InvalidRequest),
])
def test_parse_error_types(raw, kind):
    assert type(errors.parse_error(raw)) is kind


def test_messages_are_plain_and_keep_details():
    err = errors.parse_error("Prompt length (9000) exceeds maximum input length (2048).")
    assert "9000" in str(err) and "Shorten" in str(err)
    lora = errors.parse_error("LoRA task 12 not found in cache. Please send LoRA weights with request")
    assert lora.task_id == 12
    assert "unknown" not in str(errors.parse_error("Request for unknown model: 'bls' is not found")).lower()
