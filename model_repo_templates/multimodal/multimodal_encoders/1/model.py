"""GPU multimodal_encoders: run the visual TensorRT engine on preprocessed pixels (image_input families).

Input IMAGE is FP16 [batch, images, 3, H, W] (llava, blip2-opt, vila: pixels made by the client);
the engine in multimodal_model_path (model.engine, or visual_encoder.engine of older builders) maps
[N, 3, H, W] to [N, visual tokens, hidden], its input named `input` and its output `encoder_output`
(TensorRT-LLM 0.19+) or `output` (older). Rows of one request are concatenated in image order, which
is the order of the fake ids preprocessing placed. A request without IMAGE gets no outputs at all, so a
text-only request reaches tensorrt_llm without a prompt table.
At start the engine's output rows per image must equal the rows per image of the LLM engine's prompt table
(gpt_model_path: max_prompt_embedding_table_size // max_batch_size // max_num_images, as preprocessing places
fake ids): otherwise the model refuses to start and says which is which (#47 item 14).
Needs `tensorrt` and a CUDA build of torch; the CPU demo replaces this file with its OCR encoder.
"""

import json
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils
from request_loop import answer_each

ENGINE_FILES = ("model.engine", "visual_encoder.engine")
OUTPUT_NAMES = ("encoder_output", "output")


def _param(config, key):
    value = config.get("parameters", {}).get(key, {}).get("string_value", "")
    return "" if value.startswith("${") else value


def table_rows_per_image(engine_dir, max_images):
    """(rows per image, the sentence saying where they come from) of the LLM engine's prompt table, derived as
    preprocessing derives its fake ids; None when there is no LLM engine config to read."""
    try:
        build = json.loads((Path(engine_dir) / "config.json").read_text())["build_config"]
        table, batch = int(build.get("max_prompt_embedding_table_size") or 0), int(build["max_batch_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    images = max(1, max_images)
    return table // batch // images, (f"max_prompt_embedding_table_size {table} // max_batch_size {batch} // "
                                      f"max_num_images {images}")


def check_rows(engine_file, output_shape, engine_dir, max_images):
    """Refuse, in a sentence, a visual engine whose rows per image are not the LLM engine's prompt-table rows."""
    shape = [int(d) for d in output_shape]
    expected = table_rows_per_image(engine_dir, max_images)
    if len(shape) != 3 or shape[1] <= 0 or expected is None:
        return
    if shape[1] != expected[0]:
        raise ValueError(
            f"The visual engine {engine_file} makes {shape[1]} prompt-table rows per image (output shape {shape}), "
            f"but the LLM engine in {engine_dir} holds {expected[0]} rows per image ({expected[1]}), which is where "
            "preprocessing puts each image's fake ids: every image would be misaligned. Build both engines from "
            "the same checkpoint (another model size has another number of visual tokens per image), with "
            f"--max_multimodal_len = max_batch_size x {shape[1]} x max_num_images.")


class TritonPythonModel:
    def initialize(self, args):
        import tensorrt as trt
        import torch

        self.torch = torch
        config = json.loads(args["model_config"])
        folder = Path(_param(config, "multimodal_model_path"))
        builder = json.loads((folder / "config.json").read_text()).get("builder_config", {})
        self.model_type = builder.get("model_type", "")
        self.max_images = int(_param(config, "max_num_images") or 0)
        self.engine_batch = int(builder.get("max_batch_size") or 1)
        engine_file = next((folder / name for name in ENGINE_FILES if (folder / name).is_file()), None)
        if engine_file is None:
            raise pb_utils.TritonModelException(f"No visual engine ({' or '.join(ENGINE_FILES)}) in {folder}.")
        self.device = torch.device("cuda:0")
        runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
        self.engine = runtime.deserialize_cuda_engine(engine_file.read_bytes())
        self.context = self.engine.create_execution_context()
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        self.output_name = next((n for n in OUTPUT_NAMES if n in names), names[-1])
        self.input_name = "input" if "input" in names else names[0]
        try:
            check_rows(engine_file, self.engine.get_tensor_shape(self.output_name), _param(config, "gpt_model_path"),
                       self.max_images)
        except ValueError as exc:
            raise pb_utils.TritonModelException(str(exc)) from None
        self.input_dtype = self._torch_dtype(self.engine.get_tensor_dtype(self.input_name), trt)
        self.output_dtype = self._torch_dtype(self.engine.get_tensor_dtype(self.output_name), trt)

    def _torch_dtype(self, trt_dtype, trt):
        mapping = {trt.float16: self.torch.float16, trt.float32: self.torch.float32, trt.bfloat16: self.torch.bfloat16}
        return mapping[trt_dtype]

    def _run(self, pixels):
        """[N, 3, H, W] numpy -> [N, tokens, hidden] float16 numpy, in engine-sized chunks."""
        torch = self.torch
        outputs = []
        stream = torch.cuda.current_stream(self.device)
        for start in range(0, pixels.shape[0], self.engine_batch):
            chunk = torch.from_numpy(np.ascontiguousarray(pixels[start:start + self.engine_batch]))
            chunk = chunk.to(self.device, dtype=self.input_dtype)
            self.context.set_input_shape(self.input_name, tuple(chunk.shape))
            shape = tuple(self.context.get_tensor_shape(self.output_name))
            out = torch.empty(shape, dtype=self.output_dtype, device=self.device)
            self.context.set_tensor_address(self.input_name, chunk.data_ptr())
            self.context.set_tensor_address(self.output_name, out.data_ptr())
            if not self.context.execute_async_v3(stream.cuda_stream):
                raise RuntimeError("The visual engine failed to run.")
            stream.synchronize()
            outputs.append(out.to(torch.float16).cpu().numpy())
        return np.concatenate(outputs)

    def _one(self, request):
        tensor = pb_utils.get_input_tensor_by_name(request, "IMAGE")
        if tensor is None or tensor.as_numpy().size == 0:
            return pb_utils.InferenceResponse([])
        pixels = tensor.as_numpy()
        if pixels.ndim == 4:
            pixels = pixels[:, None]
        if self.max_images and pixels.shape[1] > self.max_images:
            raise ValueError(f"At most {self.max_images} image(s) per request; got {pixels.shape[1]}.")
        batch, images = pixels.shape[:2]
        features = self._run(pixels.reshape(batch * images, *pixels.shape[2:]))
        table = features.reshape(batch, images * features.shape[1], features.shape[2])
        sizes = np.full((batch, 1), table.shape[1], np.int32)
        return pb_utils.InferenceResponse([pb_utils.Tensor("OUT_PROMPT_EMBEDDING_TABLE", table),
                                           pb_utils.Tensor("OUT_PROMPT_VOCAB_SIZE", sizes)])

    def execute(self, requests):
        return answer_each(requests, self._one)
