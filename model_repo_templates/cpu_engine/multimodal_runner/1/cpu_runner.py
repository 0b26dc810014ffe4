"""The CPU twin's MultimodalModelRunner (runner_class cpu_runner:MultimodalModelRunner): cpu_runtime's runner
stand-in, given the CPU engine as its LLM (token by token, EngineRunner.step) and the CPU image encoder as its vision
step. The runner model (model.py) finds its era by signature, as it does for TensorRT-LLM's class, and streams
through `model` (ModelRunnerCpp's surface) where the family's LLM is decoder-only. MropeParams is here as
TensorRT-LLM's runner module imports it (the runner model builds qwen2_vl's call with the runner module's own).
"""

import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpu_runtime.engine.threads import engine_threads  # noqa: E402
from cpu_runtime.runner_standin.llm import MropeParams  # noqa: E402, F401 - the runner module's, as upstream's
from cpu_runtime.runner_standin.runner import StandInRunner  # noqa: E402

FRAMES_SEEN = 3  # of a video's frames, the encoder describes this many (evenly spaced)


class MultimodalModelRunner(StandInRunner):
    def load_llm(self, folder):
        import torch

        from cpu_runtime.engine.checkpoint import load_tokenizer
        from cpu_runtime.family_outputs.jobs import ANSWERS_EVERY_PICTURE

        torch.set_num_threads(engine_threads())
        llm = EngineLLM(folder, load_now=self.format.twin_output not in ANSWERS_EVERY_PICTURE)
        return llm, load_tokenizer(llm.hf_dir)

    def load_vision(self, folder):
        import numpy as np

        from cpu_runtime.encoder.encoder import make_encoder

        encoder = make_encoder(str(Path(folder) / "encoder"))  # setup/cpu/runner_demo.py writes it there
        self.encoder = encoder

        def see(images):
            picks = images if len(images) <= FRAMES_SEEN else \
                [images[round(i * (len(images) - 1) / (FRAMES_SEEN - 1))] for i in range(FRAMES_SEEN)]
            rows = []
            for number, image in enumerate(picks, 1):
                bgr = np.ascontiguousarray(np.asarray(image.convert("RGB"), dtype=np.uint8)[:, :, ::-1])
                ids, _ = encoder.image_block(bgr, number if len(picks) > 1 else None)
                rows += list(ids)
            return rows

        return see

    def load_output(self, folder):
        from cpu_runtime.family_outputs.outputs import TwinOutputs

        return TwinOutputs(self.format.twin_output, getattr(self, "encoder", None))


class EngineLLM:
    """The CPU engine one request at a time: its tokens as they come (the end id ends them). Its weights load when
    first used unless `load_now`: a twin whose own output answers every picture (Nougat's, Deplot's, Kosmos-2's) never
    runs the LLM, and its model process stays about 1 GiB smaller."""

    def __init__(self, folder, load_now: bool = True):
        from cpu_runtime.engine.runner import load_engine_config

        self.folder = Path(folder)
        config = load_engine_config(self.folder)
        self.hf_dir = self.folder / config["hf_model_dir"]
        self.vocab_size = int(json.loads((self.hf_dir / "config.json").read_text())["vocab_size"])
        self.max_seq_len = int(config["build_config"]["max_seq_len"])
        self._engine = None
        self._loading = threading.Lock()
        if load_now:
            self.engine()

    def engine(self):
        from cpu_runtime.engine.runner import EngineRunner

        with self._loading:
            if self._engine is None:
                self._engine = EngineRunner(self.folder, {})
            return self._engine

    def tokens(self, ids, max_new_tokens, end_id, sampling):
        from cpu_runtime.engine.requests import GenerationRequest

        engine = self.engine()
        gen = GenerationRequest(request_id="runner", input_ids=list(ids), max_new_tokens=max_new_tokens,
                                end_id=end_id, temperature=float(sampling["temperature"]), top_k=int(sampling["top_k"]),
                                top_p=float(sampling["top_p"]), repetition_penalty=float(sampling["repetition_penalty"]))
        try:
            while not gen.finished:
                token, _ = engine.step(gen)
                if token is None:
                    break
                gen.output_ids.append(token)
                yield token
        finally:
            engine.release(gen)
