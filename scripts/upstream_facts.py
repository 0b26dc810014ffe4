"""Record tensor facts of the TensorRT-LLM backend's model configs at a release tag as YAML (facts only).

    python scripts/upstream_facts.py GIT_DIR TAG [TAG ...]   # writes tests/data/upstream/<tag>/<layout>.yaml

GIT_DIR is a clone of triton-inference-server/tensorrtllm_backend; each config.pbtxt under all_models/
<layout>/ is read at the tag with `git show` and reduced to names, data types, dims, optional flags and
parameter keys. Placeholders (`${...}`) in data types are kept as the placeholder's name.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "upstream"
LAYOUTS = ("inflight_batcher_llm", "multimodal")
MODELS = ("ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls", "multimodal_encoders")
TYPED = re.compile(r'name:\s*"(\w+)"(?:(?!name:).)*?data_type:\s*\$\{(\w+)\}', re.S)


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True, check=True).stdout


def _parse(text: str) -> tuple[model_config_pb2.ModelConfig, dict[str, str]]:
    typed = {m.group(1): m.group(2) for m in TYPED.finditer(text)}
    text = re.sub(r"data_type:\s*\$\{\w+\}", "data_type: TYPE_INVALID", text)
    text = re.sub(r"decoupled:\s*\$\{\w+\}", "decoupled: true", text)
    text = re.sub(r'(?<!")\$\{\w+\}(?!")', "1", text)
    return text_format.Parse(text, model_config_pb2.ModelConfig()), typed


def _tensor(t, typed: dict[str, str], is_input: bool) -> dict:
    kind = model_config_pb2.DataType.Name(t.data_type)
    row = {"name": t.name, "data_type": "${" + typed[t.name] + "}" if t.name in typed else kind,
           "dims": list(t.dims)}
    if is_input:
        row["optional"] = bool(t.optional)
    return row


def model_facts(text: str) -> dict:
    """Inputs, outputs and parameter keys of one config.pbtxt."""
    config, typed = _parse(text)
    return {"inputs": [_tensor(t, typed, True) for t in config.input],
            "outputs": [_tensor(t, typed, False) for t in config.output],
            "parameters": sorted(config.parameters)}


def tag_facts(git_dir: str, tag: str, layout: str) -> dict | None:
    models = {}
    for model in MODELS:
        path = f"all_models/{layout}/{model}/config.pbtxt"
        try:
            text = _git(git_dir, "show", f"{tag}:{path}")
        except subprocess.CalledProcessError:
            continue
        models[model] = {"path": path, **model_facts(text)}
    if not models:
        return None
    return {"repository": "triton-inference-server/tensorrtllm_backend", "tag": tag, "models": models}


def main(argv: list[str]) -> int:
    git_dir, *tags = argv
    for tag in tags:
        for layout in LAYOUTS:
            facts = tag_facts(git_dir, tag, layout)
            if facts:
                target = OUT / tag / f"{layout}.yaml"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(yaml.safe_dump(facts, sort_keys=False, width=120, default_flow_style=None))
                print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
