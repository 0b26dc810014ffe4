"""Any OpenAI-compatible server (vLLM, SGLang, NIM, trtllm-serve, a Dynamo frontend, this app's own API).

    deployment.py   OpenAICompatDeployment: models and adapters the server lists, request bodies, readiness
    stream.py       one streamed chat completion (closing the connection cancels it)
    wire.py         request bodies and the server's errors as the app's typed errors

Imports: app.deployments' top modules, app.core, app.adapters, app.vision, httpx; no other kind, no Gradio.
"""
