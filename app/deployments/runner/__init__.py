"""The runner topology: one decoupled Python model (multimodal_runner) around TensorRT-LLM's MultimodalModelRunner.

    deployment.py   RunnerDeployment: the question (in the family's prompt where the runner takes it verbatim), image
                    bytes, settings; the adapters the engine was built with
    family.py       the served family's runner_prompt and runner_llm from its family file
    stream.py       the reply (whole or streamed, as the model's reply_mode says) and its figures
    wire.py         the request's tensors: only the inputs the served config declares, in their dims

Imports: app.deployments' top modules, app.core, app.triton, app.adapters, app.vision; no other kind, no Gradio.
"""
