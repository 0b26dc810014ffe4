"""The Build page's engine path through the Gradio API (plan, run, status, cancel, the CPU twin), for scripts and the
command line's peers: the same checks as the page (the launch token or a login, folders inside the workspace)
and the same plans. Settings are the form's fields by name; a field left out keeps what the page would show for
the family."""

from __future__ import annotations

import gradio as gr

from app.build import engine as logic
from app.web.gate import require_access
from app.web.messages import MSG_BUILD_API_NO_FAMILY, MSG_BUILD_API_UNKNOWN_FIELDS, MSG_BUILD_API_UNKNOWN_JOB
from app.web.pages.build_form import FORM_FIELDS, start_values
from app.web.pages.build_handlers import LOG_LINES, BuildHandlers
from setup.plan.preflight import preflight

TRITON_NAMES = tuple(f.name for f in logic.TRITON_FIELDS)


def _fail(text: str) -> gr.Error:
    return gr.Error(text, print_exception=False)


def form_values(settings: dict | None) -> list:
    """The widget values (form fields, then Triton fields) the page would hold after `settings` were typed in."""
    settings = dict(settings or {})
    family = settings.get("family")
    families = [family_id for _, family_id in logic.family_choices()]
    if family not in families:
        raise _fail(MSG_BUILD_API_NO_FAMILY.format(family=family, choices=", ".join(families)))
    unknown = sorted(set(settings) - set(FORM_FIELDS) - set(TRITON_NAMES))
    if unknown:
        raise _fail(MSG_BUILD_API_UNKNOWN_FIELDS.format(
            names=", ".join(unknown), known=", ".join((*FORM_FIELDS, *TRITON_NAMES))))
    values = {**start_values(family), **logic.triton_defaults(family), **settings}
    return [values.get(name) for name in (*FORM_FIELDS, *TRITON_NAMES)]


class BuildApi:
    """Plan, run, status and cancel, as the page's buttons do them."""

    def __init__(self, handlers: BuildHandlers):
        self.handlers = handlers

    def _view(self, settings: dict | None, **checks):
        form, triton, outside = self.handlers.confined(form_values(settings))
        if outside:
            raise _fail("\n".join(outside))
        view = logic.plan_view(form, triton, **checks)
        if view.plan is None:
            raise _fail("\n".join(view.problems))
        return view

    def build_plan(self, settings: dict, request: gr.Request) -> dict:
        """The plan for `settings` (e.g. {"family": "llava-1.5", "model_id": "llava-hf/llava-1.5-7b-hf"}):
        its summary and the exact commands as a shell script. Nothing runs."""
        require_access(self.handlers.ctx, request)
        view = self._view(settings, preflight_fn=preflight, checkpoint_optional=True)
        return {"summary": view.summary, "script": view.shell}

    def build_run(self, settings: dict, token: str | None, request: gr.Request) -> dict:
        """Start the plan as a build job (Run on the page); `token`: a Hugging Face token for the download step
        only, never stored or returned. The job's id and script."""
        require_access(self.handlers.ctx, request)
        view = self._view(settings)
        job = self.handlers.submit(view, token or None)
        return {"job": job.id, "summary": view.summary, "script": view.shell}

    def build_status(self, job: str, request: gr.Request) -> dict:
        """A job's status (steps, progress, message) and the last lines of its log."""
        require_access(self.handlers.ctx, request)
        record = self.handlers.service.store.status(job) if job else None
        if record is None:
            raise _fail(MSG_BUILD_API_UNKNOWN_JOB.format(job=job))
        return {**record, "log_tail": self.handlers.service.store.log_tail(job, LOG_LINES)}

    def build_cancel(self, job: str, request: gr.Request) -> dict:
        """Cancel a running job (its step's process group is stopped); its status afterwards."""
        require_access(self.handlers.ctx, request)
        running = self.handlers.service.store.get(job) if job else None
        if running is None and self.handlers.service.store.status(job) is None:
            raise _fail(MSG_BUILD_API_UNKNOWN_JOB.format(job=job))
        if running is not None:
            running.cancel()
        return self.build_status(job, request)


    def build_demo(self, family: str, http_port: int = 8000, grpc_port: int = 8001, wait_seconds: float = 0,
                   request: gr.Request = None) -> dict:
        """Start the CPU twin of `family` (the page's "CPU demo" button; `python -m app --demo --twin F` from
        the command line) on these ports, metrics on gRPC + 1 (free ports instead when one is taken); with
        `wait_seconds`, wait up to that long for it to be ready. Its state (starting, ready, failed), the page's
        message and its gRPC address; once ready it is listed as server "build" (`list_servers`), which `generate`
        and `compare` take as `deployment`."""
        require_access(self.handlers.ctx, request)
        started = self.handlers.start_twin(family, http_port, grpc_port)
        server = self.handlers.service.deployment
        if wait_seconds:
            server.wait(float(wait_seconds))
        return {"family": started, "state": server.state, "message": server.message, "grpc_url": server.grpc_url}


    def build_stop_server(self, wait_seconds: float = 0, request: gr.Request = None) -> dict:
        """Stop the server started from the page (the "Stop server" button); with `wait_seconds`, wait up to that
        long for it to be stopped. Its state and the page's message; sessions that chose it are back on the app's
        own server."""
        require_access(self.handlers.ctx, request)
        server = self.handlers.service.deployment
        server.stop(wait=bool(wait_seconds))
        return {"state": server.state, "message": server.message}


def register(api: BuildApi) -> None:
    """The endpoints, named as the page's buttons."""
    for handler in (api.build_plan, api.build_run, api.build_status, api.build_cancel, api.build_demo,
                    api.build_stop_server):
        gr.api(handler, api_name=handler.__name__)
