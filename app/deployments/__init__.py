"""Talks to servers: one interface (base.py), one folder per deployment kind with the same few files.

At the top, shared by every kind:

    base.py            the Deployment protocol, the values that cross it, and the one adapter-name check
    connect.py         the deployment a command line / config names (the only module here that imports the kinds)
    prompts.py         prompt building (named templates, the tokenizer's chat template) and chat messages
    model_lora.py      an adapter that is part of the served model (InternLM-XComposer2's Partial LoRA)
    triton_served.py   what the Triton kinds share: status, metrics, the adapter probe
    image_urls.py      images as data URLs, at most MAX_IMAGES per message (OpenAI-compatible and llmapi)
    messages.py        the package's plain sentences

One folder per kind, with the same file names: `deployment.py` (the Deployment: connection, adapters, requests),
`stream.py` (the reply stream), `wire.py` (what goes over the wire, where the kind builds more than its declared
inputs: app.triton.declared_inputs), `limits.py` (input limits), where the kind has them. The four kinds' names are
in messages.py (ENGINE_KIND, LLMAPI_KIND, RUNNER_KIND, OPENAI_KIND). A new kind is a new folder beside these,
and a branch in connect.py:

    triton_engine/     Triton engine topology (ensemble / tensorrt_llm_bls), adapters through the registry;
                       InternLM-XComposer2 (one image per request, its own Partial LoRA) is served here
    llmapi/            Triton's llmapi model (TensorRT-LLM 1.x): inputs as declared, adapters by path, image_url
    runner/            Triton's runner topology (one Python model around TensorRT-LLM's MultimodalModelRunner)
    openai_compat/     any OpenAI-compatible server (vLLM, SGLang, NIM, trtllm-serve, Dynamo, this app)

Imports: app.core, app.triton, app.adapters, app.vision, setup.catalog, setup.paths; a kind folder imports
the top modules, never another kind (a contract in pyproject.toml). No Gradio. Everything above (chat, APIs,
benchmark, pages) uses the protocol only.
"""
