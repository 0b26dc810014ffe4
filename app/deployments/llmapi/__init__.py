"""Triton's llmapi model (TensorRT-LLM 1.x, PyTorch backend).

    deployment.py   LlmApiDeployment: the prompt, adapters by path (copied where the server reads them), images
    stream.py       the request's tensors (only the inputs the config declares) and the reply stream

Imports: app.deployments' top modules, app.core, app.triton, app.adapters, app.vision; no other kind, no Gradio.
"""
