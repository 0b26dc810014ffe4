"""Build page, deployment kind "TensorRT-LLM 1.x, Triton llmapi", without Gradio: form -> plan, write, launch."""

from __future__ import annotations

import html
from dataclasses import replace

from app.build.messages import MSG_RUNNING, MSG_STARTING
from app.build.plan_view import PlanView, plan_view, problems_view, served_family_choices, typed_form
from setup.catalog.llmapi_releases import LATEST, llmapi_releases
from setup.launcher import LaunchOptions, check_ports_free, find_tritonserver, start_triton
from setup.plan.llmapi import LlmApiPlan, LlmApiPlanConfig, make_llmapi_plan, write_llmapi_plan
from setup.plan.types import PlanError

DEPLOYMENT = ("TensorRT-LLM 1.x, Triton llmapi", "llmapi")
INT_FIELDS = ("tp", "pp", "max_batch_size", "max_num_tokens", "max_seq_len", "max_lora_rank", "max_cpu_loras",
              "instances", "grpc_port")


def release_choices() -> list[tuple[str, str]]:
    """(label saying what the release's llmapi model serves, release key), newest first."""
    return [(release.label, key) for key, release in reversed(llmapi_releases().items())]


def release_markdown(version: str) -> str:
    release = llmapi_releases().get(version) or llmapi_releases()[LATEST]
    return f"**llmapi at TensorRT-LLM {release.key}:** {html.escape(release.summary(), quote=False)}"


family_choices = served_family_choices


def form_to_config(form: dict) -> LlmApiPlanConfig:
    """Widget values -> LlmApiPlanConfig (the TensorRT-LLM source tree field is the code folder)."""
    values = typed_form(form, INT_FIELDS)
    if "trtllm_root" in values:
        values["code_dir"] = values.pop("trtllm_root")
    return LlmApiPlanConfig(**values)


def llmapi_view(form: dict) -> PlanView:
    """The plan to show, or the problems (one sentence each)."""
    try:
        plan = make_llmapi_plan(form_to_config(form))
    except PlanError as exc:
        return problems_view(list(exc.problems))
    return plan_view(plan, plan.to_shell())


def write_and_launch(plan: LlmApiPlan, server) -> str:
    """Write the repository now (errors show at once), then start Triton on it through the page's server."""
    c = plan.config
    options = LaunchOptions(model_repo=plan.out, http_port=c.http_port, grpc_port=c.grpc_port,
                            metrics_port=c.metrics_port, no_mpi=c.instances > 1)
    check_ports_free(options, None)
    out = write_llmapi_plan(plan)

    def prepare():
        return start_triton(find_tritonserver(), replace(options, model_repo=out), out.parent / "triton_log.txt", 1800.0)

    if not server.start(prepare):
        return MSG_RUNNING
    return MSG_STARTING.format(out=out, port=c.grpc_port, app=" ".join(plan.app_argv()))
