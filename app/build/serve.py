"""Build page, deployment kind "TensorRT-LLM 1.x, trtllm-serve", without Gradio: form -> plan, write, start."""

from __future__ import annotations

import html
import shutil
import subprocess
import threading
from pathlib import Path

from app.build.messages import MSG_NOT_INSTALLED, MSG_SERVE_RUNNING, MSG_STARTED
from app.build.plan_view import PlanView, plan_view, problems_view, served_family_choices, typed_form
from setup.plan.serve import ServeConfig, ServePlan, make_serve_plan, write_serve_files
from setup.plan.serve_catalog import family_note, releases
from setup.plan.types import PlanError

DEPLOYMENTS = (("Engine path (TensorRT engines + Triton)", "engine"), ("TensorRT-LLM 1.x, trtllm-serve", "trtllm-serve"))
SERVE_VERSIONS = tuple(releases())
INT_FIELDS = ("tp", "pp", "max_batch_size", "max_num_tokens", "max_seq_len", "max_lora_rank", "max_loras",
              "max_cpu_loras", "port")


family_choices = served_family_choices


def family_markdown(family_id: str, version: str) -> str:
    return f"**trtllm-serve:** {html.escape(family_note(family_id, version), quote=False)}"


def form_to_config(form: dict) -> ServeConfig:
    """Widget values -> ServeConfig; empty values mean "trtllm-serve's default"."""
    values = typed_form(form, INT_FIELDS)
    modules = values.pop("lora_target_modules", "")
    values["lora_target_modules"] = [m.strip() for m in str(modules).split(",") if m.strip()]
    return ServeConfig(**values)


def serve_view(form: dict) -> PlanView:
    """The command and YAML to show, or the problems."""
    try:
        plan = make_serve_plan(form_to_config(form))
    except (PlanError, TypeError, ValueError) as exc:
        return problems_view(getattr(exc, "problems", [str(exc)]))
    return plan_view(plan, plan.to_shell() + f"\n# --- {plan.out / 'extra_llm_api_options.yaml'} ---\n"
                     + plan.options_yaml())


class ServeServer:
    """One trtllm-serve process started from the page (by pid, stopped by the page)."""

    def __init__(self, which=shutil.which, popen=subprocess.Popen) -> None:
        self._which, self._popen = which, popen
        self.process = None
        self.url: str | None = None
        self._lock = threading.Lock()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def write_and_start(self, plan: ServePlan) -> str:
        """Write the files; start trtllm-serve when it is installed. Returns the sentence to show."""
        with self._lock:
            if self.running():
                raise RuntimeError(MSG_SERVE_RUNNING)
            options, script = write_serve_files(plan)
            files = f"{options} and {script}"
            binary = self._which("trtllm-serve")
            if binary is None:
                return MSG_NOT_INSTALLED.format(files=files, script=script, release=plan.release.release, url=plan.url)
            log = open(Path(plan.out) / "trtllm-serve.log", "ab")  # noqa: SIM115 - owned by the child
            try:
                self.process = self._popen([binary, *plan.argv[1:]], stdout=log, stderr=subprocess.STDOUT)
            finally:
                log.close()
            self.url = plan.url
            return MSG_STARTED.format(files=files, pid=self.process.pid, url=plan.url)

    def stop(self) -> str:
        with self._lock:
            process, self.process, self.url = self.process, None, None
        if process is None or process.poll() is not None:
            return "No trtllm-serve started from this page is running."
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        return "trtllm-serve stopped."
