"""Talks to servers: one interface (base.py), one folder per deployment kind with the same few files.

At the top, shared by every kind:

    base.py            the Deployment protocol and the values that cross it
    connect.py         the deployment a command line / config names (the only module that imports the kinds)
    prompts.py         prompt building (named templates, the tokenizer's chat template) and chat messages
    model_lora.py      an adapter that is part of the served model (InternLM-XComposer2's Partial LoRA)
    triton_served.py   what the Triton kinds share: status, metrics, the adapter probe
    messages.py        the package's plain sentences

One folder per kind; each has `deployment.py` (the Deployment: connection, adapters, requests), and where the
kind has them `stream.py` (the reply stream) and `wire.py` / `limits.py` (what goes over the wire):

    triton_engine/     Triton engine topology (ensemble / tensorrt_llm_bls), adapters through the registry;
                       InternLM-XComposer2 (one image per request, its own Partial LoRA) is served here
    llmapi/            Triton's llmapi model (TensorRT-LLM 1.x): inputs as declared, adapters by path, image_url
    openai_compat/     any OpenAI-compatible server (vLLM, SGLang, NIM, trtllm-serve, Dynamo, this app)

Imports: app.core, app.triton, app.adapters, app.vision, setup.catalog; a kind folder imports the top modules,
never another kind. No Gradio. Everything above (chat, APIs, benchmark, pages) uses the protocol only.
"""
