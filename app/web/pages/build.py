"""Build tab: pick a family and limits, see the exact commands, run them with progress, cancel, resume, deploy.

The layout only: the form's fields are declared in app/web/pages/build_form.py, the handlers live in
app/web/pages/build_handlers.py."""

from __future__ import annotations

import gradio as gr

from app.build import engine as logic
from app.build import llmapi, serve
from app.context import AppConfig, AppContext
from app.web.download import SAVE_PAYLOAD_JS
from app.web.messages import MSG_DISABLED
from app.web.page_timers import started_by
from app.web.pages import build_api
from app.web.pages.build_cache import build_cache_calculator
from app.web.pages.build_form import FIELDS, FIRST_VERSION, form_row, token_box
from app.web.pages.build_handlers import BuildHandlers, BuildService, on_family_once
from app.web.pages.build_llmapi import build_llmapi
from app.web.pages.build_serve import build_serve
from app.web.pages.plan_form import plan_box

TITLE = "Build"
POLL_SECONDS = 1.0
# The log box keeps its newest line in view after each update, unless the reader has scrolled up to read.
FOLLOW_LOG_JS = """() => {
  const box = document.querySelector('#build-log textarea');
  if (!box) return;
  if (!box.dataset.follow) {
    box.dataset.follow = 'yes';
    box.addEventListener('scroll', () => {
      box.dataset.follow = box.scrollHeight - box.scrollTop - box.clientHeight < 30 ? 'yes' : 'no';
    });
  }
  if (box.dataset.follow === 'yes') requestAnimationFrame(() => { box.scrollTop = box.scrollHeight; });
}"""


def _triton_widget(field: logic.TritonField, family_id: str):
    info = logic.triton_field_help(field.name)
    default = logic.triton_field_default(field.name, family_id)
    elem_id = f"triton-{field.name.replace('_', '-')}"
    if field.kind == "choice":
        return gr.Dropdown(list(field.choices), value=default, label=field.label, info=info, elem_id=elem_id)
    if field.kind == "bool":
        return gr.Checkbox(value=bool(default), label=field.label, info=info, elem_id=elem_id)
    if field.kind == "number":
        return gr.Number(value=default, label=field.label, info=info, elem_id=elem_id)
    return gr.Textbox(value=default or "", label=field.label, info=info, elem_id=elem_id)


def _form(first: str) -> tuple[dict, gr.Markdown, list]:
    """The engine path's form: widgets by field name, the family's description, the Triton widgets."""
    widgets: dict = {}
    with gr.Row():
        widgets.update(form_row("model", first))
    family_info = gr.Markdown(logic.family_markdown(first, FIRST_VERSION), elem_id="build-family-info")
    with gr.Row():
        widgets.update(form_row("source", first))
        widgets["hf_token"] = token_box()  # not a form field: it never goes into a plan or a job's config
    for row in ("folders", "limits"):
        with gr.Row():
            widgets.update(form_row(row, first))
    with gr.Accordion("LoRA and other inputs", open=False), gr.Row():
        widgets.update(form_row("more", first))
    with gr.Accordion("Triton deployment parameters", open=False):
        triton_widgets = [_triton_widget(f, first) for f in logic.TRITON_FIELDS]
    return widgets, family_info, triton_widgets


def twin_choices() -> list[str]:
    """The families with a CPU twin, the default demo (cpu-ocr) first."""
    from setup.cpu.twins import CPU_OCR, cpu_twins

    return [CPU_OCR, *sorted(f for f in cpu_twins() if f != CPU_OCR)]


def twin_of(family: str | None, shown: str | None = None) -> str:
    """The twin to offer for the form's family: its own when it has one, else the one shown (else cpu-ocr)."""
    choices = twin_choices()
    return family if family in choices else shown if shown in choices else choices[0]


def build(ctx: AppContext, service: BuildService | None = None, tabs: gr.Tabs | None = None,
          chat_tab: str = "chat") -> None:
    """Lay out the build tab inside the current Blocks context and wire its events.

    With `tabs`, "Chat with this server" also switches to the `chat_tab` tab.
    """
    if not logic.access_allowed(ctx.config.host, ctx.config.auth):
        gr.Markdown(MSG_DISABLED.format(host=ctx.config.host), elem_id="build-disabled")
        return
    service = service or BuildService()
    handlers = BuildHandlers(ctx, service, chat_tab)
    build_api.register(build_api.BuildApi(handlers))  # plan, run, status, cancel for scripts
    first = next(iter(logic.family_choices()))[1]

    # Deployment kind: the engine path (below) or TensorRT-LLM 1.x trtllm-serve (app/web/pages/build_serve.py).
    kind = gr.Radio([*serve.DEPLOYMENTS, llmapi.DEPLOYMENT], value="engine", label="Deployment",
                    elem_id="build-deployment")
    serve_column = build_serve(ctx, service.serve)
    llmapi_column = build_llmapi(ctx, service.llmapi)  # TensorRT-LLM 1.x behind Triton's llmapi model
    with gr.Column(elem_id="build-engine-path") as engine_column:
        widgets, family_info, triton_widgets = _form(first)
        all_inputs = [widgets[f.name] for f in FIELDS] + triton_widgets
        with gr.Row():
            show = gr.Button("Show plan", elem_id="build-show-plan")
            run = gr.Button("Run / resume", variant="primary", elem_id="build-run")
            cancel = gr.Button("Cancel", variant="stop", elem_id="build-cancel")
            export = gr.Button("Export as shell script", interactive=False, elem_id="build-export")
        summary = gr.Markdown(elem_id="build-summary")
        export_payload = gr.Textbox(visible=False, elem_id="build-export-payload")
        script = plan_box("Plan (exact commands)", "build-plan")
        with gr.Row():
            jobs = gr.Dropdown(choices=logic.job_choices(service.store), value=service.newest,
                               allow_custom_value=True, label="Build jobs (kept across reloads)", elem_id="build-jobs")
            resume = gr.Button("Resume selected job", elem_id="build-resume", scale=0)
        status = gr.HTML(logic.MSG_NO_JOB, elem_id="build-status")
        log = gr.Textbox(label="Log (last lines)", lines=12, max_lines=12, interactive=False, autoscroll=True,
                         elem_id="build-log")
        with gr.Row():
            deploy = gr.Button("Write repository and launch", visible=False, elem_id="build-deploy")
            twin = gr.Dropdown(twin_choices(), value=twin_of(first), label="CPU twin", elem_id="build-cpu-twin",
                               info="The family whose CPU twin the demo button serves.", min_width=160)
            demo = gr.Button("CPU demo: write repository and launch", elem_id="build-cpu-demo")
            stop_server = gr.Button("Stop server", elem_id="build-stop-server")
            open_chat = gr.Button("Chat with this server", variant="primary", visible=False, elem_id="build-open-chat")
        server = gr.Markdown(elem_id="build-server")
        with gr.Accordion("Built engines", open=False):
            engines = gr.Markdown(elem_id="build-engines")
    with gr.Accordion("Server ports", open=False):
        http_port = gr.Number(8000, precision=0, label="HTTP port", elem_id="build-http-port")
        grpc_port = gr.Number(8001, precision=0, label="gRPC port (metrics: gRPC + 1)", elem_id="build-grpc-port")
    build_cache_calculator(ctx)

    private = {"api_visibility": "private"}
    kind.change(lambda k: (gr.Column(visible=k == "engine"), gr.Column(visible=k == "trtllm-serve"),
                           gr.Column(visible=k == "llmapi")),
                kind, [engine_column, serve_column, llmapi_column], **private)
    family, version = widgets["family"], widgets["trtllm_version"]
    family_outputs = [widgets[name] for name in ("model_id", "dtype", "max_batch_size", "max_input_len", "max_seq_len",
                                                 "max_num_images")]
    # .input: a person picking a family gets its defaults; a resumed job's form keeps its own values. One pick sends
    # the event twice: the second changes nothing (on_family_once; one at a time, so the second sees the first's state)
    applied = gr.State(None)
    picked = [*family_outputs, family_info, *triton_widgets, applied]
    family.input(lambda chosen, shown_version, last: on_family_once(chosen, shown_version, last, len(picked)),
                 [family, version, applied], picked, concurrency_limit=1, concurrency_id="build-family-pick",
                 **private)
    family.change(lambda chosen, shown: twin_of(chosen, shown), [family, twin], twin, **private)
    version.change(logic.family_markdown, [family, version], family_info, **private)
    show.click(handlers.on_show, all_inputs, [summary, script, export, export_payload], **private)
    export.click(None, export_payload, None, js=SAVE_PAYLOAD_JS, **private)
    token = widgets["hf_token"]
    timer = gr.Timer(POLL_SECONDS)
    started_by([
        run.click(handlers.on_run, [*all_inputs, token], [jobs, summary, script], **private),
        resume.click(handlers.on_resume, [jobs, token], [jobs, summary, script, *all_inputs, family_info], **private),
        deploy.click(handlers.on_deploy, jobs, server, **private),
        demo.click(handlers.on_demo, [twin, http_port, grpc_port], server, **private),
    ], timer)
    cancel.click(handlers.on_cancel, jobs, None, **private)
    stop_server.click(handlers.on_stop, None, server, **private)
    timer.tick(handlers.on_tick, jobs, [status, log, deploy, server, jobs, open_chat], show_progress="hidden",
               **private).then(None, js=FOLLOW_LOG_JS, **private)
    open_chat.click(handlers.on_open_chat, None, tabs, **private)
    timer.tick(handlers.on_engines, None, engines, show_progress="hidden", **private)


if __name__ == "__main__":  # launch this tab alone
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
