"""`python -m app bench`: request loads, senders (straight to Triton or an OpenAI-compatible API),
statistics, concurrency sweeps and the --adapter/--image hooks.

May import: app.chat and below, setup. No Gradio.
"""
