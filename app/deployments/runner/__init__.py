"""The runner topology: one decoupled Python model (multimodal_runner) around TensorRT-LLM's MultimodalModelRunner.

    deployment.py   RunnerDeployment: the bare question (the runner adds its family's template), image bytes, settings
    stream.py       the reply (whole or streamed, as the model's reply_mode says) and its figures
    wire.py         the request's tensors: only the inputs the served config declares, in their dims

Imports: app.deployments' top modules, app.core, app.triton, app.adapters, app.vision; no other kind, no Gradio.
"""
