"""The web app and everything that talks to a running server.

Packages by job; imports point down only (`make lint` runs import-linter with the contracts in
pyproject.toml):

    __main__, web/            surfaces: command line, Gradio UI
    api/, bench/              the Gradio and OpenAI-compatible APIs; the load benchmark
    context.py                what every page and API gets: the app config (AppConfig) and context (AppContext)
    chat/, build/             the one request path every surface uses; the Build page's logic without Gradio
    deployments/              the one interface to a server, one implementation per kind (Triton engine
                              topology, OpenAI-compatible); nothing above it knows which kind it talks to
    adapters/, vision/        LoRA adapters; images, video frames and PDF pages
    outputs/                  family output formats (Deplot tables, Kosmos-2 boxes) as typed data and displays
    triton/                   talks to Triton only
    core/                     errors, defaults and messages, access rules

Every package may import `setup` (never the other way round).

User texts: every sentence a person reads (errors, warnings, notes) is a `MSG_` constant in its
package's messages.py, and other modules import it from there; `make lint` checks it
(scripts/check_user_texts.py). Labels and help of widgets stay beside the widget.
"""
