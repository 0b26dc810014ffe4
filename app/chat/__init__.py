"""The one request path every surface uses: what it needs of the app's context (chat_context.py; the context
itself is app/context.py), prompt building, sampling values, replies to a typed conversation (turns.py, reply_run.py),
the conversations kept in the browser and their versioned JSON (history.py; their JSON conversation_json.py, as files chat_files.py), Compare, throttled updates.

May import: app.adapters, app.vision, app.triton, app.core, setup. No Gradio, no FastAPI.
"""
