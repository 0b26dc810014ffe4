"""The Triton engine topology (ensemble / tensorrt_llm_bls): the prompt built here with the model's template,
images as the tensors the served model declares, adapters through the adapter registry.

    deployment.py   TritonEngineDeployment; the served family's own adapter and one-image rules (XComposer2)
    limits.py       the engine's max input length (from its config.json) and the prompt's token check

The reply stream is the registry's (app.adapters.stream over app.triton.client).
Imports: app.deployments' top modules, app.core, app.triton, app.adapters, app.vision; no other kind, no Gradio.
"""
