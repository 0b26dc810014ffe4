"""Build tab: pick a family and limits, see the exact commands, run them with progress, cancel, resume, deploy."""

from __future__ import annotations

import gradio as gr

from app.chat.context import AppConfig, AppContext
from app.web import build_logic as logic
from app.web import llmapi_logic, serve_logic
from app.web.build_folders import confine_folders, problems_markdown
from app.web.download import SAVE_PAYLOAD_JS, download_payload
from app.web.gate import caller_may_act, require_access
from app.web.pages.build_llmapi import build_llmapi
from app.web.pages.build_serve import build_serve
from app.web.pages.plan_form import plan_box
from setup.build.jobs import JobError, JobStore
from setup.build.registry import EngineRegistry
from setup.plan.config import ConfigError, PlanConfig
from setup.plan.preflight import preflight

TITLE = "Build"
SHELL_MIME = "text/x-shellscript"
POLL_SECONDS = 1.0
LOG_LINES = 40
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
FORM_FIELDS = ("family", "checkpoint", "trtllm_version", "out", "dtype", "tp", "pp", "max_batch_size",
               "max_input_len", "max_seq_len", "max_num_images", "lora_dir", "max_lora_rank", "trtllm_root",
               "tokenizer_dir", "vila_path")


class BuildService:
    """What the page keeps between events: the job store, the engine registry, plans by job, the server."""

    def __init__(self, store: JobStore | None = None, registry: EngineRegistry | None = None):
        self.registry = registry or EngineRegistry()
        self.store = store or JobStore(registry=self.registry)
        self.plans: dict = {}
        self.deployment = logic.LaunchedTriton()
        self.serve = serve_logic.ServeServer()  # trtllm-serve started from the page
        self.llmapi = logic.LaunchedTriton()  # Triton on an llmapi repository started from the page


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


def build(ctx: AppContext, service: BuildService | None = None, tabs: gr.Tabs | None = None,
          chat_tab: str = "chat") -> None:
    """Lay out the build tab inside the current Blocks context and wire its events.

    With `tabs`, "Chat with this server" also switches to the `chat_tab` tab.
    """
    if not logic.access_allowed(ctx.config.host, ctx.config.auth):
        gr.Markdown(logic.MSG_DISABLED.format(host=ctx.config.host), elem_id="build-disabled")
        return
    service = service or BuildService()
    helps = PlanConfig.help()
    first = next(iter(logic.family_choices()))[1]
    start = logic.family_defaults(first)

    # Deployment kind: the engine path (below) or TensorRT-LLM 1.x trtllm-serve (app/web/pages/build_serve.py).
    kind = gr.Radio([*serve_logic.DEPLOYMENTS, llmapi_logic.DEPLOYMENT], value="engine", label="Deployment",
                    elem_id="build-deployment")
    serve_column = build_serve(ctx, service.serve)
    llmapi_column = build_llmapi(ctx, service.llmapi)  # TensorRT-LLM 1.x behind Triton's llmapi model
    with gr.Column(elem_id="build-engine-path") as engine_column:
        with gr.Row():
            family = gr.Dropdown(logic.family_choices(), value=first, label="Model family", info=helps["family"],
                                 elem_id="build-family")
            version = gr.Dropdown(list(logic.VERSIONS), value="0.19", allow_custom_value=True,
                                  label="TensorRT-LLM version", info=helps["trtllm_version"], elem_id="build-version")
            dtype = gr.Dropdown(start["dtypes"], value=start["dtype"], label="dtype", info=helps["dtype"],
                                elem_id="build-dtype")
        family_info = gr.Markdown(logic.family_markdown(first, "0.19"), elem_id="build-family-info")
        with gr.Row():
            checkpoint = gr.Textbox(label="Checkpoint folder", info=helps["checkpoint"], elem_id="build-checkpoint")
            out = gr.Textbox(label="Output folder", info=helps["out"], elem_id="build-out")
            trtllm_root = gr.Textbox(value=PlanConfig.trtllm_root, label="TensorRT-LLM source tree",
                                     info=helps["trtllm_root"], elem_id="build-trtllm-root")
        with gr.Row():
            tp = gr.Number(1, precision=0, label="Tensor parallel", info=helps["tp"], elem_id="build-tp")
            pp = gr.Number(1, precision=0, label="Pipeline parallel", info=helps["pp"], elem_id="build-pp")
            batch = gr.Number(start["max_batch_size"], precision=0, label="Max batch size", info=helps["max_batch_size"],
                              elem_id="build-max-batch-size")
            input_len = gr.Number(start["max_input_len"], precision=0, label="Max input length",
                                  info=helps["max_input_len"], elem_id="build-max-input-len")
            seq_len = gr.Number(start["max_seq_len"], precision=0, label="Max sequence length", info=helps["max_seq_len"],
                                elem_id="build-max-seq-len")
            images = gr.Number(start["max_num_images"], precision=0, label="Max images per request",
                               info=helps["max_num_images"], elem_id="build-max-num-images")
        with gr.Accordion("LoRA and other inputs", open=False):
            with gr.Row():
                lora_dir = gr.Textbox(label="LoRA adapters folder", info=helps["lora_dir"], elem_id="build-lora-dir")
                lora_rank = gr.Number(None, precision=0, label="Max LoRA rank", info=helps["max_lora_rank"],
                                      elem_id="build-max-lora-rank")
                tokenizer = gr.Textbox(label="Tokenizer folder", info=helps["tokenizer_dir"], elem_id="build-tokenizer")
                vila = gr.Textbox(label="VILA repository", info=helps["vila_path"], elem_id="build-vila-path")
        with gr.Accordion("Triton deployment parameters", open=False):
            triton_widgets = [_triton_widget(f, first) for f in logic.TRITON_FIELDS]
        form_inputs = [family, checkpoint, version, out, dtype, tp, pp, batch, input_len, seq_len, images, lora_dir,
                       lora_rank, trtllm_root, tokenizer, vila]
        all_inputs = form_inputs + triton_widgets

        with gr.Row():
            show = gr.Button("Show plan", elem_id="build-show-plan")
            run = gr.Button("Run / resume", variant="primary", elem_id="build-run")
            cancel = gr.Button("Cancel", variant="stop", elem_id="build-cancel")
            export = gr.Button("Export as shell script", interactive=False, elem_id="build-export")
        summary = gr.Markdown(elem_id="build-summary")
        export_payload = gr.Textbox(visible=False, elem_id="build-export-payload")
        script = plan_box("Plan (exact commands)", "build-plan")
        with gr.Row():
            jobs = gr.Dropdown(choices=logic.job_choices(service.store), value=lambda: _newest(service),
                               allow_custom_value=True, label="Build jobs (kept across reloads)", elem_id="build-jobs")
            resume = gr.Button("Resume selected job", elem_id="build-resume", scale=0)
        status = gr.HTML(logic.MSG_NO_JOB, elem_id="build-status")
        log = gr.Textbox(label="Log (last lines)", lines=12, max_lines=12, interactive=False, autoscroll=True,
                         elem_id="build-log")
        with gr.Row():
            deploy = gr.Button("Write repository and launch", visible=False, elem_id="build-deploy")
            demo = gr.Button("CPU demo: write repository and launch", elem_id="build-cpu-demo")
            stop_server = gr.Button("Stop server", elem_id="build-stop-server")
            open_chat = gr.Button("Chat with this server", variant="primary", visible=False, elem_id="build-open-chat")
        server = gr.Markdown(elem_id="build-server")
        with gr.Accordion("Built engines", open=False):
            engines = gr.Markdown(elem_id="build-engines")
    kind.change(lambda k: (gr.Column(visible=k == "engine"), gr.Column(visible=k == "trtllm-serve"),
                           gr.Column(visible=k == "llmapi")),
                kind, [engine_column, serve_column, llmapi_column], api_visibility="private")

    def split(values):
        form = dict(zip(FORM_FIELDS, values[: len(FORM_FIELDS)], strict=True))
        triton = {f.name: v for f, v in zip(logic.TRITON_FIELDS, values[len(FORM_FIELDS):], strict=True)}
        return form, triton

    def on_family(family_id, version_text):
        d = logic.family_defaults(family_id)
        triton = logic.triton_defaults(family_id)  # the family's serving defaults (XComposer2: LoRA cache 256, ...)
        return (gr.Dropdown(choices=d["dtypes"], value=d["dtype"]), d["max_batch_size"], d["max_input_len"],
                d["max_seq_len"], d["max_num_images"], logic.family_markdown(family_id, version_text),
                *(triton[f.name] for f in logic.TRITON_FIELDS))

    def on_show(request: gr.Request, *values):
        require_access(ctx, request)
        form, triton = split(values)
        form, outside = confine_folders(form, ctx.access.workspace)
        nothing = gr.Button(interactive=False), ""
        if outside:
            return problems_markdown(outside), "", *nothing
        view = logic.plan_view(form, triton, preflight_fn=preflight, checkpoint_optional=True)
        if view.plan is None:
            return view.summary, "", *nothing
        # The script goes to the browser with the plan (saved there by the Export button), not through a file on
        # the server: Gradio serves files only from its temporary and working folders, never from the cache.
        payload = download_payload(logic.export_name(view.plan), view.shell, SHELL_MIME)
        return view.summary, view.shell, gr.Button(interactive=True), payload

    def on_run(request: gr.Request, *values):
        require_access(ctx, request)
        form, triton = split(values)
        form, outside = confine_folders(form, ctx.access.workspace)
        if outside:
            raise gr.Error("\n".join(outside), print_exception=False)
        view = logic.plan_view(form, triton)
        if view.plan is None:
            raise gr.Error("\n".join(view.problems), print_exception=False)
        try:
            job = service.store.submit(view.plan)
        except JobError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        service.plans[job.id] = view.plan
        return gr.Dropdown(choices=logic.job_choices(service.store), value=job.id), view.summary, view.shell

    def on_cancel(job_id, request: gr.Request):
        require_access(ctx, request)
        job = service.store.get(job_id) if job_id else None
        if job is not None:
            job.cancel()

    def on_tick(job_id, request: gr.Request):
        if caller_may_act(ctx, request):  # the page polls every second: no toast, just nothing to show
            return (logic.status_html(None), "", gr.Button(visible=False), "", gr.skip(), gr.Button(visible=False))
        # The list's choices are refreshed; its value only when nothing is picked yet. A tick still running
        # when Run or Resume picked a new job must not put the old one back (the page then followed a job
        # that had ended, and never showed the new one finish).
        jobs_update = gr.update(choices=logic.job_choices(service.store))
        if not job_id:
            job_id = _newest(service)
            jobs_update = gr.Dropdown(choices=jobs_update["choices"], value=job_id)
        record = service.store.status(job_id) if job_id else None
        can_deploy = bool(record and record["status"] == "done" and job_id in service.plans
                          and service.plans[job_id].deployment)
        tail = service.store.log_tail(job_id, LOG_LINES) if job_id else ""
        return (logic.status_html(record), tail, gr.Button(visible=can_deploy),
                service.deployment.message, jobs_update, gr.Button(visible=service.deployment.grpc_url is not None))

    def on_deploy(job_id, request: gr.Request):
        require_access(ctx, request)
        plan = service.plans.get(job_id)
        if plan is None or not plan.deployment:
            raise gr.Error(logic.MSG_DEPLOY_NOT_SERVED, print_exception=False)
        if not service.deployment.start(lambda: logic.deploy_plan(plan)):
            raise gr.Error("A server started from this page is already running; stop it first.",
                           print_exception=False)
        return service.deployment.message

    def on_demo(http_port, grpc_port, request: gr.Request):
        require_access(ctx, request)
        from setup.cpu.demo import start_demo_triton

        ports = (int(http_port or 8000), int(grpc_port or 8001), int(grpc_port or 8001) + 1)
        if not service.deployment.start(lambda: start_demo_triton(*ports, log=lambda *_: None, port_flag=None)):
            raise gr.Error("A server started from this page is already running; stop it first.",
                           print_exception=False)
        return service.deployment.message

    def on_stop(request: gr.Request):
        require_access(ctx, request)
        service.deployment.stop(wait=False)  # "Stopping…" now; the timer shows "stopped" when it is
        return service.deployment.message

    def on_resume(job_id, request: gr.Request):
        require_access(ctx, request)
        if job_id not in {r["id"] for r in service.store.resumable()}:
            raise gr.Error(logic.MSG_NOTHING_TO_RESUME, print_exception=False)
        saved, outside = confine_folders(service.store.saved_config(job_id) or {}, ctx.access.workspace)  # checked again: the workspace may differ
        if outside:
            raise gr.Error("\n".join(outside), print_exception=False)
        try:
            config = PlanConfig.from_mapping(saved, where=f"job {job_id}")
        except ConfigError as exc:
            raise gr.Error("\n".join(exc.problems), print_exception=False) from None
        view = logic.config_view(config)
        if view.plan is None:
            raise gr.Error("\n".join(view.problems), print_exception=False)
        try:
            job = service.store.submit(view.plan)
        except JobError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        service.plans[job.id] = view.plan
        values = logic.form_values(config, FORM_FIELDS)  # the form shows what runs
        dtypes = logic.family_defaults(config.family)["dtypes"]
        values[FORM_FIELDS.index("dtype")] = gr.Dropdown(choices=dtypes, value=view.plan.derived["dtype"])
        return (gr.Dropdown(choices=logic.job_choices(service.store), value=job.id), view.summary, view.shell,
                *values, logic.family_markdown(config.family, config.trtllm_version))

    with gr.Accordion("Server ports", open=False):
        http_port = gr.Number(8000, precision=0, label="HTTP port", elem_id="build-http-port")
        grpc_port = gr.Number(8001, precision=0, label="gRPC port (metrics: gRPC + 1)", elem_id="build-grpc-port")

    private = {"api_visibility": "private"}
    # .input: a person picking a family gets its defaults; a resumed job's form keeps its own values.
    family.input(on_family, [family, version], [dtype, batch, input_len, seq_len, images, family_info,
                                                *triton_widgets], **private)
    version.change(logic.family_markdown, [family, version], family_info, **private)
    show.click(on_show, all_inputs, [summary, script, export, export_payload], **private)
    export.click(None, export_payload, None, js=SAVE_PAYLOAD_JS, **private)
    run.click(on_run, all_inputs, [jobs, summary, script], **private)
    resume.click(on_resume, jobs, [jobs, summary, script, *all_inputs, family_info], **private)
    cancel.click(on_cancel, jobs, None, **private)
    deploy.click(on_deploy, jobs, server, **private)
    demo.click(on_demo, [http_port, grpc_port], server, **private)
    stop_server.click(on_stop, None, server, **private)
    timer = gr.Timer(POLL_SECONDS)
    timer.tick(on_tick, jobs, [status, log, deploy, server, jobs, open_chat], show_progress="hidden",
               **private).then(None, js=FOLLOW_LOG_JS, **private)

    def on_open_chat(request: gr.Request):
        require_access(ctx, request)
        url = service.deployment.grpc_url
        if url is None:
            raise gr.Error("No server started from this page is ready.", print_exception=False)
        ctx.retarget(url)
        return gr.Tabs(selected=chat_tab)

    open_chat.click(on_open_chat, None, tabs, **private)
    def on_engines(request: gr.Request):
        return "" if caller_may_act(ctx, request) else logic.registry_markdown(service.registry)

    timer.tick(on_engines, None, engines, show_progress="hidden", **private)


def _newest(service: BuildService) -> str | None:
    rows = service.store.list()
    return rows[0]["id"] if rows else None


if __name__ == "__main__":  # launch this tab alone
    with gr.Blocks(title=TITLE) as page:
        build(AppContext(AppConfig()))
    page.queue().launch(server_name="127.0.0.1")
