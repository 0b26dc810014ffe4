"""Record TensorRT-LLM's LLM API argument names and trtllm-serve flags at a release tag (names only).

    python scripts/llm_api_facts.py GIT_DIR TAG [TAG ...]   # writes setup/data/llm_api/<major.minor>.yaml

GIT_DIR is a clone of NVIDIA/TensorRT-LLM. Files are read at the tag with `git show` and parsed with `ast`:
the annotated fields of BaseLlmArgs + TorchLlmArgs (and their base classes in the file), KvCacheConfig and
LoraConfig, and the `--flags` of trtllm-serve's click options. The result is marked verified_at_tag/complete.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parents[1] / "setup" / "data" / "llm_api"
ARGS = "tensorrt_llm/llmapi/llm_args.py"
LORA_PATHS = ("tensorrt_llm/lora_helper.py", "tensorrt_llm/_torch/peft/lora/config.py", "tensorrt_llm/lora_manager.py")
SERVE = "tensorrt_llm/commands/serve.py"


def _show(git_dir: str, tag: str, path: str) -> str | None:
    run = subprocess.run(["git", "-C", git_dir, "show", f"{tag}:{path}"], capture_output=True, text=True)
    return run.stdout if run.returncode == 0 else None


def _fields(tree: ast.Module, name: str) -> list[str]:
    """Public annotated fields of class `name` and of its bases defined in the same module."""
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    seen, order = set(), []

    def visit(cls_name: str) -> None:
        cls = classes.get(cls_name)
        if cls is None:
            return
        for base in cls.bases:
            if isinstance(base, ast.Name):
                visit(base.id)
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                field = node.target.id
                is_classvar = "ClassVar" in ast.unparse(node.annotation)
                if not field.startswith("_") and not is_classvar and field not in seen:
                    seen.add(field)
                    order.append(field)

    visit(name)
    return order


def tag_facts(git_dir: str, tag: str) -> dict:
    args = ast.parse(_show(git_dir, tag, ARGS) or "")
    lora_path = next(p for p in LORA_PATHS if "class LoraConfig" in (_show(git_dir, tag, p) or ""))
    lora = ast.parse(_show(git_dir, tag, lora_path))
    serve = _show(git_dir, tag, SERVE) or ""
    release = ".".join(re.findall(r"\d+", tag)[:2])
    return {"release": release,
            "source": {"repo": "NVIDIA/TensorRT-LLM", "tag": tag, "path": ARGS, "lora_config_path": lora_path,
                       "serve_path": SERVE},
            "verified_at_tag": True, "complete": True,
            "top_level": _fields(args, "TorchLlmArgs"), "kv_cache_config": _fields(args, "KvCacheConfig"),
            "lora_config": _fields(lora, "LoraConfig"),
            "serve_flags": sorted(set(re.findall(r"[\"'](--[a-z][a-z0-9_]*)[\"']", serve)))}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    git_dir, tags = argv[0], argv[1:]
    for tag in tags:
        facts = tag_facts(git_dir, tag)
        path = OUT / f"{facts['release']}.yaml"
        path.write_text(f"# Recorded by scripts/llm_api_facts.py from {tag}.\n" + yaml.safe_dump(facts, sort_keys=False))
        print(f"{path}: {len(facts['top_level'])} top-level, {len(facts['kv_cache_config'])} kv_cache_config, "
              f"{len(facts['lora_config'])} lora_config names, {len(facts['serve_flags'])} flags")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
