"""Record the flags the TensorRT-LLM backend's own docs pass to each build tool, at a release tag (facts only).

    python scripts/doc_flags.py GIT_DIR TAG [TAG ...]   # writes tests/data/upstream/<tag>/doc_flags.yaml

GIT_DIR is a clone of triton-inference-server/tensorrtllm_backend. Every command in the tag's *.md files
in a fenced code block that runs trtllm-build, an examples/<model>/convert_checkpoint.py, the visual (multimodal) engine builder,
hf_lora_convert.py or quantize.py is reduced to the tool and the option names it uses. The docs ran at
that tag, so each recorded flag is one the release's tool accepted; the list is a lower bound of what
the tool takes, not its full argument list.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "upstream"
FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*|-[io])(?=[\s=]|$)")
CONVERT = re.compile(r"examples/(?:models/(?:core|contrib)/)?([\w-]+)/convert_checkpoint\.py")
TOOLS = {  # tool key -> pattern naming it in a command
    "trtllm-build": re.compile(r"(?:^|[\s/])trtllm-build(?:\s|$)"),
    "build_visual_engine": re.compile(r"build_visual_engine\.py"),
    "build_multimodal_engine": re.compile(r"build_multimodal_engine\.py"),
    "hf_lora_convert": re.compile(r"hf_lora_convert\.py"),
    "quantize": re.compile(r"quantization/quantize\.py"),
}


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True, check=True).stdout


def commands(markdown: str) -> list[str]:
    """Lines of the document's fenced code blocks, backslash continuations joined (prose is left out)."""
    blocks = re.findall(r"^\s*```[^\n]*\n(.*?)^\s*```", markdown, flags=re.S | re.M)
    joined = re.sub(r"\\\s*\n", " ", "\n".join(blocks))
    return [line.strip() for line in joined.splitlines() if line.strip()]


def tool_of(command: str) -> str | None:
    if match := CONVERT.search(command):
        return f"convert_checkpoint:{match.group(1)}"
    return next((name for name, pattern in TOOLS.items() if pattern.search(command)), None)


def tag_flags(git_dir: str, tag: str) -> dict:
    files = [p for p in _git(git_dir, "ls-tree", "-r", "--name-only", tag).splitlines() if p.endswith(".md")]
    tools: dict[str, dict] = {}
    for path in files:
        for command in commands(_git(git_dir, "show", f"{tag}:{path}")):
            tool = tool_of(command)
            if tool is None:
                continue
            entry = tools.setdefault(tool, {"flags": set(), "sources": set()})
            entry["flags"].update(FLAG.findall(command))
            entry["sources"].add(path)
    return {"repository": "triton-inference-server/tensorrtllm_backend", "tag": tag,
            "tools": {name: {"flags": sorted(e["flags"]), "sources": sorted(e["sources"])}
                      for name, e in sorted(tools.items())}}


def main(argv: list[str]) -> int:
    git_dir, *tags = argv
    for tag in tags:
        target = OUT / tag / "doc_flags.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(tag_flags(git_dir, tag), sort_keys=False, width=120, default_flow_style=None))
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
