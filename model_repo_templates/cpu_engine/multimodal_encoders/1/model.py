"""CPU multimodal_encoders: images -> prompt-table rows, from a short description of each image.

The description (cpu_runtime/encoder/perception.py: ImageNet labels, faces, colours and shapes, and the text
read by OCR; text only when the encoder folder has no "perception" section) is embedded with the LLM's
own input embeddings.

The tensor contract is the backend's (IMAGE in; OUT_PROMPT_EMBEDDING_TABLE and
OUT_PROMPT_VOCAB_SIZE out). A request without IMAGE gets an empty table, so text-only requests pass
through the multimodal ensemble unchanged. GPU deployments run the model's own vision tower here.

CPU only (config.extra.pbtxt): a request with DESCRIBE true also gets OUT_DESCRIPTION, one JSON
string per image saying what the encoder found (the app's "What the model saw"). Recent images are
remembered, so asking this after a reply does not run the encoder again.
"""

import json
import sys
import time
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils
from request_loop import answer_each

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_runtime.encoder.encoder import make_encoder  # noqa: E402
from cpu_runtime.encoder.perception import one_thread_per_part  # noqa: E402


def _param(config, key):
    value = config.get("parameters", {}).get(key, {}).get("string_value", "")
    return "" if value.startswith("${") else value


def _report(seen, twin: dict) -> dict:
    """What one image gave, as plain data: the Perception's fields, or the OCR-only encoder's text; a family twin's
    encoder adds the family format it applied (`format`)."""
    report = seen.as_dict() if hasattr(seen, "as_dict") else {"description": f"Text: {seen}" if seen else "",
                                                               "text": seen}
    return {**report, **({"format": twin["format"]} if twin.get("format") else {})}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        started = time.monotonic()
        one_thread_per_part()  # this process runs only the encoder: its parts side by side, one thread each
        self.encoder = make_encoder(_param(config, "multimodal_model_path"), _param(config, "hf_model_path") or None)
        self.max_images = int(_param(config, "max_num_images") or 0)
        self.twin = self.encoder.config.get("twin") or {}  # a family twin's encoder: the family format it applies
        pb_utils.Logger.log_info(
            f"cpu encoder ({type(self.encoder).__name__}) ready in {time.monotonic() - started:.1f} s "
            f"({self.encoder.tokens} rows per image, hidden {self.encoder.hidden}"
            f"{', format ' + self.twin['format'] if self.twin.get('format') else ''})"
        )

    def _one(self, request):
        tensor = pb_utils.get_input_tensor_by_name(request, "IMAGE")
        max_tokens = pb_utils.get_input_tensor_by_name(request, "max_tokens")
        describe = pb_utils.get_input_tensor_by_name(request, "DESCRIBE")
        describe = describe is not None and bool(describe.as_numpy().reshape(-1)[0])
        batch = 1 if max_tokens is None else max_tokens.as_numpy().shape[0]
        reports = []
        if tensor is None or tensor.as_numpy().size == 0:
            tables = [np.zeros((0, self.encoder.hidden), np.float16)] * batch
        else:
            pixels = tensor.as_numpy()
            if pixels.ndim == 4:  # [B, 3, H, W]: one image per row
                pixels = pixels[:, None]
            if pixels.ndim != 5 or pixels.shape[2] != 3:
                raise ValueError(f"IMAGE must be [batch, images, 3, H, W]; got shape {list(pixels.shape)}.")
            if self.max_images and pixels.shape[1] > self.max_images:
                raise ValueError(f"At most {self.max_images} image(s) per request; got {pixels.shape[1]}.")
            tables = []
            for row in pixels:
                hits = self.encoder.memo.hits
                table, seen = self.encoder.encode(row)
                said = [s.sentence() if hasattr(s, "sentence") else s for s in seen]
                pb_utils.Logger.log_verbose(f"cpu encoder saw ({self.encoder.memo.hits - hits} remembered): {said}")
                tables.append(table)
                reports.append([json.dumps(_report(s, self.twin)) for s in seen])
            batch = len(tables)
        rows = max(t.shape[0] for t in tables)
        out = np.zeros((batch, rows, self.encoder.hidden), np.float16)
        for i, table in enumerate(tables):
            out[i, : table.shape[0]] = table
        sizes = np.array([[t.shape[0]] for t in tables], dtype=np.int32)
        outputs = [pb_utils.Tensor("OUT_PROMPT_EMBEDDING_TABLE", out), pb_utils.Tensor("OUT_PROMPT_VOCAB_SIZE", sizes)]
        if describe:
            width = max((len(r) for r in reports), default=0)
            texts = np.array([r + [""] * (width - len(r)) for r in reports] or [[]], dtype=object)
            outputs.append(pb_utils.Tensor("OUT_DESCRIPTION", texts))
        return pb_utils.InferenceResponse(outputs)

    def execute(self, requests):
        return answer_each(requests, self._one)
