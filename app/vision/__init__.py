"""Images: intake checks (format, size, pixels), per-family preprocessing, and the multimodal request
inputs (prompt markers, prompt table) a deployment declares.

May import: app.triton, app.core, setup.
"""
