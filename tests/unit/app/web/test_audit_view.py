"""app/web/audit_view.py and the chat dropdown's mark (app/web/labels.py): how the audit reads on the pages."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.api.openai_schema import models_body
from app.web.audit_view import applied_cell, audit_lines, dropped_cell, notes_cell
from app.web.labels import BASE_LABEL, marked_choices
from setup.lora.adapter_facts import read_adapter
from setup.lora.audit import LoraTarget, audit, engine_target
from tests.lora_helpers import write_engine_config, write_peft


@pytest.fixture
def audits(tmp_path):
    engine = engine_target(write_engine_config(tmp_path / "engine", modules=("attn_q", "attn_v")))
    return {"whole": audit(read_adapter(write_peft(tmp_path / "whole", rank=4, modules=("q_proj", "v_proj"))), engine),
            "part": audit(read_adapter(write_peft(tmp_path / "part", rank=4, modules=("q_proj", "k_proj"))), engine)}


def test_lines_and_cells_say_what_is_applied_and_dropped(audits):
    part = audits["part"]
    assert audit_lines(part)[:2] == [
        "applied: q_proj (60% of the weights)",
        "dropped: k_proj (40% of the weights): the TensorRT-LLM engine applies LoRA to attn_q, attn_v only"]
    assert (applied_cell(part), dropped_cell(part)) == ("q_proj (60%)", "k_proj (40%)")
    assert (applied_cell(audits["whole"]), dropped_cell(audits["whole"])) == ("q_proj, v_proj (100%)", "-")
    assert notes_cell(None) == "-" and "float32" in notes_cell(part)


def test_the_chat_dropdown_marks_partial_adapters_and_models_list_the_fields(audits):
    deployment = SimpleNamespace(built_in_adapter=lambda: None, adapter_names=lambda: ["part", "whole"],
                                 adapter_audit=audits.get)
    assert marked_choices(SimpleNamespace(deployment=deployment)) == [
        (BASE_LABEL, BASE_LABEL), ("part ⚠ partial: 60% applied", "part"), ("whole", "whole")]
    entries = {e["id"]: e for e in models_body("tensorrt_llm_bls", ["part", "whole"], audits.get)["data"]}
    assert entries["part"]["partial"] and entries["part"]["applied_percent"] == 60
    assert entries["part"]["dropped"][0]["modules"] == ["k_proj"] and entries["part"]["dropped"][0]["percent"] == 40
    assert entries["whole"]["applied_modules"] == ["q_proj", "v_proj"] and not entries["whole"]["partial"]
    assert "partial" not in entries["tensorrt_llm_bls"]


def test_any_server_applies_every_language_module():
    assert LoraTarget(server="vLLM").applies("gate_proj")


def test_a_target_without_shapes_says_so_in_the_notes_and_the_fields(tmp_path):
    """A remote server that says nothing of its model's shapes: applied, not silently: the notes cell and the
    /v1/models fields say the shapes were not checked and why."""
    remote = LoraTarget(server="OpenAI-compatible server", unchecked="the server at gpu-box is not on this machine")
    unchecked = audit(read_adapter(write_peft(tmp_path / "style", rank=4)), remote)
    assert not unchecked.refused and not unchecked.shapes_checked
    assert "Shapes not checked" in notes_cell(unchecked) and "gpu-box is not on this machine" in notes_cell(unchecked)
    [entry] = [e for e in models_body("m", ["style"], {"style": unchecked}.get)["data"] if e["id"] == "style"]
    assert entry["shapes_checked"] is False and "gpu-box" in entry["notes"][-1]
    generic = audit(read_adapter(tmp_path / "style"), LoraTarget(server="vLLM"))
    assert "the vLLM does not say its model's shapes" in notes_cell(generic)
