"""Talks to servers: one interface (base.py), one implementation per deployment kind.

    base.py            the Deployment protocol and its value types
    triton_engine.py   Triton engine topology (ensemble / tensorrt_llm_bls), with the adapter registry
    llmapi.py          Triton's llmapi model (TensorRT-LLM 1.x): inputs as declared, adapters by path, image_url
    openai_compat.py   any OpenAI-compatible server (vLLM, SGLang, NIM, trtllm-serve, Dynamo, this app)
    connect.py         the deployment for a command line / config

Everything above (chat, APIs, benchmark, pages) uses the protocol only.
"""
