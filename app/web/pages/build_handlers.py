"""The Build page's engine-path event handlers, at module level so that tests call them without the layout;
app/web/pages/build.py lays out the widgets and wires these methods to them."""

from __future__ import annotations

import os
from pathlib import Path

import gradio as gr

from app.build import engine as logic
from app.build import serve
from app.build.folders import confine_folders, problems_markdown
from app.chat.servers import BUILD
from app.context import AppContext
from app.web.download import download_payload
from app.web.gate import caller_may_act, require_access
from app.web.messages import (
    MSG_BUILD_NO_SERVER,
    MSG_BUILD_SERVER_RUNNING,
    MSG_BUILT_SERVER_LABEL,
    MSG_NOTHING_TO_RESUME,
    MSG_TWIN_LABEL,
    MSG_TWIN_SERVING,
    MSG_TWIN_STARTING,
)
from app.web.pages.build_form import FORM_FIELDS
from setup.hub.names import scrub
from setup.jobs.registry import EngineRegistry
from setup.jobs.store import JobError, JobStore
from setup.launcher import ports_or_free
from setup.plan.config import ConfigError, PlanConfig
from setup.plan.preflight import preflight

SHELL_MIME = "text/x-shellscript"
LOG_LINES = 40
TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json")  # a folder AutoTokenizer can read


def built_tokenizer(config: PlanConfig) -> str | None:
    """The folder holding the built model's tokenizer (the plan's tokenizer folder, else its checkpoint), or None
    when neither holds one (a .nemo file, say)."""
    return next((folder for folder in (config.tokenizer_dir, config.checkpoint)
                 if folder and any((Path(folder) / name).is_file() for name in TOKENIZER_FILES)), None)


class BuildService:
    """What the page keeps between events: the job store, the engine registry, plans by job, the server."""

    def __init__(self, store: JobStore | None = None, registry: EngineRegistry | None = None):
        self.registry = registry or EngineRegistry()
        self.store = store or JobStore(registry=self.registry)
        self.plans: dict = {}
        self.deployment = logic.LaunchedTriton()
        self.serve = serve.ServeServer()  # trtllm-serve started from the page
        self.llmapi = logic.LaunchedTriton()  # Triton on an llmapi repository started from the page

    def newest(self) -> str | None:
        rows = self.store.list()
        return rows[0]["id"] if rows else None


def split(values) -> tuple[dict, dict]:
    """The widget values (form fields, then Triton fields) as two mappings by name."""
    form = dict(zip(FORM_FIELDS, values[: len(FORM_FIELDS)], strict=True))
    triton = {f.name: v for f, v in zip(logic.TRITON_FIELDS, values[len(FORM_FIELDS):], strict=True)}
    return form, triton


def on_family(family_id: str, version_text: str):
    """A family picked: its example model id, dtypes, limits, description and Triton serving defaults."""
    d = logic.family_defaults(family_id)
    triton = logic.triton_defaults(family_id)  # the family's serving defaults (XComposer2: LoRA cache 256, ...)
    model_id = gr.Textbox(value=logic.example_model_id(family_id), placeholder=logic.model_id_placeholder(family_id))
    return (model_id, gr.Dropdown(choices=d["dtypes"], value=d["dtype"]),
            d["max_batch_size"], d["max_input_len"], d["max_seq_len"], d["max_num_images"],
            logic.family_markdown(family_id, version_text), *(triton[f.name] for f in logic.TRITON_FIELDS))


def on_family_once(family_id: str, version_text: str, applied: str | None, outputs: int) -> tuple:
    """on_family, and the family now applied (the last of `outputs` values), for a family this session has not applied
    yet; nothing at all for the same pick again. Gradio's dropdown sends its input event twice for one pick (the typed
    filter, then the option clicked): on a busy machine the second answer came after a model id was typed and put
    the family's example back, and the build downloaded the example model (issue 48's flake)."""
    if family_id == applied:
        return (gr.skip(),) * outputs
    return (*on_family(family_id, version_text), family_id)


def token_env(token: str | None) -> dict[str, str] | None:
    """The environment a job's steps run in: the app's own, with the form's token as HF_TOKEN when one is given
    (only the process environment carries it; the plan, the job list and the log never do)."""
    token = (token or "").strip()
    return {**os.environ, "HF_TOKEN": token} if token else None


class BuildHandlers:
    """The handlers of one Build page: `ctx` for access and workspace, `service` for jobs and servers."""

    def __init__(self, ctx: AppContext, service: BuildService, chat_tab: str = "chat"):
        self.ctx, self.service, self.chat_tab = ctx, service, chat_tab
        self.base_config = ctx.config  # the chat's settings the app started with (a twin's replace them for it)

    def confined(self, values) -> tuple[dict, dict, list[str]]:
        """The form and Triton values by name, a model id's folders named under the workspace, and the folders
        found outside it."""
        form, triton = split(values)
        roots = self.ctx.access.workspace.roots
        form = logic.model_source(form, roots[0]) if roots else form  # a model id's folders under the workspace
        form, outside = confine_folders(form, self.ctx.access.workspace)
        return form, triton, outside

    def on_show(self, request: gr.Request, *values):
        require_access(self.ctx, request)
        form, triton, outside = self.confined(values)
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

    def submit(self, view: logic.PlanView, token: str | None = None):
        """Start `view`'s plan as a job; `token` goes to its environment only (and out of any error)."""
        try:
            job = self.service.store.submit(view.plan, env=token_env(token))
        except JobError as exc:
            raise gr.Error(scrub(str(exc), token), print_exception=False) from None
        self.service.plans[job.id] = view.plan
        return job

    def on_run(self, request: gr.Request, *values):
        """`values`: the form's and the Triton fields' values, then the token field's."""
        require_access(self.ctx, request)
        *values, token = values
        form, triton, outside = self.confined(values)
        if outside:
            raise gr.Error("\n".join(outside), print_exception=False)
        view = logic.plan_view(form, triton)
        if view.plan is None:
            raise gr.Error("\n".join(view.problems), print_exception=False)
        job = self.submit(view, token)
        return gr.Dropdown(choices=logic.job_choices(self.service.store), value=job.id), view.summary, view.shell

    def on_cancel(self, job_id, request: gr.Request):
        require_access(self.ctx, request)
        job = self.service.store.get(job_id) if job_id else None
        if job is not None:
            job.cancel()

    def on_tick(self, job_id, request: gr.Request):
        service = self.service
        if caller_may_act(self.ctx, request):  # the page polls every second: no toast, just nothing to show
            return (logic.status_html(None), "", gr.Button(visible=False), "", gr.skip(), gr.Button(visible=False))
        # The list's choices are refreshed; its value only when nothing is picked yet. A tick still running
        # when Run or Resume picked a new job must not put the old one back (the page then followed a job
        # that had ended, and never showed the new one finish).
        jobs_update = gr.update(choices=logic.job_choices(service.store))
        if not job_id:
            job_id = service.newest()
            jobs_update = gr.Dropdown(choices=jobs_update["choices"], value=job_id)
        record = service.store.status(job_id) if job_id else None
        can_deploy = bool(record and record["status"] == "done" and job_id in service.plans
                          and service.plans[job_id].deployment)
        tail = service.store.log_tail(job_id, LOG_LINES) if job_id else ""
        return (logic.status_html(record), tail, gr.Button(visible=can_deploy),
                service.deployment.message, jobs_update, gr.Button(visible=service.deployment.grpc_url is not None))

    def on_deploy(self, job_id, request: gr.Request):
        require_access(self.ctx, request)
        plan = self.service.plans.get(job_id)
        if plan is None or not plan.deployment:
            raise gr.Error(logic.MSG_DEPLOY_NOT_SERVED, print_exception=False)
        base = self.base_config
        # after a twin, the app's own settings again; the built model's tokenizer (its chat template, and the base
        # a training in that session starts from)
        tokenizer = built_tokenizer(plan.config)
        chat = {"deployment": base.deployment, "model": base.model, "adapters_dir": base.adapters_dir,
                "model_adapter": base.model_adapter, "tokenizer_dir": tokenizer or base.tokenizer_dir}
        label = MSG_BUILT_SERVER_LABEL.format(family=plan.family.name)
        if not self.service.deployment.start(lambda: logic.deploy_plan(plan), chat=chat,
                                             on_ready=self.lists_server(label, chat)):
            raise gr.Error(MSG_BUILD_SERVER_RUNNING, print_exception=False)
        return self.service.deployment.message

    def lists_server(self, label: str, chat: dict):
        """What the page's server does once it is ready: it joins the chat's server list (as "build", replacing
        the one launched before it), listed while its process runs."""
        launched = self.service.deployment

        def ready(grpc_url: str) -> None:
            self.ctx.triton_server(BUILD, f"{label} at {grpc_url}", grpc_url,
                                   running=lambda: launched.grpc_url == grpc_url, **chat)
        return ready

    def on_demo(self, family, http_port, grpc_port, request: gr.Request):
        """Start the CPU twin chosen beside the button (it follows the form's family; any twin, the cpu-ocr demo
        too); the chat then talks to it with the deployment kind and model it needs."""
        require_access(self.ctx, request)
        self.start_twin(family, http_port, grpc_port)
        return self.service.deployment.message

    def start_twin(self, family, http_port, grpc_port) -> str:
        """Start `family`'s CPU twin in the background (gr.Error in a sentence: no twin, a server running);
        its family id."""
        from setup.cpu.demo import start_demo_triton
        from setup.cpu.twins import twin_for

        try:
            twin = twin_for(family)
        except ValueError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        # the form's ports, or free ones when they are taken (by `make demo` beside it, say)
        ports = ports_or_free((int(http_port or 8000), int(grpc_port or 8001), int(grpc_port or 8001) + 1))
        base = self.base_config
        chat = {"deployment": twin.kind, "model": twin.model or base.model,
                "adapters_dir": twin.adapters_dir or base.adapters_dir,
                "model_adapter": twin.model_adapter or base.model_adapter, "tokenizer_dir": base.tokenizer_dir}
        started = self.service.deployment.start(
            lambda: start_demo_triton(*ports, log=lambda *_: None, port_flag=None, deployment=twin.demo),
            starting=MSG_TWIN_STARTING.format(family=twin.family), serving=MSG_TWIN_SERVING.format(family=twin.family, demo=twin.demo),
            chat=chat, on_ready=self.lists_server(MSG_TWIN_LABEL.format(family=twin.family), chat))
        if not started:
            raise gr.Error(MSG_BUILD_SERVER_RUNNING, print_exception=False)
        return twin.family

    def on_stop(self, request: gr.Request):
        require_access(self.ctx, request)
        self.service.deployment.stop(wait=False)  # "Stopping…" now; the timer shows "stopped" when it is
        return self.service.deployment.message

    def on_resume(self, job_id, token, request: gr.Request):
        require_access(self.ctx, request)
        store = self.service.store
        if job_id not in {r["id"] for r in store.resumable()}:
            raise gr.Error(MSG_NOTHING_TO_RESUME, print_exception=False)
        # checked again: the workspace may differ
        saved, outside = confine_folders(store.saved_config(job_id) or {}, self.ctx.access.workspace)
        if outside:
            raise gr.Error("\n".join(outside), print_exception=False)
        try:
            config = PlanConfig.from_mapping(saved, where=f"job {job_id}")
        except ConfigError as exc:
            raise gr.Error("\n".join(exc.problems), print_exception=False) from None
        view = logic.config_view(config)
        if view.plan is None:
            raise gr.Error("\n".join(view.problems), print_exception=False)
        job = self.submit(view, token)
        values = logic.form_values(config, FORM_FIELDS)  # the form shows what runs
        dtypes = logic.family_defaults(config.family)["dtypes"]
        values[FORM_FIELDS.index("dtype")] = gr.Dropdown(choices=dtypes, value=view.plan.derived["dtype"])
        return (gr.Dropdown(choices=logic.job_choices(store), value=job.id), view.summary, view.shell,
                *values, logic.family_markdown(config.family, config.trtllm_version))

    def on_open_chat(self, request: gr.Request):
        require_access(self.ctx, request)
        url = self.service.deployment.grpc_url
        if url is None:
            raise gr.Error(MSG_BUILD_NO_SERVER, print_exception=False)
        if self.ctx.servers.chosen_id(request.session_hash) != BUILD:  # this browser session only
            self.ctx.servers.choose(request.session_hash, BUILD)
        return gr.Tabs(selected=self.chat_tab)

    def on_engines(self, request: gr.Request):
        return "" if caller_may_act(self.ctx, request) else logic.registry_markdown(self.service.registry)
