"""The one request path every surface uses: the app context (config, client, adapters, prompts,
live streams), prompt building, sampling values, turns and history, Compare, throttled updates.

May import: app.adapters, app.vision, app.triton, app.core, setup. No Gradio, no FastAPI.
"""
