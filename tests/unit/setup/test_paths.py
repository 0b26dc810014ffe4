"""setup/paths.py: the project folders it names exist, and the cache folder follows TRITON_DEMO_CACHE, then
XDG_CACHE_HOME, then ~/.cache."""

from __future__ import annotations

from pathlib import Path

from setup.paths import DATA_DIR, PROJECT_ROOT, TEMPLATES_DIR, cache_dir, keep_scratch_in_cache


def test_the_named_folders_are_the_projects():
    assert (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "setup" / "paths.py").is_file()
    assert TEMPLATES_DIR.is_dir() and any(TEMPLATES_DIR.iterdir())
    assert (DATA_DIR / "trtllm_versions.yaml").is_file()


def test_an_explicit_cache_wins_and_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRITON_DEMO_CACHE", "mine/../cache")
    assert cache_dir() == tmp_path / "cache"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITON_DEMO_CACHE", "~/c")
    assert cache_dir() == tmp_path / "home" / "c"


def test_without_it_the_xdg_cache_then_home(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_DEMO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "triton-vlm-lora-demo"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == Path(tmp_path / "home" / ".cache" / "triton-vlm-lora-demo")
    monkeypatch.setenv("TRITON_DEMO_CACHE", "")  # empty counts as not set
    assert cache_dir() == tmp_path / "home" / ".cache" / "triton-vlm-lora-demo"


def test_without_a_tmpdir_uploads_and_compile_cache_go_under_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))
    environ = {"HOME": "/home/u"}
    keep_scratch_in_cache(environ)
    assert environ == {"HOME": "/home/u", "GRADIO_TEMP_DIR": str(tmp_path / "cache" / "uploads"),
                       "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache" / "torchinductor")}
    chosen = {"GRADIO_TEMP_DIR": "/srv/uploads"}
    keep_scratch_in_cache(chosen)
    assert chosen["GRADIO_TEMP_DIR"] == "/srv/uploads"  # a folder the user set wins
    with_tmpdir = {"TMPDIR": "/scratch"}
    keep_scratch_in_cache(with_tmpdir)
    assert with_tmpdir == {"TMPDIR": "/scratch"}  # Gradio and PyTorch use the user's TMPDIR as they always do
