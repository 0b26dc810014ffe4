"""What every layer shares: typed errors, defaults, limits and messages, who may act (access), and the typed
conversation (conversation.py: turns, reply versions, and which turns the model is sent).

May import: `setup` only (workspace roots). No Gradio, no FastAPI.
"""
