"""Build tab, "TensorRT-LLM 1.x, Triton llmapi" section: no engine build; the plan writes the llmapi repository
and launches Triton on it, with one click."""

from __future__ import annotations

import gradio as gr

from app.build import llmapi as logic
from app.build.engine import LaunchedTriton
from app.build.folders import confine_folders
from app.context import AppContext
from app.web.gate import require_access
from app.web.pages.plan_form import plan_box, plan_form_handlers
from setup.catalog.llmapi_releases import LATEST
from setup.launcher import LaunchError
from setup.repo.writer import RepoError

FIELDS = ("family", "trtllm_version", "checkpoint", "out", "trtllm_root", "tp", "pp", "max_batch_size",
          "max_num_tokens", "max_seq_len", "kv_cache_fraction", "lora_dir", "max_lora_rank", "max_cpu_loras",
          "instances", "gpu_device_ids", "grpc_port")


def build_llmapi(ctx: AppContext, server: LaunchedTriton, visible: bool = False) -> gr.Column:
    """Lay out the llmapi section (hidden until chosen) and wire its events; returns its column."""
    with gr.Column(visible=visible, elem_id="llmapi-section") as column:
        with gr.Row():
            family = gr.Dropdown(logic.family_choices(), value=logic.family_choices()[0][1], label="Model family",
                                 elem_id="llmapi-family")
            release = gr.Dropdown(logic.release_choices(), value=LATEST, label="TensorRT-LLM release",
                                  elem_id="llmapi-version")
        serves = gr.Markdown(logic.release_markdown(LATEST), elem_id="llmapi-serves")
        with gr.Row():
            checkpoint = gr.Textbox(label="Checkpoint folder (read by the server)", elem_id="llmapi-checkpoint")
            out = gr.Textbox(label="Output folder (the repository goes in llmapi_repo/)", elem_id="llmapi-out")
            code = gr.Textbox(label="TensorRT-LLM checkout (its llmapi model.py and helpers.py are copied)",
                              elem_id="llmapi-code")
        with gr.Row():
            tp = gr.Number(1, precision=0, label="Tensor parallel", elem_id="llmapi-tp")
            pp = gr.Number(1, precision=0, label="Pipeline parallel", elem_id="llmapi-pp")
            batch = gr.Number(None, precision=0, label="Max batch size", elem_id="llmapi-max-batch-size")
            tokens = gr.Number(None, precision=0, label="Max num tokens", elem_id="llmapi-max-num-tokens")
            seq = gr.Number(None, precision=0, label="Max sequence length", elem_id="llmapi-max-seq-len")
            fraction = gr.Number(None, label="KV-cache free GPU memory fraction", elem_id="llmapi-kv-fraction")
        with gr.Row():
            lora_dir = gr.Textbox(label="LoRA adapters folder (the server reads them by path)", elem_id="llmapi-lora-dir")
            rank = gr.Number(None, precision=0, label="Max LoRA rank", elem_id="llmapi-max-lora-rank")
            cpu_loras = gr.Number(None, precision=0, label="Max CPU LoRAs", elem_id="llmapi-max-cpu-loras")
            instances = gr.Number(1, precision=0, label="Instances", elem_id="llmapi-instances")
            gpus = gr.Textbox(label='GPU ids per instance ("0,1;2,3")', elem_id="llmapi-gpu-ids")
            port = gr.Number(8001, precision=0, label="Triton gRPC port", elem_id="llmapi-grpc-port")
        with gr.Row():
            show = gr.Button("Show llmapi plan", elem_id="llmapi-show-plan")
            write = gr.Button("Write repository and start Triton", variant="primary", elem_id="llmapi-write")
            stop = gr.Button("Stop Triton", elem_id="llmapi-stop")
        summary = gr.Markdown(elem_id="llmapi-summary")
        plan_text = plan_box("Repository and launch command", "llmapi-plan")
        status = gr.Markdown(elem_id="llmapi-status")
    inputs = [family, release, checkpoint, out, code, tp, pp, batch, tokens, seq, fraction, lora_dir, rank, cpu_loras,
              instances, gpus, port]

    def form(values) -> tuple[dict, list[str]]:
        return confine_folders(dict(zip(FIELDS, values, strict=True)), ctx.access.workspace)

    on_show, on_write = plan_form_handlers(ctx, form, logic.llmapi_view,
                                           lambda plan: logic.write_and_launch(plan, server),
                                           (RepoError, LaunchError, OSError))

    def on_stop(request: gr.Request):
        require_access(ctx, request)
        server.stop(wait=False)
        return server.message

    private = {"api_visibility": "private"}
    release.change(logic.release_markdown, release, serves, **private)
    show.click(on_show, inputs, [summary, plan_text], **private)
    write.click(on_write, inputs, [summary, plan_text, status], **private)
    stop.click(on_stop, None, status, **private)
    return column
