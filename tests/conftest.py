"""Shared fixtures: a real tritonserver with the demo repository, the web app, a real browser.

Tests live by area: unit/<package>/ (no servers), integration/ (real tritonserver, app, vLLM),
browser/ (Debian's Chromium via Playwright). The folder sets the markers (`make unit` runs unit/ only).

The converted CPU model lives in the normal cache (it takes ~20 s to make once); repositories, logs
and Triton ports are per test session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.server_groups import TestNeeds, group_summary, server_groups
from tests.server_lifetimes import by_group, finish_fixtures, group_fixtures_done
from tests.server_memory import VLLM_GIB, BudgetedProcess, MemoryLedger, repository_gib
from tests.server_scheduling import write_groups

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


TESTS = Path(__file__).resolve().parent
FOLDER_MARKERS = {"integration": ("integration",), "browser": ("integration", "browser")}


# ---- a temporary folder of the run's own ------------------------------------------------------------------
# Everything the run and the servers it starts write to the temporary folder (pytest's tmp_path, Gradio's
# uploads, Chromium's profile, tritonserver's and the peers' scratch files) lands in one folder made for this
# run, which is removed when the run ends: a run leaves nothing in /tmp, whatever a test forgot.
RUN_TMP_ENV = "TRITON_DEMO_TEST_TMP"


def pytest_configure(config) -> None:
    """TMPDIR for this process and its children is a fresh folder of this run (a worker of a parallel run
    shares its controller's folder)."""
    folder = os.environ.get(RUN_TMP_ENV)
    if not folder or not Path(folder).is_dir():
        folder = tempfile.mkdtemp(prefix="triton-vlm-test-run-")
        os.environ[RUN_TMP_ENV] = folder
        config._run_tmp_owner = True
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # gettempdir() reads TMPDIR afresh


def _left_in_run_tmp() -> list[str]:
    folder = Path(os.environ.get(RUN_TMP_ENV, ""))
    if not folder.name or not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("pytest-of-"))


def pytest_terminal_summary(terminalreporter, config) -> None:
    """Name what the run left in its temporary folder (before pytest's closing line; the folder goes anyway)."""
    left = _left_in_run_tmp() if getattr(config, "_run_tmp_owner", False) else []
    if left:
        shown = ", ".join(left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
        terminalreporter.write_line(f"Left in the run's temporary folder, removed at exit: {shown}")


# ---- servers stopped while the next tests run ------------------------------------------------------------
# A tritonserver or peer takes seconds to shut down (its models unload, the peers drain); a fixture that is done
# with one hands its stop to a thread, and the run waits for every such stop before it ends, so no process of
# the run outlives it.
_STOPPING: list[threading.Thread] = []
_STOP_ERRORS: list[str] = []


def stop_in_background(stop: Callable[[], object], what: str) -> None:
    """Call `stop()` (a server's own stop: by the process group it started) on a thread of its own."""
    def run() -> None:
        try:
            stop()
        except Exception as exc:  # noqa: BLE001 - named at the end of the run
            _STOP_ERRORS.append(f"{what}: {exc!r}")

    thread = threading.Thread(target=run, name=f"stop {what}")
    thread.start()
    _STOPPING.append(thread)


def pytest_sessionfinish(session, exitstatus) -> None:
    """Wait for the servers still stopping; a stop that failed fails the run (a worker of a parallel run hands its
    failed stops to the controller, which names them)."""
    while _STOPPING:
        _STOPPING.pop().join()
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["stop_errors"] = list(_STOP_ERRORS)
    elif _STOP_ERRORS:
        session.config.get_terminal_writer().line("Servers that did not stop cleanly: " + "; ".join(_STOP_ERRORS))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """A pytest-xdist worker finished: keep the stops that failed on it."""
    _STOP_ERRORS.extend(getattr(node, "workeroutput", {}).get("stop_errors", []))


def pytest_unconfigure(config) -> None:
    """Remove the run's temporary folder (only the process that made it does)."""
    if getattr(config, "_run_tmp_owner", False):
        shutil.rmtree(os.environ.pop(RUN_TMP_ENV), ignore_errors=True)


def pytest_addoption(parser) -> None:
    parser.addoption("--server-groups", action="store_true",
                     help="list the xdist groups of the collected tests (tests/server_groups.py) and which tests "
                          "each holds")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist adds the group to each test id, and before -m deselects
def pytest_collection_modifyitems(config, items) -> None:
    """Markers by folder: tests/integration/* are `integration`, tests/browser/* also `browser`; each server and
    browser test gets the `xdist_group` of the servers it shares (tests/server_groups.py), so that a parallel
    pass (`--dist loadgroup`) runs every test of a shared server on one worker."""
    needs = []
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(TESTS).parts
        for marker in FOLDER_MARKERS.get(parts[0], ()):
            item.add_marker(marker)
        if parts[0] in FOLDER_MARKERS:
            needs.append(TestNeeds(item.nodeid, str(Path("tests", *parts)), frozenset(item.fixturenames)))
    groups = server_groups(needs)
    for item in items:
        if item.nodeid in groups:
            item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    items[:] = by_group(items, groups)  # one process runs each group's tests together, as a worker does
    config._test_groups = groups
    if hasattr(config, "workerinput") and config.getvalue("loadgroup"):
        write_groups(Path(os.environ[RUN_TMP_ENV]), groups)
    if config.getoption("server_groups") and not hasattr(config, "workerinput"):
        config._server_groups = groups


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` by the groups the workers wrote (tests/server_scheduling.py says why)."""
    if config.getvalue("dist") == "loadgroup":
        from tests.server_scheduling import ServerGroupScheduling

        return ServerGroupScheduling(config, log, folder=Path(os.environ[RUN_TMP_ENV]))
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of a group, its shared servers stop (tests/server_lifetimes.py)."""
    yield
    finish_fixtures(item, group_fixtures_done(item, nextitem, getattr(item.config, "_test_groups", {})))


def pytest_collection_finish(session) -> None:
    """With --server-groups: the groups of the selected tests, one line each."""
    groups = getattr(session.config, "_server_groups", None)
    if groups is not None:
        selected = {item.nodeid for item in session.items}
        writer = session.config.get_terminal_writer()
        writer.line("Server pass groups (xdist_group: tests, by module):")
        for line in group_summary({k: v for k, v in groups.items() if k in selected}):
            writer.line("  " + line)


DEMO_PACING_RATE = 40.0  # the demo servers in tests carry the pacing model too (`--pacing-rate`)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TritonEndpoints:
    def __init__(self, process, http_port: int, grpc_port: int, metrics_port: int, repo: Path):
        self.process = process
        self.http_port, self.grpc_port, self.metrics_port = http_port, grpc_port, metrics_port
        self.repo = repo
        self.grpc_url = f"127.0.0.1:{grpc_port}"
        self.http_url = f"http://127.0.0.1:{http_port}"


def _on_free_ports(start):
    """start(http, grpc, metrics) on free ports. Another process may take a port between the pick and the
    bind (other test runs share the machine), so a start refused for a taken port is tried again on new ones."""
    from setup.launcher.options import LaunchError

    for attempt in range(3):
        ports = [free_port() for _ in range(3)]
        try:
            return ports, start(*ports)
        except LaunchError as exc:
            if "already in use" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def memory_ledger() -> MemoryLedger:
    """The run's server memory budget, shared by its workers (tests/server_memory.py)."""
    return MemoryLedger(Path(os.environ[RUN_TMP_ENV]))


def _serve_repository(tmp: Path, repo: Path) -> TritonEndpoints:
    """tritonserver on free ports for a written demo repository (its log in `tmp`), once the run's server memory
    budget has room for it; its process's stop() gives the room back."""
    from setup.cpu.demo import start_demo_triton

    ledger, key = memory_ledger(), f"triton {tmp}"
    ledger.acquire(key, repository_gib(repo))
    try:
        ports, process = _on_free_ports(lambda *ports: start_demo_triton(
            *ports, repo=repo, log_path=tmp / "triton.log", log=lambda *_: None, ready_timeout=TRITON_READY_TIMEOUT))
    except BaseException:
        ledger.release(key)
        raise
    return TritonEndpoints(BudgetedProcess(process, ledger, key), *ports, repo)


def start_triton(tmp: Path, overrides: dict | None = None) -> TritonEndpoints:
    """Write the demo repository into `tmp` and start tritonserver on free ports."""
    from setup.cpu.demo import write_demo_repository

    repo = write_demo_repository(tmp / "repo", overrides=overrides, log=lambda *_: None, pacing_rate=DEMO_PACING_RATE)
    return _serve_repository(tmp, repo)


TRITON_READY_TIMEOUT = 300.0  # the demo's models load in ~20 s idle; a loaded 2-core machine takes several times that


def _triton_or_fail(start):
    """start() of a tritonserver for the session; when it cannot start, the tests that need it fail with one
    line (the launcher's reason and the last error in the server's log) instead of a traceback."""
    from setup.launcher.options import LaunchError

    try:
        return start()
    except LaunchError as exc:
        lines = str(exc).splitlines()
        errors = [line.strip() for line in lines[1:] if "error" in line.lower()]
        pytest.fail(lines[0] + (f" Its log: {errors[-1]}" if errors else ""), pytrace=False)


@pytest.fixture(scope="session")
def cpu_model_dir() -> Path:
    """The converted SmolLM2 folder (made once from the wheel's GGUF, then cached)."""
    from setup.cpu.model import prepare_cpu_model

    return prepare_cpu_model(log=lambda *_: None)


@pytest.fixture(scope="session")
def triton(tmp_path_factory) -> TritonEndpoints:
    """One real tritonserver (demo repository, CPU engine) shared by the integration tests."""
    endpoints = _triton_or_fail(lambda: start_triton(tmp_path_factory.mktemp("triton")))
    yield endpoints
    stop_in_background(endpoints.process.stop, "the demo tritonserver")


@pytest.fixture(scope="session")
def app_served(triton):
    """The web app served in this process against the session's tritonserver: (context, URL)."""
    from app.chat.context import AppConfig, AppContext
    from app.web.ui import launch

    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, demo=True))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


@pytest.fixture(scope="session")
def app_url(app_served) -> str:
    return app_served[1]


DEMO_KINDS = ("engine", "llmapi")  # `python -m app --demo --deployment ...`: the CPU demo's two topologies


def start_llmapi_triton(tmp: Path, overrides: dict | None = None) -> TritonEndpoints:
    """Write the llmapi demo repository into `tmp` and start tritonserver on free ports."""
    from setup.cpu.llmapi_demo import write_llmapi_demo_repository

    repo = write_llmapi_demo_repository(tmp / "repo", overrides=overrides, log=lambda *_: None,
                                        pacing_rate=DEMO_PACING_RATE)
    return _serve_repository(tmp, repo)


@pytest.fixture(scope="session")
def llmapi_triton(tmp_path_factory) -> TritonEndpoints:
    """A real tritonserver with the llmapi demo repository (the CPU stand-in behind upstream's config.pbtxt)."""
    endpoints = _triton_or_fail(lambda: start_llmapi_triton(tmp_path_factory.mktemp("llmapi-triton")))
    yield endpoints
    stop_in_background(endpoints.process.stop, "the llmapi tritonserver")


@pytest.fixture(scope="session")
def llmapi_app_served(llmapi_triton, cpu_model_dir):
    """The web app served in this process against the llmapi server, as `--demo --deployment llmapi` runs it."""
    from app.chat.context import AppConfig, AppContext
    from app.web.ui import launch

    port = free_port()
    ctx = AppContext(AppConfig(triton_url=llmapi_triton.grpc_url, port=port, demo=True, deployment="llmapi",
                               model="tensorrt_llm", tokenizer_dir=str(cpu_model_dir)))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def start_xcomposer2_triton(tmp: Path) -> TritonEndpoints:
    """Write the InternLM-XComposer2 twin's repository into `tmp` and start tritonserver on free ports."""
    from setup.cpu.xcomposer2_demo import write_xcomposer2_demo_repository

    repo = write_xcomposer2_demo_repository(tmp / "repo", log=lambda *_: None)
    return _serve_repository(tmp, repo)


@pytest.fixture(scope="session")
def xcomposer2_triton(tmp_path_factory) -> TritonEndpoints:
    """A real tritonserver with the InternLM-XComposer2 twin (`--demo --deployment xcomposer2`)."""
    endpoints = _triton_or_fail(lambda: start_xcomposer2_triton(tmp_path_factory.mktemp("xcomposer2-triton")))
    yield endpoints
    stop_in_background(endpoints.process.stop, "the XComposer2 tritonserver")


@pytest.fixture(scope="session")
def xcomposer2_app_served(xcomposer2_triton, tmp_path_factory, cpu_model_dir):
    """The web app against the twin, as `python -m app --demo --deployment xcomposer2` runs it (its own adapters
    folder, copied so task ids and held state start fresh): (context, URL)."""
    from app.chat.context import AppConfig, AppContext
    from app.web.ui import launch
    from setup.cpu.xcomposer2_demo import twin_settings

    settings = twin_settings()
    adapters = tmp_path_factory.mktemp("xcomposer2-adapters") / "adapters"
    shutil.copytree(settings.adapters_path, adapters)
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=xcomposer2_triton.grpc_url, port=port, demo=True,
                               adapters_dir=str(adapters), model_adapter=settings.model_adapter))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


@pytest.fixture(scope="session", params=DEMO_KINDS)
def demo_app(request):
    """The app against each demo kind in turn: (context, URL). Tests that take it run once per kind."""
    return request.getfixturevalue("app_served" if request.param == "engine" else "llmapi_app_served")


@pytest.fixture(scope="session")
def demo_app_url(demo_app) -> str:
    return demo_app[1]


def _peer_or_fail(start):
    """start() of a peer server; when it cannot start, the tests that need it fail with its one-line reason
    (which resource, how much, where the log is) instead of a traceback."""
    from benchmarks.server_process import PeerStartError

    try:
        return start()
    except PeerStartError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def vllm(cpu_model_dir, tmp_path_factory):
    """vLLM's CPU build serving smollm2 + pirate + french with runtime LoRA loading (its own venv,
    installed on first use; ready in ~30 s warm, ~2 min cold). VLLM_TEST_URL reuses a running one."""
    import os

    from tests.integration.vllm_fixtures import RunningVllm, start_vllm

    if os.environ.get("VLLM_TEST_URL"):
        yield RunningVllm(os.environ["VLLM_TEST_URL"])
        return
    folder, ledger = tmp_path_factory.mktemp("vllm"), memory_ledger()
    ledger.acquire(f"vllm {folder}", VLLM_GIB)
    try:
        server = _peer_or_fail(lambda: start_vllm(cpu_model_dir, folder / "vllm.log"))
    except BaseException:
        ledger.release(f"vllm {folder}")
        raise
    print(f"\nvLLM ready in {server.start_seconds:.0f} s", flush=True)
    yield server
    stop_in_background(BudgetedProcess(server, ledger, f"vllm {folder}").stop, "vLLM")


@pytest.fixture(scope="session")
def dynamo(cpu_model_dir, tmp_path_factory):
    """NVIDIA Dynamo's OpenAI frontend on loopback routing smollm2 to two mocker workers and a second model,
    `smollm2-b`, to a third (its own venv, installed on first use by benchmarks.peer_dynamo; no etcd or NATS)."""
    from benchmarks.peer_dynamo import DynamoServer, ensure_venv

    server = DynamoServer(cpu_model_dir, tmp_path_factory.mktemp("dynamo"), python=ensure_venv(log=lambda *_: None),
                          extra_models=("smollm2-b",), speedup=1.0)
    _peer_or_fail(server.start)
    yield server
    stop_in_background(server.stop, "Dynamo")


@pytest.fixture(scope="session")
def vllm_app(vllm, tmp_path_factory):
    """The web app served in this process against vLLM (`--openai`): (context, URL)."""
    from app.chat.context import AppConfig, AppContext
    from app.web.ui import launch

    port = free_port()
    folder = tmp_path_factory.mktemp("vllm-app-adapters")
    ctx = AppContext(AppConfig(openai_url=vllm.url, port=port, adapters_dir=str(folder),
                               workspace=(str(tmp_path_factory.getbasetemp()),)))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def grant_access(browser_context, ctx, url: str) -> None:
    """Give the browser the app's launch-token cookie (what opening the printed ?token= URL does)."""
    browser_context.add_cookies([{"name": ctx.access.cookie, "value": ctx.access.token, "url": url,
                                  "httpOnly": True, "sameSite": "Strict"}])


BROWSER_TIMEOUT_MS = 90_000  # waits without a limit of their own: a page on a loaded 2-core machine can take a while


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    """Debian's Chromium driven by Playwright (no browser download), its profile in the run's tmp_path."""
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is not installed; `make test` installs it (apt-get install chromium).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1200, "height": 1000},
        )
        context.set_default_timeout(BROWSER_TIMEOUT_MS)
        yield context
        context.close()


# Each test's tab starts like a first visit (no conversations kept by earlier tests in this browser's
# local storage); reloads within the test keep what the test stored.
FIRST_VISIT_JS = """if (!sessionStorage.getItem("test-started")) {
    localStorage.clear(); sessionStorage.setItem("test-started", "1");
}"""


@contextlib.contextmanager
def app_tab(browser_context, served, timeout_ms: int = 30_000):
    """A new tab on the app `served` ((context, URL)) opened like a first visit with the URL the console prints (its
    token becomes a cookie), once the chat input shows; closed afterwards."""
    ctx, app_url = served
    page = browser_context.new_page()
    page.add_init_script(FIRST_VISIT_JS)
    page.goto(ctx.access.url(app_url))
    page.wait_for_selector("#chat-input textarea", timeout=timeout_ms)
    try:
        yield page
    finally:
        page.close()


@pytest.fixture
def page(browser_context, app_served):
    with app_tab(browser_context, app_served) as page:
        yield page


@pytest.fixture
def demo_page(browser_context, demo_app):
    """A browser tab on the app against each demo kind in turn (engine topology, llmapi)."""
    with app_tab(browser_context, demo_app) as page:
        yield page


def run_in_threads(fn, count: int) -> list:
    """Run fn(i) in `count` threads; return results in order (exceptions re-raised)."""
    results: list = [None] * count
    errors: list = []

    def work(i):
        try:
            results[i] = fn(i)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
