"""The conversation panel's server-side helpers: download names, and which images may be shown again."""

import tempfile
from pathlib import Path

from app.web.history_panel import file_name, image_kept


def test_download_names_come_from_the_title():
    assert file_name("What is the capital of France?", "json") == "what-is-the-capital-of-france.json"
    assert file_name("¿…?", "md") == "conversation.md"
    assert len(file_name("x" * 200, "md")) == 40 + len(".md")


def test_only_uploads_the_server_still_has_are_shown_again(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    upload = tmp_path / "uploads" / "abc" / "sign.png"
    upload.parent.mkdir(parents=True)
    upload.write_bytes(b"png")
    assert image_kept(str(upload))
    assert not image_kept(str(upload.with_name("gone.png")))  # removed since
    outside = Path(tempfile.mkdtemp(dir=tmp_path)) / "secret.png"
    outside.write_bytes(b"png")
    assert not image_kept(str(outside))  # a path the browser made up
    assert not image_kept(str(tmp_path / "uploads" / ".." / "secret.png"))


def test_a_markdown_export_reads_only_uploads_the_server_still_has(tmp_path, monkeypatch):
    from app.web.history_panel import read_upload

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    upload = tmp_path / "uploads" / "abc" / "sign.png"
    upload.parent.mkdir(parents=True)
    upload.write_bytes(b"png bytes")
    assert read_upload(str(upload)) == b"png bytes"
    assert read_upload(str(upload.with_name("gone.png"))) is None
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"secret")
    assert read_upload(str(outside)) is None  # a path the browser made up is not read
