"""`python -m setup lora audit` (setup/lora/audit_cli.py): the table on stdout, exit 1 when refused, 2 on bad input."""

from __future__ import annotations

from setup.__main__ import main
from tests.lora_helpers import write_engine_config, write_peft


def test_prints_applied_and_refused(tmp_path, capsys):
    engine = write_engine_config(tmp_path / "engine", max_rank=8, modules=("attn_q", "attn_v"))
    assert main(["lora", "audit", "--adapter", str(write_peft(tmp_path / "a", rank=4, modules=("q_proj", "k_proj"))),
                 "--engine", str(engine)]) == 0
    out = capsys.readouterr().out
    assert "applied: q_proj (60% of the weights)" in out
    assert "dropped: k_proj (40% of the weights): the TensorRT-LLM engine applies LoRA to attn_q, attn_v only" in out
    assert main(["lora", "audit", "--adapter", str(write_peft(tmp_path / "b", rank=16)), "--engine", str(engine)]) == 1
    assert "refused: The adapter's rank 16 is above" in capsys.readouterr().out


def test_a_missing_folder_is_one_sentence(tmp_path, capsys):
    assert main(["lora", "audit", "--adapter", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'nope'} is not a folder; give an adapter folder " \
                                              "(adapter_config.json and its weights)."
