"""model_repo_templates/shared/tokenizer_only.py: a stub that imports it first loads tokenizers without PyTorch, and
tokenizes as a process with PyTorch does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from setup.repo.writer import SHARED_DIR

TEXT = "the cat sat on the mat"
IN_A_STUB = """
import json, sys
import tokenizer_only
from transformers import AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
try:
    import torch  # noqa: F401
    torch_importable = True
except ImportError:
    torch_importable = False
print(json.dumps({"ids": tokenizer.encode(sys.argv[2]), "torch_importable": torch_importable,
                  "torch_loaded": sys.modules.get("torch") is not None}))
"""


def _tiny_tokenizer(folder):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {word: index for index, word in enumerate(["[UNK]", "the", "cat", "sat", "on", "mat"])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    folder.mkdir()
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast",
                                                              "unk_token": "[UNK]"}))
    return folder


def test_a_stub_that_only_tokenizes_loads_no_pytorch_and_gets_the_same_ids(tmp_path):
    from transformers import AutoTokenizer

    folder = _tiny_tokenizer(tmp_path / "tokenizer")
    env = {**os.environ, "PYTHONPATH": str(SHARED_DIR)}
    result = subprocess.run([sys.executable, "-c", IN_A_STUB, str(folder), TEXT], capture_output=True, text=True,
                            env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {"ids": AutoTokenizer.from_pretrained(folder).encode(TEXT), "torch_importable": False,
                    "torch_loaded": False}
    assert seen["ids"] == [1, 2, 3, 4, 1, 5]
    assert "PyTorch was not found" not in result.stderr  # transformers' advisory line is off
