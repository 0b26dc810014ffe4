"""setup/repo/runtime.py: the cpu_runtime parts each CPU model is declared to import are copied into its 1/ folder,
so a written repository imports its own copy (it stands alone), and a part that does not exist is refused."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from setup.repo import writer
from setup.repo.runtime import RUNTIME_DIR, copy_runtime, declared_runtime, runtime_parts, unknown_parts
from setup.repo.writer import DeploymentConfig, RepoError, load_template, write_repository


def test_the_parts_are_the_subpackages_of_cpu_runtime():
    assert runtime_parts() == ("encoder", "engine", "family_outputs", "llmapi_standin", "runner_standin")
    assert unknown_parts(("engine", "tokenizer")) == ["tokenizer"]


def test_the_cpu_overlay_and_the_twin_declare_their_parts():
    assert declared_runtime(writer.TEMPLATES_DIR / "cpu_engine") == {"tensorrt_llm": ("engine",),
                                                                     "multimodal_encoders": ("encoder",),
                                                                     "multimodal_runner": ("engine", "encoder",
                                                                                           "runner_standin",
                                                                                           "family_outputs")}
    assert load_template("internlm_xcomposer2_cpu").runtime == {"preprocessing": ("encoder",)}
    assert load_template("inflight_batcher_llm").runtime == {}


def test_a_copied_part_is_imported_from_the_model_folder(tmp_path):
    version = tmp_path / "model" / "1"
    copy_runtime(version, ("encoder",))
    assert sorted(p.name for p in (version / "cpu_runtime").iterdir()) == ["__init__.py", "encoder"]
    assert (version / "cpu_runtime" / "encoder" / "imagenet_classes.txt").read_bytes() == (
        RUNTIME_DIR / "encoder" / "imagenet_classes.txt").read_bytes()
    # as model.py does: its own folder first on sys.path, started away from the project (no other copy reachable)
    code = (f"import sys; sys.path.insert(0, {str(version)!r}); import cpu_runtime.encoder.margins as m; "
            "print(m.__file__)")
    result = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(version / "cpu_runtime" / "encoder" / "margins.py")


def test_the_cpu_text_repository_gets_only_the_engine(tmp_path):
    config = DeploymentConfig(engine="cpu", parameters={"engine_dir": "/e", "tokenizer_dir": "/t"})
    out = write_repository(config, tmp_path / "repo")
    runtime = out / "tensorrt_llm" / "1" / "cpu_runtime"
    assert sorted(p.name for p in runtime.iterdir()) == ["__init__.py", "engine"]
    assert (runtime / "engine" / "forward.py").read_bytes() == (RUNTIME_DIR / "engine" / "forward.py").read_bytes()
    assert [m.name for m in out.iterdir() if (m / "1" / "cpu_runtime").exists()] == ["tensorrt_llm"]
    assert not list(out.rglob("__pycache__"))


def test_a_gpu_repository_gets_no_runtime(tmp_path):
    config = DeploymentConfig(parameters={"engine_dir": "/e", "tokenizer_dir": "/t"})
    out = write_repository(config, tmp_path / "repo")
    assert not list(out.rglob("cpu_runtime"))


def test_an_unknown_part_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    templates = tmp_path / "templates"
    base = writer.TEMPLATES_DIR / "inflight_batcher_llm"
    (templates / "mine").mkdir(parents=True)
    (templates / "mine" / "template.yaml").write_text(yaml.safe_dump(
        {"base": "inflight_batcher_llm", "runtime": {"preprocessing": ["tokenizer"]}}))
    (templates / "inflight_batcher_llm").symlink_to(base)
    monkeypatch.setattr(writer, "TEMPLATES_DIR", templates)
    config = DeploymentConfig(template="mine", parameters={"engine_dir": "/e", "tokenizer_dir": "/t"})
    with pytest.raises(RepoError, match=r"preprocessing model the cpu_runtime part\(s\) tokenizer, which do not "
                                        r"exist; the parts are: encoder, engine, family_outputs, llmapi_standin"):
        write_repository(config, tmp_path / "repo")
    assert not (tmp_path / "repo").exists()
