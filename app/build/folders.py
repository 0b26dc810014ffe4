"""The Build form's folders, confined to the workspace roots before any plan reads or writes them."""

from __future__ import annotations

import html

from setup.workspace import Workspace, WorkspaceError

# Form field -> what the message calls it. The TensorRT-LLM source tree is one: its scripts are run.
FOLDER_FIELDS = {"checkpoint": "checkpoint folder", "out": "output folder", "trtllm_root": "TensorRT-LLM source tree",
                 "lora_dir": "LoRA adapters folder", "tokenizer_dir": "tokenizer folder", "vila_path": "VILA repository"}


def confine_folders(form: dict, workspace: Workspace) -> tuple[dict, list[str]]:
    """The form with its folder fields resolved inside the workspace, and a sentence per folder outside it."""
    confined, problems = dict(form), []
    for name, what in FOLDER_FIELDS.items():
        value = form.get(name)
        if value is None or not str(value).strip():
            continue
        try:
            confined[name] = str(workspace.resolve(str(value), what=what))
        except WorkspaceError as exc:
            problems.append(str(exc))
    return confined, problems


def problems_markdown(problems: list[str]) -> str:
    """The plan summary's "fix these first" list."""
    return "**Fix these first:**\n\n" + "\n".join(f"- ✖ {html.escape(p)}" for p in problems)
