"""Preprocessing of the InternLM-XComposer2 CPU twin (Triton Python model).

Everything is the InternLM-XComposer2 layout's own preprocessing (xcomposer2_preprocessing.py, copied beside this
file by setup/cpu/xcomposer2_demo.py): one image FP16 [3, 490, 490] and exactly one <ImageHere> per request, the
image's fake ids spliced there, the prompt table and the Partial-LoRA task id returned. Only the visual engine
differs: where the GPU layout runs the ViT from `vit_plan_dir`, the twin runs the CPU perception encoder
(cpu_runtime/encoder, copied here by the writer) named by its config.json, whose rows are the LLM's embeddings of a
description of the picture ("[Image: ...]").
"""

import sys
import time
from pathlib import Path

import triton_python_backend_utils as pb_utils

sys.path.insert(0, str(Path(__file__).resolve().parent))

import xcomposer2_preprocessing as layout  # noqa: E402

from cpu_runtime.encoder.encoder import make_encoder  # noqa: E402
from cpu_runtime.encoder.perception import one_thread_per_part  # noqa: E402


class CpuVisual:
    """The perception encoder called like the visual engine: pixels [1, 3, H, W] -> rows [1, tokens, hidden]."""

    def __init__(self, config_file):
        started = time.monotonic()
        one_thread_per_part()  # as in the demo's encoder model: the parts side by side, one thread each
        self.encoder = make_encoder(Path(config_file).parent)
        pb_utils.Logger.log_info(f"xcomposer2 twin: CPU encoder ready in {time.monotonic() - started:.1f} s "
                                 f"({self.encoder.tokens} rows per image)")

    def __call__(self, pixels):
        table, seen = self.encoder.encode(pixels.astype("float32"))
        said = [s.sentence() if hasattr(s, "sentence") else s for s in seen]
        pb_utils.Logger.log_verbose(f"xcomposer2 twin: the encoder saw {said}")
        return table[None]


class TritonPythonModel(layout.TritonPythonModel):
    def load_visual(self, plan_path):
        return CpuVisual(plan_path)
