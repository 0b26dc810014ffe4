"""Deployment knowledge, no UI: families and releases as data, build plans and their runner, Triton
repositories from our templates, the LoRA converter, the CPU demo, and the tritonserver launcher.

Packages by job; imports point down only (contracts in pyproject.toml):

    __main__                  python -m setup ...
    jobs/                     runs plans as jobs: step runner, job store, engine registry, plan/build CLIs
    plan/, cpu/               config -> ordered steps; the embedded CPU deployment
    repo/, lora/              repository writer; PEFT -> backend converter
    catalog/                  model families and TensorRT-LLM releases (YAML) and checkpoint facts
    launcher, workspace, cli_types, paths   the base every package may use

Never imports `app`, Gradio or FastAPI.

User texts: every sentence a person reads (errors, warnings, notes) is a `MSG_` constant in its
package's messages.py, and other modules import it from there; `make lint` checks it
(scripts/check_user_texts.py). Labels and help of widgets stay beside the widget.
"""
