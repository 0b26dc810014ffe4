"""Triton's llmapi model (TensorRT-LLM 1.x, PyTorch backend).

    deployment.py   LlmApiDeployment: the prompt, adapters by path (copied where the server reads them), images
    stream.py       the reply stream (finish reason, KV-cache and timing figures) and Stop
    wire.py         the request's tensors: only the inputs the served config declares, in their dims

Imports: app.deployments' top modules, app.core, app.triton, app.adapters, app.vision; no other kind, no Gradio.
"""
