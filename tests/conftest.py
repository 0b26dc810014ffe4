"""Shared fixtures and the run's hooks: a real tritonserver with the demo repository, the web app, a real browser.

Tests live by area: unit/<package>/ (no servers), integration/ (real tritonserver, app, vLLM),
browser/ (Debian's Chromium via Playwright). The folder sets the markers (`make unit` runs unit/ only).

The converted CPU model lives in the normal cache (it takes ~20 s to make once); repositories, logs and Triton
ports are per test session. The helpers live beside this file: tests/servers.py (starting servers),
tests/browser_tabs.py (tabs on the app), tests/run_folder.py (the run's temporary folder, background stops),
tests/server_groups.py, server_scheduling.py, server_lifetimes.py and server_memory.py (the parallel server pass).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.browser.page_evidence import TOASTS_TO_CONSOLE_JS
from tests.browser_tabs import BROWSER_TIMEOUT_MS, CHROMIUM, CHROMIUM_ARGS, STILL_PAGES_JS, app_tab
from tests.group_times import CPU_PROPERTY, GROUP_PROPERTY, UNGROUPED, GroupTimes
from tests.run_folder import (
    STOP_ERRORS,
    enter_run_folder,
    left_in_run_folder,
    remove_run_folder,
    run_folder,
    stop_in_background,
    wait_for_stops,
)
from tests.server_groups import TestNeeds, group_summary, server_groups
from tests.server_lifetimes import CURRENT, by_group, finish_fixtures, group_fixtures_done
from tests.server_memory import DEMO_COMMAND_GIB, LEDGER_FILES, VLLM_GIB, BudgetedProcess, budget_waits
from tests.server_scheduling import write_groups
from tests.servers import (
    DEMO_KINDS,
    FAMILY_OUTPUT_TWINS,
    TritonEndpoints,
    free_port,
    memory_ledger,
    peer_or_fail,
    serve_repository,
    start_llmapi_triton,
    start_triton,
    start_xcomposer2_triton,
    triton_or_fail,
)
from tests.state_guard import Snapshot
from tests.stub_watch import StubWatch
from tests.tree_cpu import tree_cpu_seconds

TESTS = Path(__file__).resolve().parent
GROUP_TIMES = GroupTimes()
TREE_CPU = {"last": 0.0}  # this worker's process-tree CPU seconds at the end of the last test phase
STUBS = StubWatch()
FOLDER_MARKERS = {"integration": ("integration",), "browser": ("integration", "browser")}


def pytest_configure(config) -> None:
    """TMPDIR for this process and its children is a fresh folder of this run (a worker of a parallel run
    shares its controller's folder: tests/run_folder.py)."""
    config._run_tmp_owner = enter_run_folder()
    # One engine thread for every step of every CPU engine the tests start (the product gives a wide step every
    # core: cpu_runtime/engine/threads.step_threads): two workers' servers share 2 cores, and a second thread
    # beside other busy processes waits at every barrier.
    os.environ.setdefault("CPU_ENGINE_THREADS", "1")
    TREE_CPU["last"] = tree_cpu_seconds()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each server test's report carries its group and the CPU seconds this worker's process tree used since the last
    phase ended (tests/group_times.py)."""
    outcome = yield
    if item.get_closest_marker("integration"):
        group = getattr(item.config, "_test_groups", {}).get(item.nodeid) or UNGROUPED
        now = tree_cpu_seconds()
        used = now - TREE_CPU["last"]
        TREE_CPU["last"] = now
        outcome.get_result().user_properties.extend([(GROUP_PROPERTY, group), (CPU_PROPERTY, round(used, 2))])


def pytest_runtest_logreport(report) -> None:
    if GROUP_PROPERTY in dict(report.user_properties):
        GROUP_TIMES.add(report)


def pytest_terminal_summary(terminalreporter, config) -> None:
    """The server pass's time by group; then name what the run left in its temporary folder (before pytest's
    closing line; the folder goes anyway)."""
    owns_run_folder = getattr(config, "_run_tmp_owner", False)
    table = GROUP_TIMES.lines()
    if table:
        terminalreporter.write_sep("=", "time by server group (tests/group_times.py)")
        for line in table:
            terminalreporter.write_line(line)
        waits = budget_waits(memory_ledger().waits()) if owns_run_folder else ""
        if waits:
            terminalreporter.write_line(waits)
        terminalreporter.write_sep("=", "most CPU by test: the worker's processes, servers and Chromium included")
        for line in GROUP_TIMES.cpu_lines():
            terminalreporter.write_line(line)
    left = [name for name in left_in_run_folder() if name not in LEDGER_FILES] if owns_run_folder else []
    if left:
        shown = ", ".join(left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
        terminalreporter.write_line(f"Left in the run's temporary folder, removed at exit: {shown}")


def pytest_sessionfinish(session, exitstatus) -> None:
    """Wait for the servers still stopping; a stop that failed fails the run (a worker of a parallel run hands its
    failed stops to the controller, which names them)."""
    failed = wait_for_stops()
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["stop_errors"] = failed
    elif failed:
        session.config.get_terminal_writer().line("Servers that did not stop cleanly: " + "; ".join(failed))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """A pytest-xdist worker finished: keep the stops that failed on it."""
    STOP_ERRORS.extend(getattr(node, "workeroutput", {}).get("stop_errors", []))


def pytest_unconfigure(config) -> None:
    """Remove the run's temporary folder (only the process that made it does)."""
    if getattr(config, "_run_tmp_owner", False):
        remove_run_folder()


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
        write_groups(run_folder(), groups)
    if config.getoption("server_groups") and not hasattr(config, "workerinput"):
        config._server_groups = groups


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` by the groups the workers wrote (tests/server_scheduling.py says why)."""
    if config.getvalue("dist") == "loadgroup":
        from tests.server_scheduling import ServerGroupScheduling

        return ServerGroupScheduling(config, log, folder=run_folder())
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The running test, for the memory budget's make_room (tests/server_lifetimes.py stop_unused_demo)."""
    CURRENT["item"] = item
    try:
        yield
    finally:
        CURRENT.pop("item", None)


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


@pytest.fixture(autouse=True)
def _leaves_no_state():
    """Fails a test that leaves its worker changed for the next test: working folder, environment, a build job or
    a child process (tests/state_guard.py; issue 48's flake). Defined first, so it is set up before and torn down
    after every other function-scoped fixture of the test."""
    before = Snapshot.take()
    yield
    leaks = before.leaks()
    if leaks:
        pytest.fail("This test left state for the next one: " + "; ".join(leaks) + ".", pytrace=False)


@pytest.fixture(scope="session")
def cpu_model_dir() -> Path:
    """The converted SmolLM2 folder (made once from the wheel's GGUF, then cached)."""
    from setup.cpu.model import prepare_cpu_model

    return prepare_cpu_model(log=lambda *_: None)


@pytest.fixture(scope="session")
def triton(tmp_path_factory) -> TritonEndpoints:
    """One real tritonserver (demo repository, CPU engine) shared by the integration tests."""
    endpoints = triton_or_fail(lambda: start_triton(tmp_path_factory.mktemp("triton"), lasting=True))
    yield endpoints
    exited = not endpoints.process.is_running()
    tail = endpoints.process.log_tail(25) if exited else ""
    stop_in_background(endpoints.process.stop, "the demo tritonserver")
    if exited:  # the tests after its end failed with "cannot be reached": say why here, while its log still exists
        pytest.fail(f"This worker's demo tritonserver exited before the end of the run (code "
                    f"{endpoints.process.wait()}). Its log ends:\n{tail}", pytrace=False)


@pytest.fixture(autouse=True)
def _demo_stubs_alive(request):
    """A test on the session's demo tritonserver fails at once when one of its python stubs has died
    (tests/stub_watch.py): every request to that model would be refused, each test waiting out its timeouts."""
    if "triton" in request.fixturenames:
        dead = STUBS.dead_models(request.getfixturevalue("triton").process.pid)
        if dead:
            pytest.fail(f"The demo tritonserver's python stub of {', '.join(dead)} has died (a crash in the stub; the "
                        "kernel log names it): the server refuses that model from then on.", pytrace=False)
    yield


@pytest.fixture(scope="session")
def app_served(triton):
    """The web app served in this process against the session's tritonserver: (context, URL)."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch

    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, demo=True))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


@pytest.fixture(scope="session")
def app_url(app_served) -> str:
    return app_served[1]


@pytest.fixture(scope="session")
def llmapi_triton(tmp_path_factory) -> TritonEndpoints:
    """A real tritonserver with the llmapi demo repository (the CPU stand-in behind upstream's config.pbtxt)."""
    endpoints = triton_or_fail(lambda: start_llmapi_triton(tmp_path_factory.mktemp("llmapi-triton")))
    yield endpoints
    stop_in_background(endpoints.process.stop, "the llmapi tritonserver")


@pytest.fixture(scope="session")
def llmapi_app_served(llmapi_triton, cpu_model_dir):
    """The web app served in this process against the llmapi server, as `--demo --deployment llmapi` runs it."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch

    port = free_port()
    ctx = AppContext(AppConfig(triton_url=llmapi_triton.grpc_url, port=port, demo=True, deployment="llmapi",
                               model="tensorrt_llm", tokenizer_dir=str(cpu_model_dir)))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


@pytest.fixture(scope="session")
def xcomposer2_triton(tmp_path_factory) -> TritonEndpoints:
    """A real tritonserver with the InternLM-XComposer2 twin (`--demo --twin xcomposer2`)."""
    endpoints = triton_or_fail(lambda: start_xcomposer2_triton(tmp_path_factory.mktemp("xcomposer2-triton")))
    yield endpoints
    stop_in_background(endpoints.process.stop, "the XComposer2 tritonserver")


@pytest.fixture(scope="session")
def xcomposer2_app_served(xcomposer2_triton, tmp_path_factory, cpu_model_dir):
    """The web app against the twin, as `python -m app --demo --twin xcomposer2` runs it (its own adapters
    folder, copied so task ids and held state start fresh): (context, URL)."""
    from app.context import AppConfig, AppContext
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


@pytest.fixture(scope="session")
def vllm(cpu_model_dir, tmp_path_factory):
    """vLLM's CPU build serving smollm2 + pirate + french with runtime LoRA loading (its own venv,
    installed on first use; ready in ~30 s warm, ~2 min cold). VLLM_TEST_URL reuses a running one."""

    from tests.integration.vllm_fixtures import RunningVllm, start_vllm

    if os.environ.get("VLLM_TEST_URL"):
        yield RunningVllm(os.environ["VLLM_TEST_URL"])
        return
    folder, ledger = tmp_path_factory.mktemp("vllm"), memory_ledger()
    server = ledger.start_held(f"vllm {folder}", VLLM_GIB,
                               lambda: peer_or_fail(lambda: start_vllm(cpu_model_dir, folder / "vllm.log")))
    print(f"\nvLLM ready in {server.start_seconds:.0f} s", flush=True)
    yield server
    stop_in_background(BudgetedProcess(server, ledger, f"vllm {folder}").stop, "vLLM")


@pytest.fixture(scope="session")
def family_outputs_triton(tmp_path_factory, cpu_model_dir) -> TritonEndpoints:
    """One tritonserver with the runner twins of FAMILY_OUTPUT_TWINS (runner-<family> models), shared by the tests of
    their outputs through the runner kind, the browser and /v1, and of their runner formats."""
    from setup.cpu.runner_demo import write_runner_demo_repository

    tmp = tmp_path_factory.mktemp("family-outputs")
    endpoints = triton_or_fail(lambda: serve_repository(
        tmp, write_runner_demo_repository(tmp / "repo", FAMILY_OUTPUT_TWINS, log=lambda *_: None)))
    yield endpoints
    stop_in_background(endpoints.process.stop, "the family-outputs tritonserver")


@pytest.fixture(scope="session")
def dynamo(cpu_model_dir, tmp_path_factory):
    """NVIDIA Dynamo's OpenAI frontend on loopback routing smollm2 to two mocker workers and a second model,
    `smollm2-b`, to a third (its own venv, installed on first use by benchmarks.peer_dynamo; no etcd or NATS)."""
    from benchmarks.peer_dynamo import DynamoServer, ensure_venv

    server = DynamoServer(cpu_model_dir, tmp_path_factory.mktemp("dynamo"), python=ensure_venv(log=lambda *_: None),
                          extra_models=("smollm2-b",), speedup=1.0)
    peer_or_fail(server.start)
    yield server
    stop_in_background(server.stop, "Dynamo")


@pytest.fixture(scope="session")
def vllm_app(vllm, tmp_path_factory):
    """The web app served in this process against vLLM (`--openai`): (context, URL)."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch

    port = free_port()
    folder = tmp_path_factory.mktemp("vllm-app-adapters")
    ctx = AppContext(AppConfig(openai_url=vllm.url, port=port, adapters_dir=str(folder),
                               workspace=(str(tmp_path_factory.getbasetemp()),)))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


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
        context.add_init_script(STILL_PAGES_JS)
        context.add_init_script(TOASTS_TO_CONSOLE_JS)
        yield context
        context.close()

@pytest.fixture
def page(browser_context, app_served):
    with app_tab(browser_context, app_served) as page:
        yield page


@pytest.fixture
def demo_page(browser_context, demo_app):
    """A browser tab on the app against each demo kind in turn (engine topology, llmapi)."""
    with app_tab(browser_context, demo_app) as page:
        yield page


@pytest.fixture(scope="module")
def demo_command_memory(request):
    """Room in the run's server memory budget for the demos a module starts itself (`python -m app --demo`)."""
    with memory_ledger().holding(f"demos of {request.module.__name__} {os.getpid()}", DEMO_COMMAND_GIB):
        yield
