"""The Build page's LoRA cache calculator: how many adapters of each rank fit on the GPU and in host memory for an
engine and its cache settings (setup/lora/cache_size.py, TensorRT-LLM's formula), with the reasoning."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from app.context import AppContext
from app.web.cache_view import fit_markdown
from setup.lora.audit import engine_target
from setup.lora.cache_size import GIB, CacheModel, CacheSettings, cache_fit
from setup.lora.convert import LoraConvertError
from setup.workspace import WorkspaceError

INTRO = ("How many LoRA adapters fit in TensorRT-LLM's adapter cache (host memory and GPU), from the engine's LoRA "
         "modules and max_lora_rank and the runtime settings: the Triton tensorrt_llm model's "
         "lora_cache_host_memory_bytes, lora_cache_gpu_memory_fraction, lora_cache_optimal_adapter_size and "
         "lora_cache_max_adapter_size, or the LLM API's max_loras and max_cpu_loras. Leave the engine folder empty "
         "for the engine this app serves.")


def fit_text(ctx: AppContext, engine: str, host_bytes: float, gpu_fraction: float, free_gpu_gib: float,
             optimal: float, largest: float, max_loras: float, max_cpu_loras: float) -> str:
    """The calculator's answer (a sentence when the engine cannot be read)."""
    try:
        target = engine_target(ctx.access.workspace.resolve(engine, what="engine folder")) if engine.strip() \
            else ctx.deployment.lora_target()
        settings = CacheSettings(host_bytes=int(host_bytes or GIB), gpu_fraction=float(gpu_fraction or 0),
                                 free_gpu_bytes=int(free_gpu_gib * GIB) if free_gpu_gib else None,
                                 optimal_adapter_size=int(optimal or 8), max_adapter_size=int(largest or 64),
                                 max_loras=int(max_loras) or None, max_cpu_loras=int(max_cpu_loras) or None)
        return fit_markdown(cache_fit(CacheModel.of(target), settings))
    except (LoraConvertError, WorkspaceError, OSError, ValueError) as exc:
        return f"⚠️ {exc}"


def build_cache_calculator(ctx: AppContext) -> None:
    """Lay out the calculator inside the current Blocks context."""
    with gr.Accordion("LoRA cache: how many adapters fit", open=False, elem_id="build-lora-cache"):
        gr.Markdown(INTRO)
        with gr.Row():
            engine = gr.Textbox(label="Engine folder (config.json)", placeholder=str(Path("engines") / "my-engine"),
                                elem_id="cache-engine")
            host = gr.Number(GIB, precision=0, label="lora_cache_host_memory_bytes")
            fraction = gr.Number(0.05, label="lora_cache_gpu_memory_fraction")
            free = gr.Number(0, label="Free GPU memory after engine and KV cache (GiB; 0: unknown)")
        with gr.Row():
            optimal = gr.Number(8, precision=0, label="lora_cache_optimal_adapter_size")
            largest = gr.Number(64, precision=0, label="lora_cache_max_adapter_size")
            max_loras = gr.Number(0, precision=0, label="max_loras (LLM API; 0: unset)")
            max_cpu_loras = gr.Number(0, precision=0, label="max_cpu_loras (LLM API; 0: unset)")
        go = gr.Button("How many adapters fit", elem_id="cache-fit")
        answer = gr.Markdown(elem_id="cache-fit-answer")

    def lora_cache_fit(engine: str, host_bytes: float, gpu_fraction: float, free_gpu_gib: float, optimal: float,
                       largest: float, max_loras: float, max_cpu_loras: float) -> str:
        """Adapters of each rank that fit in the host and GPU LoRA caches, as a markdown table with the reasoning."""
        return fit_text(ctx, engine or "", host_bytes, gpu_fraction, free_gpu_gib, optimal, largest, max_loras,
                        max_cpu_loras)

    go.click(lora_cache_fit, [engine, host, fraction, free, optimal, largest, max_loras, max_cpu_loras], answer,
             api_name="lora_cache_fit")
