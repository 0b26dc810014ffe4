"""The Build page's handlers (app/web/pages/build_handlers.py): which tokenizer the chat and a training use for a
deployed build."""

from __future__ import annotations

from app.web.pages.build_handlers import built_tokenizer
from setup.plan.config import PlanConfig


def test_a_built_model_brings_its_own_tokenizer(tmp_path):
    checkpoint, tokenizer = tmp_path / "ckpt", tmp_path / "tok"
    checkpoint.mkdir()
    tokenizer.mkdir()
    config = PlanConfig(family="llava", checkpoint=str(checkpoint), out=str(tmp_path / "out"))
    assert built_tokenizer(config) is None  # no tokenizer files: the app keeps its own
    (checkpoint / "tokenizer_config.json").write_text("{}")
    assert built_tokenizer(config) == str(checkpoint)
    (tokenizer / "tokenizer.json").write_text("{}")
    config = PlanConfig(family="llava", checkpoint=str(checkpoint), out=str(tmp_path / "out"),
                        tokenizer_dir=str(tokenizer))
    assert built_tokenizer(config) == str(tokenizer)  # the plan's tokenizer folder first
    nemo = tmp_path / "model.nemo"
    nemo.write_bytes(b"x")
    assert built_tokenizer(PlanConfig(family="llava", checkpoint=str(nemo), out=str(tmp_path / "o"))) is None
