"""`python -m setup lora train` (setup/lora/train_cli.py): progress lines and a PEFT folder, one sentence and exit 2
for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from setup.__main__ import main
from setup.paths import PROJECT_ROOT
from tests.lora_training_helpers import PIRATE_PAIRS, write_tiny_base


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory, cpu_model_dir):
    return write_tiny_base(tmp_path_factory.mktemp("tiny-base"), cpu_model_dir)


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"prompt": p, "response": r}) + "\n" for p, r in PIRATE_PAIRS[:3]))
    return path


def test_trains_with_progress_lines(tiny_base, dataset, tmp_path):
    out = tmp_path / "adapters" / "cli-style"
    result = subprocess.run([sys.executable, "-m", "setup", "lora", "train", "--base", str(tiny_base), "--data",
                             str(dataset), "--out", str(out), "--steps", "3", "--lr", "0.05", "--rank", "4",
                             "--targets", "q_proj,v_proj"],
                            capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Training {out} on 3 pairs, 3 steps.") and "1 thread(s)" in lines[0]
    assert [line.split(" loss")[0].strip() for line in lines[1:4]] == ["step 1/3", "step 2/3", "step 3/3"]
    assert lines[-1].startswith("Trained cli-style in") and lines[-1].endswith(f"Wrote {out}")
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["r"] == 4 and set(config["target_modules"]) == {"q_proj", "v_proj"}
    assert (out / "adapter_model.safetensors").is_file()


@pytest.mark.parametrize(("extra", "data", "expected"), [
    ((), '{"prompt": "Hi"}\n', 'Line 1 of '),
    ((), "not json\n", "is not JSON"),
    (("--steps", "1000"), None, "Steps must be a whole number from 1 to 300, got 1000."),
    (("--rank", "128"), None, "Rank must be a whole number from 1 to 64, got 128."),
    (("--max-len", "5000"), None, "The sequence length must be a whole number from 16 to 1024 tokens, got 5000."),
    (("--targets", "lm_head"), None, "Target module(s) lm_head cannot be trained here"),
    (("--lr", "0.5"), None, "The learning rate must be between"),
])
def test_bad_input_is_one_sentence_and_exit_2(tiny_base, dataset, tmp_path, capsys, extra, data, expected):
    if data is not None:
        dataset.write_text(data)
    code = main(["lora", "train", "--base", str(tiny_base), "--data", str(dataset), "--out",
                 str(tmp_path / "out"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and expected in err[0], err
    assert not (tmp_path / "out").exists()


def test_missing_dataset_and_too_big_a_dataset(tiny_base, tmp_path, capsys):
    assert main(["lora", "train", "--base", str(tiny_base), "--data", str(tmp_path / "none.jsonl"), "--out",
                 str(tmp_path / "out")]) == 2
    assert "does not exist or is not a file" in capsys.readouterr().err
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps({"prompt": "x" * (1 << 20), "response": "y"}) + "\n")
    assert main(["lora", "train", "--base", str(tiny_base), "--data", str(big), "--out", str(tmp_path / "out")]) == 2
    assert "is larger than the 1.0 MiB limit" in capsys.readouterr().err
