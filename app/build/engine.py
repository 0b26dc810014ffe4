"""The engine path of the Build page (TensorRT engines + Triton) without Gradio: form fields and help, form -> plan,
status rendering, the engine registry, the server started from the page, access rule."""

from __future__ import annotations

import html
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from app.build.messages import MSG_DEPLOY_NOT_SERVED, MSG_NO_JOB, MSG_NO_MODEL_ID, MSG_STOPPED, MSG_STOPPING
from app.core.access import is_loopback
from setup.catalog.builds import families, get_family, resolve_version
from setup.hub.names import MARKER, hub_defaults, looks_like_model_id
from setup.jobs.registry import EngineRegistry, installed_trtllm_version
from setup.jobs.store import JobStore
from setup.plan.config import ConfigError, PlanConfig
from setup.plan.planner import Plan, PlanError, make_plan, triton_support
from setup.repo.writer import RepoError, family_deployment, parameter_specs

VERSIONS = ("0.11", "0.12", "0.15", "0.19")
STATUS_ICONS = {"pending": "○", "running": "◐", "done": "●", "skipped": "◌ skipped", "failed": "✖", "cancelled": "■"}


@dataclass(frozen=True)
class TritonField:
    """One Triton deployment parameter on the page: widget kind and choices; help comes from the YAML."""

    name: str
    label: str
    kind: str  # choice | number | bool | text
    choices: tuple[str, ...] = ()


TRITON_FIELDS = (
    TritonField("triton_max_batch_size", "Triton max batch size", "number"),
    TritonField("batching_strategy", "Batching strategy", "choice", ("inflight_fused_batching", "inflight_batching")),
    TritonField("batch_scheduler_policy", "Batch scheduler policy", "choice",
                ("guaranteed_no_evict", "max_utilization")),
    TritonField("kv_cache_free_gpu_mem_fraction", "KV cache free GPU memory fraction", "number"),
    TritonField("max_tokens_in_paged_kv_cache", "Max tokens in paged KV cache", "number"),
    TritonField("max_attention_window_size", "Max attention window", "number"),
    TritonField("enable_kv_cache_reuse", "KV cache reuse", "bool"),
    TritonField("decoupled_mode", "Decoupled (streaming)", "bool"),
    TritonField("max_queue_delay_microseconds", "Max queue delay (µs)", "number"),
    TritonField("exclude_input_in_output", "Exclude input in output", "bool"),
    TritonField("lora_cache_optimal_adapter_size", "LoRA cache optimal adapter size", "number"),
    TritonField("lora_cache_max_adapter_size", "LoRA cache max adapter size", "number"),
    TritonField("lora_cache_gpu_memory_fraction", "LoRA cache GPU memory fraction", "number"),
    TritonField("lora_cache_host_memory_bytes", "LoRA cache host memory (bytes)", "number"),
    TritonField("lora_prefetch_dir", "LoRA prefetch folder", "text"),
    TritonField("preprocessing_instance_count", "Preprocessing instances", "number"),
    TritonField("postprocessing_instance_count", "Postprocessing instances", "number"),
    TritonField("bls_instance_count", "BLS instances", "number"),
)
DERIVED_NOTE = {"lora_cache_optimal_adapter_size", "lora_cache_max_adapter_size", "lora_cache_host_memory_bytes",
                "lora_prefetch_dir"}
ENGINE_DERIVED = {"triton_max_batch_size": " Left empty, the plan uses the engine's max batch size."}


def triton_field_help(name: str) -> str:
    """What the parameter does and its default (from setup/data/repo_parameters.yaml)."""
    spec = parameter_specs()[name]
    default = "the backend's own" if spec.default is None else str(spec.default).lower() \
        if isinstance(spec.default, bool) else str(spec.default)
    if name in ENGINE_DERIVED:
        default = "the engine's max batch size, or the family's own"
    text = f"{spec.help} Default: {default}."
    if name in DERIVED_NOTE:
        text += " Left empty, it is derived from the adapters folder."
    text += ENGINE_DERIVED.get(name, "")
    return text


def triton_defaults(family_id: str | None) -> dict:
    """What each Triton field starts at for a family: the parameter's own default, then what the family's
    template and Triton section set (InternLM-XComposer2: LoRA cache 256, batch 32, max_utilization, ...).
    Fields the plan derives from the engine (the Triton batch) start empty unless the family sets them."""
    specs = parameter_specs()
    values = {f.name: None if f.name in ENGINE_DERIVED else specs[f.name].default for f in TRITON_FIELDS}
    try:
        _, family_values = family_deployment(family_id) if family_id else (None, {})
    except RepoError:  # not served by these templates: the parameters' own defaults
        family_values = {}
    values.update({k: v for k, v in family_values.items() if k in values})
    return values


def triton_field_default(name: str, family_id: str | None = None):
    """The value a Triton field starts at (for `family_id`, its family's own serving defaults)."""
    return triton_defaults(family_id)[name]


def access_allowed(host: str, auth) -> bool:
    """The page works on loopback; anywhere else only with authentication configured."""
    return bool(auth) or is_loopback(host)


def family_choices() -> list[tuple[str, str]]:
    return [(f.name, f.id) for f in families().values()]


def family_markdown(family_id: str, version: str) -> str:
    """What the wizard shows about a family before anything runs, the Triton path first."""
    try:
        family, ver = get_family(family_id), resolve_version(version)
    except (KeyError, ValueError) as exc:
        return f"**{html.escape(str(exc))}**"
    lines = [f"**Triton:** {triton_support(family, ver)}",
             f"**Dtypes:** {', '.join(family.dtypes)}" + (f" — {family.raw['dtype_note']}"
                                                          if family.raw.get("dtype_note") else "")]
    if family.visual:
        size = family.visual.get("image_size")
        lines.append(f"**Images:** {family.tokens_per_image} tokens per image"
                     + (f", {size[0]}x{size[1]}" if size else "")
                     + f", visual builder type `{family.visual_model_type(ver.era.key)}`, up to {family.max_images} "
                     "per request")
    lines.append(f"**LoRA:** {'supported' if family.lora.get('supported') else 'not supported'}"
                 + (f" — {family.lora['note']}" if family.lora.get("note") else ""))
    lines.append(f"**Prompt:** `{family.raw.get('prompt_template', '')}`")
    lines += [f"- {note}" for note in family.notes(ver)]
    return "\n\n".join(lines)


def family_defaults(family_id: str) -> dict:
    """Form values a family starts with (its documented limits and default dtype)."""
    family = get_family(family_id)
    defaults = family.defaults
    return {"dtype": family.default_dtype, "dtypes": family.dtypes,
            "max_batch_size": defaults.get("max_batch_size"), "max_input_len": defaults.get("max_input_len"),
            "max_seq_len": defaults.get("max_seq_len"), "max_num_images": defaults.get("max_num_images", 0),
            "lora": bool(family.lora.get("supported"))}


def example_model_id(family_id: str) -> str:
    """The family's example checkpoint when it is a hub id (some families name a .nemo file in words)."""
    example = get_family(family_id).raw.get("example_checkpoint")
    return str(example) if looks_like_model_id(example) else ""


def model_id_placeholder(family_id: str) -> str:
    """What the empty model-id box says for a family whose example is not a hub id (a .nemo file named in words)."""
    family = get_family(family_id)
    example = family.raw.get("example_checkpoint")
    return "" if looks_like_model_id(example) else MSG_NO_MODEL_ID.format(family=family.name, example=example)


def model_source(form: dict, root: Path) -> dict:
    """The form with its checkpoint source settled (the rule the form states: MSG_MODEL_SOURCE_RULE): with a model id, a checkpoint box left
    empty names models/ORG--NAME under `root`; a folder that does not exist yet, is empty or holds only this
    download's own files gets the download; a checkpoint of one's own (a file, or a folder with other files) wins
    over the model id. An empty output folder with a model id becomes builds/FAMILY--ORG--NAME under `root`."""
    model_id = str(form.get("model_id") or "").strip()
    if not model_id:
        return {**form, "model_id": None, "revision": None}
    checkpoint = str(form.get("checkpoint") or "").strip()
    if checkpoint and holds_own_checkpoint(Path(checkpoint).expanduser()):
        return {**form, "model_id": None, "revision": None}
    return hub_defaults({**form, "model_id": model_id}, root)


DOWNLOAD_OWN_FILES = (MARKER, ".download")  # what a download leaves besides the model's files (marker, parts)


def holds_own_checkpoint(path: Path) -> bool:
    """A file, or a folder with files a download of ours did not start (an empty or missing folder holds none)."""
    if path.is_file():
        return True
    try:
        names = {entry.name for entry in path.iterdir()}
    except OSError:
        return False
    return bool(names) and not (names & set(DOWNLOAD_OWN_FILES))


def form_to_config(form: dict, triton: dict) -> PlanConfig:
    """Widget values -> PlanConfig; Triton values equal to their default are left out (the plan stays short)."""
    defaults = triton_defaults(form.get("family"))
    kept = {}
    for name, value in triton.items():
        if value is None or value == "":
            continue
        if isinstance(value, float) and value.is_integer() and name not in ("kv_cache_free_gpu_mem_fraction",
                                                                            "lora_cache_gpu_memory_fraction"):
            value = int(value)
        if defaults.get(name) is not None and str(value).lower() == str(defaults[name]).lower():
            continue
        kept[name] = value
    values = {k: v for k, v in form.items() if v is not None and v != ""}
    return PlanConfig.from_mapping({**values, "triton": kept}, where="form")


@dataclass
class PlanView:
    plan: Plan | None
    shell: str
    summary: str
    problems: list[str]


def plan_view(form: dict, triton: dict, preflight_fn=None, checkpoint_optional: bool = False) -> PlanView:
    """The plan and what to show with it; problems instead when the form is not valid.

    `checkpoint_optional` (Show plan): a checkpoint not downloaded yet is a warning, not a problem."""
    try:
        config = form_to_config(form, triton)
    except ConfigError as exc:
        return _problems_view(exc.problems)
    return config_view(config, preflight_fn, checkpoint_optional)


def _problems_view(problems: list[str]) -> PlanView:
    text = "\n".join(f"- ✖ {html.escape(p)}" for p in problems)
    return PlanView(None, "", f"**Fix these first:**\n\n{text}", problems)


def config_view(config: PlanConfig, preflight_fn=None, checkpoint_optional: bool = False) -> PlanView:
    """plan_view for a config already made (a saved job's, when it is resumed)."""
    try:
        plan = make_plan(config, checkpoint_optional)
    except PlanError as exc:
        return _problems_view(exc.problems)
    warnings = plan.warnings + (preflight_fn(plan) if preflight_fn else [])
    lines = [f"- {html.escape(s)}" for s in plan.summary_lines()]
    lines.append(f"- **Triton:** {html.escape(plan.triton_note)}")
    lines += [f"- ⚠ {html.escape(w)}" for w in warnings]
    return PlanView(plan, plan.to_shell(), "\n".join(lines), [])


def export_name(plan: Plan) -> str:
    """The exported shell script's file name: one per family and release."""
    return f"build-{plan.family.id}-{plan.version.text}.sh"


def _fmt_seconds(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


def status_html(status: dict | None) -> str:
    """Phase list with elapsed times and an overall progress bar."""
    if not status:
        return f"<p>{MSG_NO_JOB}</p>"
    percent = round(100 * float(status.get("progress", 0)))
    rows = []
    for step in status.get("steps", []):
        icon = STATUS_ICONS.get(step["status"], step["status"])
        detail = f" — {html.escape(step['message'])}" if step.get("message") and step["status"] != "skipped" else ""
        rows.append(f"<li class='step-{step['status']}' data-step='{html.escape(step['id'])}'>{icon} "
                    f"{html.escape(step['title'])} <small>{_fmt_seconds(step.get('elapsed', 0))}</small>{detail}</li>")
    message = f"<p class='job-message'>{html.escape(status['message'])}</p>" if status.get("message") else ""
    return (f"<div class='build-status' data-status='{status['status']}'>"
            f"<p><b>{html.escape(status['status'])}</b> · job {html.escape(status['id'])}</p>"
            f"<progress max='100' value='{percent}' style='width:100%'></progress> <span>{percent}%</span>"
            f"<ul style='list-style:none;padding-left:0'>{''.join(rows)}</ul>{message}</div>")


def job_choices(store: JobStore) -> list[tuple[str, str]]:
    """Dropdown entries, newest first; jobs that Resume can pick up say so."""
    resumable = {r["id"] for r in store.resumable()}
    return [(f"{r['id']} · {r['status']}" + (" · can resume" if r["id"] in resumable else ""), r["id"])
            for r in store.list()]


def form_values(config: PlanConfig, fields: tuple[str, ...]) -> list:
    """The form's widget values for a saved config (the form fields, then the Triton fields), so the page
    shows what a resumed job runs."""
    values = [getattr(config, name) for name in fields]
    triton = config.triton or {}
    defaults = triton_defaults(config.family)
    return values + [triton.get(f.name, defaults[f.name]) for f in TRITON_FIELDS]


def registry_markdown(registry: EngineRegistry) -> str:
    """Built engines with their staleness against the installed TensorRT-LLM."""
    entries = registry.entries()
    if not entries:
        return "No engines built yet."
    installed = installed_trtllm_version()
    rows = ["| Engine | Family | TensorRT-LLM | Built | Status |", "|---|---|---|---|---|"]
    for e in entries:
        rows.append(f"| `{e.engine_dir}` | {e.family} | {e.trtllm_version} | {e.built_at} | "
                    f"{registry.status(e, installed, probe=False)} |")
    return "\n".join(rows)


class LaunchedTriton:
    """A Triton server started from the page (the plan's repository, or the CPU demo), run in a thread.

    Stop while it is still starting wins: the server that comes up afterwards is stopped at once.
    """

    def __init__(self) -> None:
        self.process = None
        self.state = "stopped"
        self.message = ""
        self.serving = ""  # what the ready message adds (which family's CPU twin)
        self.chat: dict = {}  # the AppConfig fields the chat needs to talk to it (its deployment kind, model)
        self.on_ready = None  # called with the gRPC address once the server is ready
        self._lock = threading.Lock()
        self._generation = 0  # bumped by stop(): a start begun before it is stale

    def _start(self, prepare, generation: int) -> None:
        try:
            process = prepare()
        except Exception as exc:  # noqa: BLE001 - shown on the page
            with self._lock:
                if generation == self._generation:
                    self.state, self.message = "failed", str(exc)
            return
        with self._lock:
            stale = generation != self._generation
            if not stale:
                self.process = process
                self.state = "ready"
                self.message = f"Triton ready (gRPC 127.0.0.1:{process.opts.grpc_port})." + self.serving
        if stale:
            process.stop()
        elif self.on_ready is not None:
            self.on_ready(f"127.0.0.1:{process.opts.grpc_port}")

    def start(self, prepare, starting: str = "", serving: str = "", chat: dict | None = None,
              on_ready=None) -> bool:
        """Run `prepare()` (returns a ready TritonProcess) in the background; False if one is running
        (or still stopping: its ports are not free yet). `starting` and `serving` are added to the starting and
        ready messages; `chat`: the AppConfig fields the chat needs for this server (none: the app's own);
        `on_ready(grpc_url)` is called once it is ready (the app lists it among the chat's servers)."""
        with self._lock:
            if self.state in ("starting", "stopping") or (self.process is not None and self.process.is_running()):
                return False
            self.serving, self.chat, self.on_ready = serving, dict(chat or {}), on_ready
            self.state, self.message = "starting", f"Starting Triton{starting}..."
            threading.Thread(target=self._start, args=(prepare, self._generation), daemon=True).start()
            return True

    def stop(self, wait: bool = True) -> None:
        """Stop the server. With `wait=False` the state is "stopping" at once and the process is stopped in
        a thread: a shutdown takes seconds, and the page must say so meanwhile, not "ready"."""
        with self._lock:
            self._generation += 1
            generation = self._generation
            process, self.process = self.process, None
            if process is None:
                self.state, self.message = "stopped", MSG_STOPPED
                return
            self.state, self.message = "stopping", MSG_STOPPING
        if wait:
            self._stopped(process, generation)
        else:
            threading.Thread(target=self._stopped, args=(process, generation), daemon=True).start()

    def _stopped(self, process, generation: int) -> None:
        process.stop()
        with self._lock:
            if generation == self._generation:
                self.state, self.message = "stopped", MSG_STOPPED

    @property
    def grpc_url(self) -> str | None:
        """gRPC address of the server started here, once it is ready."""
        process = self.process
        if self.state == "ready" and process is not None and process.is_running():
            return f"127.0.0.1:{process.opts.grpc_port}"
        return None

    def wait(self, timeout: float) -> str:
        end = time.monotonic() + timeout
        while self.state == "starting" and time.monotonic() < end:
            time.sleep(0.2)
        return self.state


def deploy_plan(plan: Plan, log_path: Path | None = None):
    """Write the plan's repository and start Triton on it; returns the ready TritonProcess.

    Taken ports are replaced by free ones before the repository is written (the ready message names the gRPC port).
    """
    from setup.launcher import LaunchOptions, check_ports_free, find_tritonserver, ports_or_free, start_triton
    from setup.repo.writer import DeploymentConfig, write_repository

    if not plan.deployment:
        raise RuntimeError(MSG_DEPLOY_NOT_SERVED)
    launch = next((s for s in plan.steps if s.phase == "launch"), None)  # the models ranks above 0 load
    names = tuple(launch.argv[list(launch.argv).index("--engine-models") + 1].split(",")) if launch else ("tensorrt_llm",)
    # the plan's ports, or free ones when they are taken (by `make demo` beside it, say)
    http, grpc, metrics = ports_or_free((plan.config.http_port, plan.config.grpc_port, plan.config.metrics_port))
    options = LaunchOptions(model_repo=plan.out / "triton_repo", http_port=http, grpc_port=grpc, metrics_port=metrics,
                            world_size=plan.derived["world_size"], engine_model_names=names)
    check_ports_free(options, port_flag=None)
    config = DeploymentConfig(**plan.deployment, trtllm_version=plan.version.text)
    repo = write_repository(config, options.model_repo, force=True)
    return start_triton(find_tritonserver(), replace(options, model_repo=repo),
                        log_path or plan.out / "logs" / "triton.log", 600, port_flag=None)
