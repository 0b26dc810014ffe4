"""The one request path every surface uses: the app context (config, client, adapters, prompts,
live streams), prompt building, sampling values, replies to a typed conversation (turns.py, reply_run.py),
the conversations kept in the browser and their versioned JSON (history.py; their JSON conversation_json.py, as files chat_files.py), Compare, throttled updates.

May import: app.adapters, app.vision, app.triton, app.core, setup. No Gradio, no FastAPI.
"""
