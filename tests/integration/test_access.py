"""Build and Adapters events called the way an attacker would: straight through Gradio's queue, no browser.

Without the launch token nothing runs; with it, folders outside the workspace are refused; with both
right, the same request does run (so the refusals are not an accident of a broken request).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import httpx
import pytest

from app.context import AppConfig, AppContext
from app.web.ui import launch
from setup.paths import PROJECT_ROOT
from tests.build_standins import make_checkpoint, make_trtllm
from tests.servers import free_port

REPO = PROJECT_ROOT


@pytest.fixture
def served(tmp_path, monkeypatch):
    """The whole app (all tabs) on loopback, workspace = tmp_path/work, stand-in TensorRT-LLM tools."""
    work = tmp_path / "work"
    tools = make_trtllm(work / "trtllm", "0.19")
    bin_dir = Path(tools["trtllm_build"]).parent
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # job store and engine registry of this test only
    adapters = tmp_path / "adapters"
    shutil.copytree(REPO / "adapters" / "pirate", adapters / "pirate")
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=f"127.0.0.1:{free_port()}", port=port, workspace=(str(work),),
                               adapters_dir=str(adapters)))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}", tools["trtllm_root"], make_checkpoint(work / "ckpt")
    blocks.close()


def _run_event(url: str) -> tuple[int, int, list]:
    """fn_index, trigger id and default input values of the Build page's "Run / resume" button."""
    config = httpx.get(url + "/config", timeout=10).json()
    by_elem = {c["props"].get("elem_id"): c for c in config["components"] if c.get("props", {}).get("elem_id")}
    by_id = {c["id"]: c for c in config["components"]}
    trigger = by_elem["build-run"]["id"]
    dep = next(d for d in config["dependencies"] if [trigger, "click"] in d["targets"])
    return dep["id"], trigger, [by_id[i]["props"].get("value") for i in dep["inputs"]], dep["inputs"], by_elem


def post_run(url: str, values: dict, headers: dict | None = None) -> dict:
    """POST /gradio_api/queue/join for Run with `values` by elem_id; the final queue message."""
    fn_index, trigger, data, inputs, by_elem = _run_event(url)
    for elem_id, value in values.items():
        data[inputs.index(by_elem[elem_id]["id"])] = value
    session = os.urandom(6).hex()
    body = {"data": data, "fn_index": fn_index, "trigger_id": trigger, "session_hash": session, "event_data": None}
    with httpx.Client(timeout=60, headers=headers or {}) as client:
        joined = client.post(url + "/gradio_api/queue/join", json=body)
        assert joined.status_code == 200, joined.text
        with client.stream("GET", url + "/gradio_api/queue/data", params={"session_hash": session}) as events:
            for line in events.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("msg") == "process_completed":
                        return message
    raise AssertionError("the queue closed without a result")


def _jobs(_home: Path) -> list:
    from setup.jobs.store import JobStore

    return JobStore().list()


def test_run_without_token_runs_nothing(served, tmp_path):
    ctx, url, root, ckpt = served
    out = tmp_path / "work" / "out"
    final = post_run(url, {"build-checkpoint": str(ckpt), "build-out": str(out), "build-trtllm-root": root})
    assert final["success"] is False
    assert "launch token" in final["output"]["error"]
    assert not out.exists() and _jobs(tmp_path) == []


def test_run_with_token_outside_workspace_is_refused(served, tmp_path):
    ctx, url, root, ckpt = served
    token = {"X-Launch-Token": ctx.access.token}
    for out in ("/etc", "/", str(tmp_path / "work" / "x/../../../etc/x")):
        final = post_run(url, {"build-checkpoint": str(ckpt), "build-out": out, "build-trtllm-root": root}, token)
        assert final["success"] is False and "outside the folders this app may use" in final["output"]["error"], out
    outside_tree = tmp_path / "elsewhere"
    outside_tree.mkdir()
    final = post_run(url, {"build-checkpoint": str(ckpt), "build-out": str(tmp_path / "work" / "o"),
                           "build-trtllm-root": str(outside_tree)}, token)
    assert "TensorRT-LLM source tree" in final["output"]["error"]
    assert _jobs(tmp_path) == []


def test_symlink_out_of_the_workspace_is_refused(served, tmp_path):
    ctx, url, root, ckpt = served
    (tmp_path / "work" / "link").symlink_to(tmp_path / "home", target_is_directory=True)
    final = post_run(url, {"build-checkpoint": str(ckpt), "build-out": str(tmp_path / "work" / "link" / "o"),
                           "build-trtllm-root": root}, {"X-Launch-Token": ctx.access.token})
    assert final["success"] is False and "outside the folders" in final["output"]["error"]


def test_run_with_token_inside_workspace_runs(served, tmp_path):
    ctx, url, root, ckpt = served
    out = tmp_path / "work" / "out"
    final = post_run(url, {"build-checkpoint": str(ckpt), "build-out": str(out), "build-trtllm-root": root},
                     {"X-Launch-Token": ctx.access.token})
    assert final["success"] is True, final
    assert len(_jobs(tmp_path)) == 1


def test_token_url_sets_the_cookie_and_the_cookie_grants(served, tmp_path):
    ctx, url, root, ckpt = served
    wrong = httpx.get(url + "/?token=nope", follow_redirects=False)
    assert wrong.status_code == 200 and "set-cookie" not in wrong.headers
    reply = httpx.get(url + f"/?token={ctx.access.token}", follow_redirects=False)
    assert reply.status_code == 303 and reply.headers["location"] == "/"
    cookie = reply.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and cookie.startswith(ctx.access.cookie + "=")
    final = post_run(url, {"build-checkpoint": str(ckpt), "build-out": str(tmp_path / "work" / "o2"),
                           "build-trtllm-root": root}, {"Cookie": f"{ctx.access.cookie}={ctx.access.token}"})
    assert final["success"] is True, final


def test_adapter_actions_need_the_token_and_the_workspace(served, tmp_path):
    from gradio_client import Client

    ctx, url, root, ckpt = served
    source = REPO / "adapters" / "pirate"
    inside = tmp_path / "work" / "mine"
    inside.mkdir()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (inside / name).write_bytes((source / name).read_bytes())
    stranger = Client(url + "/", verbose=False)
    with pytest.raises(Exception, match="launch token"):
        stranger.predict(str(inside), "mine", api_name="/add_adapter_folder")
    with pytest.raises(Exception, match="launch token"):
        stranger.predict("pirate", api_name="/remove_adapter")
    assert "pirate" in ctx.adapters.names() and "mine" not in ctx.adapters.names()
    owner = Client(url + "/", verbose=False, headers={"X-Launch-Token": ctx.access.token})
    _, message, _ = owner.predict(str(source), "outside", api_name="/add_adapter_folder")
    assert "outside the folders this app may use" in message and "outside" not in ctx.adapters.names()
    _, message, _ = owner.predict(str(inside), "mine", api_name="/add_adapter_folder")
    assert "Added **mine**" in message and "mine" in ctx.adapters.names()
    owner.predict("mine", api_name="/remove_adapter")
    assert "mine" not in ctx.adapters.names()
