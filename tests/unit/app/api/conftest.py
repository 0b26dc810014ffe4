"""Fixtures of the Gradio API's unit tests: Gradio's upload folder in the test's scratch folder."""

from __future__ import annotations

import pytest


@pytest.fixture
def uploads(tmp_path, monkeypatch):
    """Gradio's upload folder, where the endpoints take uploaded files and images from."""
    folder = tmp_path / "gradio"
    folder.mkdir()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    return folder
