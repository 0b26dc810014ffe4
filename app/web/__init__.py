"""The Gradio UI: Blocks assembly and queue settings (ui), the access gate every acting handler calls,
and one module per tab in pages/ (the Build page's logic without Gradio is app.build).

May import: app.api, app.bench, app.chat, app.build and below, setup, gradio.
"""
