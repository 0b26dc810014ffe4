"""A repository folder is replaced whole or not at all."""

from __future__ import annotations

import pytest

from setup.repo.atomic import staged_folder


def test_a_finished_staging_folder_replaces_the_old_one(tmp_path):
    out = tmp_path / "repo"
    (out / "old_model").mkdir(parents=True)
    with staged_folder(out) as staging:
        (staging / "new_model").mkdir()
    assert [p.name for p in out.iterdir()] == ["new_model"]
    assert [p.name for p in tmp_path.iterdir()] == ["repo"]  # no staging or .old folder left


def test_a_failure_keeps_the_old_folder_and_leaves_nothing_else(tmp_path):
    out = tmp_path / "repo"
    (out / "old_model").mkdir(parents=True)
    with pytest.raises(RuntimeError), staged_folder(out) as staging:
        (staging / "half_written").mkdir()
        raise RuntimeError("a template failed to render")
    assert [p.name for p in out.iterdir()] == ["old_model"]
    assert [p.name for p in tmp_path.iterdir()] == ["repo"]


def test_a_new_folder_appears_only_when_finished(tmp_path):
    out = tmp_path / "deep" / "repo"
    with staged_folder(out) as staging:
        assert not out.exists() and staging.parent == out.parent
        (staging / "m").mkdir()
    assert (out / "m").is_dir()
