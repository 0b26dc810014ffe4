"""What every layer shares: typed errors, defaults, limits and messages, and who may act (access).

May import: `setup` only (workspace roots). No Gradio, no FastAPI.
"""
