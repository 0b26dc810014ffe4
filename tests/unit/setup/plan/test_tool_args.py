"""Every flag a plan passes to a TensorRT-LLM tool, checked against what upstream shows for that release.

A flag is verified when the release tag's own docs pass it to that tool (tests/data/upstream/<tag>/
doc_flags.yaml) or a full argument list read at the tag's tensorrt_llm commit has it; a full list pinned
to the tag that lacks it fails the test. Any other flag must be declared in tests/data/upstream/
tool_args.yaml `unverified`, naming a stored copy (not at a release) that takes it; the declarations
must be exactly the flags that need them.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from tests.build_standins import make_adapter
from tests.unit.setup.plan.test_release_scripts import FAMILIES, TOO_NEW, plan

UPSTREAM = Path(__file__).parents[3] / "data" / "upstream"
TOOL_ARGS = yaml.safe_load((UPSTREAM / "tool_args.yaml").read_text())
RELEASE_TAGS = {"0.11": "v0.11.0", "0.15": "v0.15.0", "0.19": "v0.19.0", "1.2": None}
VISUAL_TOOLS = {"build_visual_engine.py": "build_visual_engine", "build_multimodal_engine.py": "build_multimodal_engine"}


def tool_of(step) -> str | None:
    script = Path(step.argv[1]).name if len(step.argv) > 1 else ""
    if step.phase == "convert":
        return f"convert_checkpoint:{Path(step.argv[1]).parent.name}"
    if step.phase == "build":
        return "trtllm-build"
    if step.phase == "visual":
        return VISUAL_TOOLS[script]
    if step.phase == "lora":
        return "hf_lora_convert"
    return None


def plan_flags(tmp_path, release: str) -> dict[str, dict[str, set[str]]]:
    """{tool: {flag: families}} over the issue's families planned at `release`."""
    used: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    adapters = make_adapter(tmp_path / "adapters" / "a", 8)
    runs = [(family, fields) for family, fields in sorted(FAMILIES.items()) if (family, release) not in TOO_NEW]
    for name, (family, fields) in [*((f, (f, x)) for f, x in runs), ("llama+lora", ("llama", {"lora_dir": str(adapters)}))]:
        made = plan(tmp_path / name, family, release, **fields)
        for step in made.steps:
            tool = tool_of(step)
            if tool:
                for arg in step.argv[2:]:
                    if arg.startswith("-") and not arg[1:].lstrip("-")[:1].isdigit():
                        used[tool][arg.split("=")[0]].add(name)
    return used


def full_lists(tool: str, tag: str | None) -> list[dict]:
    return [entry for key, entry in TOOL_ARGS["full"].items()
            if key.split("@")[0] == tool and tag is not None and entry["tag"] == tag]


def doc_flags(tag: str | None, tool: str) -> set[str]:
    if tag is None:
        return set()
    facts = yaml.safe_load((UPSTREAM / tag / "doc_flags.yaml").read_text())
    assert facts["tag"] == tag
    return set((facts["tools"].get(tool) or {}).get("flags") or ())


@pytest.mark.parametrize("release", sorted(RELEASE_TAGS))
def test_every_plan_flag_is_shown_by_upstream_or_declared(tmp_path, release):
    tag = RELEASE_TAGS[release]
    declared = (TOOL_ARGS.get("unverified") or {}).get(release) or {}
    needed: dict[str, set[str]] = defaultdict(set)
    for tool, flags in plan_flags(tmp_path, release).items():
        pinned = full_lists(tool, tag)
        for flag in flags:
            for entry in pinned:
                assert flag in entry["flags"], f"{release}: {tool} at {entry['commit'][:8]} ({tag}) has no {flag}"
            if flag in doc_flags(tag, tool) or pinned:
                continue
            needed[tool].add(flag)
    assert {t: set(f) for t, f in declared.items()} == dict(needed), "unverified flags in tool_args.yaml"
    for tool, flags in declared.items():
        for flag, source in flags.items():
            if source != "none":
                assert source.split("@")[0].startswith(tool), (tool, flag, source)
                assert flag in TOOL_ARGS["full"][source]["flags"], (tool, flag, source)


FORK_BUILDERS = {"internlm-xcomposer2-vl-7b": "build_visual_engine@3d5cd357"}  # types only a fork's builder has


@pytest.mark.parametrize("release", ["0.11", "0.19", "1.2"])
def test_visual_model_types_are_among_the_builder_choices(tmp_path, release):
    choices = {"0.11": "build_visual_engine@05316d33"}.get(release, "build_multimodal_engine@000a01de")
    allowed = TOOL_ARGS["full"][choices]["choices"]["--model_type"]
    for family, fields in sorted(FAMILIES.items()):
        if (family, release) in TOO_NEW:
            continue
        made = plan(tmp_path / family, family, release, **fields)
        for step in made.steps:
            if step.phase != "visual":
                continue
            model_type = step.argv[step.argv.index("--model_type") + 1]
            if model_type in FORK_BUILDERS:  # the fork's own list, where a missing comma hides the type: said so
                assert model_type not in TOOL_ARGS["full"][FORK_BUILDERS[model_type]]["choices"]["--model_type"]
                assert any("lack a comma" in w for w in made.warnings), (family, release)
                continue
            assert model_type in allowed, (family, release)


def test_doc_flags_are_recorded_at_their_tags():
    for tag in filter(None, RELEASE_TAGS.values()):
        facts = yaml.safe_load((UPSTREAM / tag / "doc_flags.yaml").read_text())
        assert facts["repository"] == "triton-inference-server/tensorrtllm_backend" and facts["tag"] == tag
        assert "--checkpoint_dir" in facts["tools"]["trtllm-build"]["flags"]
