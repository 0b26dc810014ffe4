"""Build tab, "TensorRT-LLM 1.x, trtllm-serve" section: the command and its options YAML, written with one click."""

from __future__ import annotations

import gradio as gr

from app.build import serve as logic
from app.build.folders import confine_folders
from app.context import AppContext
from app.web.gate import require_access
from app.web.pages.plan_form import plan_box, plan_form_handlers

SERVE_FIELDS = ("family", "checkpoint", "trtllm_version", "out", "tp", "pp", "max_batch_size", "max_num_tokens",
                "max_seq_len", "kv_cache_fraction", "block_reuse", "lora_dir", "max_lora_rank", "max_loras",
                "max_cpu_loras", "lora_target_modules", "port")


def build_serve(ctx: AppContext, server: logic.ServeServer, visible: bool = False) -> gr.Column:
    """Lay out the trtllm-serve section (hidden until chosen) and wire its events; returns its column."""
    first = logic.family_choices()[0][1]
    version = logic.SERVE_VERSIONS[-1]
    with gr.Column(visible=visible, elem_id="serve-section") as column:
        with gr.Row():
            family = gr.Dropdown(logic.family_choices(), value=first, label="Model family", elem_id="serve-family")
            release = gr.Dropdown(list(logic.SERVE_VERSIONS), value=version, label="TensorRT-LLM release",
                                  elem_id="serve-version")
        note = gr.Markdown(logic.family_markdown(first, version), elem_id="serve-family-info")
        with gr.Row():
            checkpoint = gr.Textbox(label="Checkpoint folder", elem_id="serve-checkpoint")
            out = gr.Textbox(label="Output folder (options YAML + command)", elem_id="serve-out")
            port = gr.Number(8000, precision=0, label="trtllm-serve port", elem_id="serve-port")
        with gr.Row():
            tp = gr.Number(1, precision=0, label="Tensor parallel", elem_id="serve-tp")
            pp = gr.Number(1, precision=0, label="Pipeline parallel", elem_id="serve-pp")
            batch = gr.Number(None, precision=0, label="Max batch size", elem_id="serve-max-batch-size")
            tokens = gr.Number(None, precision=0, label="Max num tokens", elem_id="serve-max-num-tokens")
            seq = gr.Number(None, precision=0, label="Max sequence length", elem_id="serve-max-seq-len")
        with gr.Row():
            fraction = gr.Number(None, label="KV-cache free GPU memory fraction", elem_id="serve-kv-fraction")
            reuse = gr.Dropdown([("family default", ""), ("on", "true"), ("off", "false")], value="",
                                label="KV-cache block reuse", elem_id="serve-block-reuse")
        with gr.Accordion("LoRA", open=False):
            with gr.Row():
                lora_dir = gr.Textbox(label="LoRA adapters folder", elem_id="serve-lora-dir")
                rank = gr.Number(None, precision=0, label="Max LoRA rank", elem_id="serve-max-lora-rank")
                loras = gr.Number(None, precision=0, label="Max LoRAs (GPU)", elem_id="serve-max-loras")
                cpu_loras = gr.Number(None, precision=0, label="Max CPU LoRAs", elem_id="serve-max-cpu-loras")
                modules = gr.Textbox(label="Target modules (comma list)", elem_id="serve-lora-modules")
        with gr.Row():
            show = gr.Button("Show trtllm-serve plan", elem_id="serve-show-plan")
            write = gr.Button("Write files and start trtllm-serve", variant="primary", elem_id="serve-write")
            stop = gr.Button("Stop trtllm-serve", elem_id="serve-stop")
        summary = gr.Markdown(elem_id="serve-summary")
        plan_text = plan_box("trtllm-serve command and options YAML", "serve-plan")
        status = gr.Markdown(elem_id="serve-status")
    inputs = [family, checkpoint, release, out, tp, pp, batch, tokens, seq, fraction, reuse, lora_dir, rank, loras,
              cpu_loras, modules, port]

    def form(values) -> tuple[dict, list[str]]:
        raw = dict(zip(SERVE_FIELDS, values, strict=True))
        raw["block_reuse"] = {"true": True, "false": False}.get(raw.get("block_reuse") or "")
        return confine_folders(raw, ctx.access.workspace)

    on_show, on_write = plan_form_handlers(ctx, form, logic.serve_view, server.write_and_start,
                                           (OSError, RuntimeError))

    def on_stop(request: gr.Request):
        require_access(ctx, request)
        return server.stop()

    private = {"api_visibility": "private"}
    family.change(logic.family_markdown, [family, release], note, **private)
    release.change(logic.family_markdown, [family, release], note, **private)
    show.click(on_show, inputs, [summary, plan_text], **private)
    write.click(on_write, inputs, [summary, plan_text, status], **private)
    stop.click(on_stop, None, status, **private)
    return column
