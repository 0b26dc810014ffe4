"""The engine path's form on the Build page, declared once: each field's PlanConfig name, label, widget kind and
row. The layout makes the widgets from these declarations, and the handlers read values by the same names."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from app.build import engine as logic
from app.web.messages import MSG_MODEL_SOURCE_RULE
from setup.plan.config import PlanConfig


@dataclass(frozen=True)
class FormField:
    """One form field: `name` is the PlanConfig field it fills; `row` groups the fields laid out together."""

    name: str
    label: str
    kind: str  # text | number | family | version | dtype
    row: str
    elem: str = ""  # the element id's tail when it is not the name's (build-<elem>)

    @property
    def elem_id(self) -> str:
        return f"build-{self.elem or self.name.replace('_', '-')}"


FIELDS = (
    FormField("family", "Model family", "family", "model"),
    FormField("trtllm_version", "TensorRT-LLM version", "version", "model", elem="version"),
    FormField("dtype", "dtype", "dtype", "model"),
    FormField("model_id", "Hugging Face model id", "text", "source"),
    FormField("revision", "Revision", "text", "source"),
    FormField("checkpoint", "Checkpoint folder", "text", "folders"),
    FormField("out", "Output folder", "text", "folders"),
    FormField("trtllm_root", "TensorRT-LLM source tree", "text", "folders"),
    FormField("tp", "Tensor parallel", "number", "limits"),
    FormField("pp", "Pipeline parallel", "number", "limits"),
    FormField("max_batch_size", "Max batch size", "number", "limits"),
    FormField("max_input_len", "Max input length", "number", "limits"),
    FormField("max_seq_len", "Max sequence length", "number", "limits"),
    FormField("max_num_images", "Max images per request", "number", "limits"),
    FormField("lora_dir", "LoRA adapters folder", "text", "more"),
    FormField("max_lora_rank", "Max LoRA rank", "number", "more"),
    FormField("tokenizer_dir", "Tokenizer folder", "text", "more", elem="tokenizer"),
    FormField("vila_path", "VILA repository", "text", "more"),
)
FORM_FIELDS = tuple(f.name for f in FIELDS)
FIRST_VERSION = "0.19"
# The family's defaults fill these when a family is picked.
FAMILY_LIMITS = ("max_batch_size", "max_input_len", "max_seq_len", "max_num_images")


HELP = {**PlanConfig.help(),
        "model_id": "Downloaded by the plan's first step (only the files a conversion reads; resumed where it "
                    "stopped) into the checkpoint folder. " + MSG_MODEL_SOURCE_RULE + " Filled in with the "
                    "family's example checkpoint.",
        "checkpoint": "Hugging Face checkpoint folder (a .nemo file for NeMo families). " + MSG_MODEL_SOURCE_RULE,
        "out": "Converted checkpoint, engines, repository, logs, build state. Left empty with a model id: "
               "builds/FAMILY--ORG--NAME in the workspace."}
TOKEN_HELP = ("Only for gated or private models; HF_TOKEN of the app's environment otherwise. Given to the "
              "download alone: never written to the plan, the script, the logs or the job list.")


def start_values(family_id: str) -> dict:
    """What each field shows when the page opens on `family_id`."""
    start = logic.family_defaults(family_id)
    return {"family": family_id, "model_id": logic.example_model_id(family_id), "trtllm_version": FIRST_VERSION, "dtype": start["dtype"], "tp": 1, "pp": 1,
            "trtllm_root": PlanConfig.trtllm_root, **{name: start[name] for name in FAMILY_LIMITS}}


def _widget(field: FormField, value, family_id: str):
    info = HELP[field.name]
    common = {"label": field.label, "info": info, "elem_id": field.elem_id}
    if field.kind == "family":
        return gr.Dropdown(logic.family_choices(), value=value, **common)
    if field.kind == "version":
        return gr.Dropdown(list(logic.VERSIONS), value=value, allow_custom_value=True, **common)
    if field.kind == "dtype":
        return gr.Dropdown(logic.family_defaults(family_id)["dtypes"], value=value, **common)
    if field.kind == "number":
        return gr.Number(value, precision=0, **common)
    if field.name == "model_id":
        return gr.Textbox(value=value or "", placeholder=logic.model_id_placeholder(family_id), **common)
    return gr.Textbox(value=value or "", **common)


def token_box() -> gr.Textbox:
    """The Hugging Face token, a password field outside the form's fields (it never goes into a config)."""
    return gr.Textbox(type="password", label="Hugging Face token", info=TOKEN_HELP, elem_id="build-hf-token")


def form_row(row: str, family_id: str) -> dict[str, gr.components.Component]:
    """The widgets of one row, made in the current layout context (the caller opens the gr.Row)."""
    values = start_values(family_id)
    return {f.name: _widget(f, values.get(f.name), family_id) for f in FIELDS if f.row == row}

