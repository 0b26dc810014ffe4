"""The Python code the CPU demo's tritonserver runs in place of TensorRT-LLM and the vision engines.

- `engine`: the CPU inference engine (in-flight batching, paged KV accounting, LoRA and Partial LoRA,
  per-row sampling) behind the `tensorrt_llm` model's tensor contract.
- `encoder`: the CPU image encoder (labels, faces, colours, shapes and text read by OCR) whose rows stand in
  for a vision tower's.
- `llmapi_standin`: the parts of the llmapi stand-in model (LLM arguments, requests, PEFT adapters by path,
  image_url pictures).

The Triton entry points (the model.py files) stay in model_repo_templates/; the repository writer
(setup/repo/runtime.py) copies the parts a model needs into its 1/ folder as `cpu_runtime/<part>`, so a written
repository stands alone. Imports: the standard library and the wheels of requirements-model.txt only; never
app, setup or benchmarks, and no part imports another (each is copied on its own). Only the engine's request
parser and metrics touch triton_python_backend_utils.

User texts: every sentence a person reads (errors, warnings, notes) is a `MSG_` constant in its
package's messages.py, and other modules import it from there; `make lint` checks it
(scripts/check_user_texts.py). Labels and help of widgets stay beside the widget.
"""
