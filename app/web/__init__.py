"""The Gradio UI: Blocks assembly and queue settings (ui), the access gate every acting handler calls,
Build page logic, and one module per tab in pages/.

May import: app.api, app.bench, app.chat and below, setup, gradio.
"""
