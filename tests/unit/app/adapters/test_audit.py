"""app/adapters/audit.py and the registry's use of it: the intake refuses what the deployment cannot apply (before
the adapter appears in the folder), audits are kept per content and target, and only the applied rows are sent."""

from __future__ import annotations

import pytest

from app.adapters.audit import AuditBook, LoraTarget
from app.adapters.registry import AdapterError, AdapterRegistry
from setup.lora.audit import engine_target
from tests.lora_helpers import write_engine_config, write_peft

QKVO = ("q_proj", "k_proj", "v_proj", "o_proj")


@pytest.fixture
def engine(tmp_path) -> LoraTarget:
    return engine_target(write_engine_config(tmp_path / "engine", max_rank=8, modules=("attn_q", "attn_v")))


def test_intake_refuses_what_the_engine_cannot_take_and_leaves_nothing(tmp_path, engine):
    registry = AdapterRegistry(tmp_path / "adapters")
    with pytest.raises(AdapterError) as refused:
        registry.add_folder(write_peft(tmp_path / "big", rank=16), shown_name="~/big", target=engine)
    assert str(refused.value).startswith("~/big cannot be served here: The adapter's rank 16 is above")
    with pytest.raises(AdapterError, match="DoRA"):
        registry.add_folder(write_peft(tmp_path / "dora", config_extra={"use_dora": True}), target=engine)
    assert registry.names() == [] and not [p for p in (tmp_path / "adapters").iterdir() if not p.name.startswith(".")]


def test_a_partial_adapter_is_added_and_its_audit_says_so(tmp_path, engine):
    registry = AdapterRegistry(tmp_path / "adapters")
    registry.add_folder(write_peft(tmp_path / "qkvo", rank=4, modules=QKVO), target=engine)
    audit = registry.audit("qkvo", engine)
    assert audit.partial and audit.applied.names == ("q_proj", "v_proj")
    assert [d.names for d in audit.dropped] == [("k_proj", "o_proj")] and audit.applied_percent == 50


def test_only_the_applied_rows_are_sent(tmp_path, engine):
    registry = AdapterRegistry(tmp_path / "adapters")
    registry.add_folder(write_peft(tmp_path / "qkvo", rank=4, modules=QKVO, layers=(0, 1)), target=engine)
    weights, config = registry.tensors("qkvo")
    kept_weights, kept = registry.tensors("qkvo", frozenset(engine.trt_modules))
    assert config.shape[1] == 8 and kept.shape[1] == 4 and kept_weights.shape[1] == 4
    assert sorted({int(m) for m in kept[0, :, 0]}) == [1, 3]  # attn_q, attn_v
    first = registry.extra_inputs("qkvo", first_use=True, modules=frozenset(engine.trt_modules))
    assert first["lora_config"].shape[1] == 4


def test_audits_are_kept_until_the_files_or_the_target_change(tmp_path, engine):
    book, folder = AuditBook(), write_peft(tmp_path / "a", rank=4)
    stamp = ("adapter_model.safetensors", 1)
    first = book.of(folder, stamp, engine)
    assert book.of(folder, stamp, engine) is first
    write_peft(folder, rank=16)
    assert book.of(folder, stamp, engine) is first  # same stamp: not read again
    assert book.of(folder, ("changed",), engine).refused
    assert not book.of(folder, ("changed",), LoraTarget(server="vLLM")).refused
