"""tests/state_guard.py: each kind of state one test can leave for the next is named, and what a library sets for the
whole process is not. Every case puts the worker back before it ends (the conftest's guard checks this test too)."""

import os
import subprocess
import sys
import threading

from tests.state_guard import BUILD_THREAD_PREFIX, Snapshot


def test_nothing_changed_is_no_leak():
    assert Snapshot.take().leaks() == []


def test_a_changed_variable_and_working_folder_are_named_without_their_values(tmp_path, monkeypatch):
    before = Snapshot.take()
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9/secret-token")
    monkeypatch.delenv("HOME")
    monkeypatch.chdir(tmp_path)
    leaks = before.leaks()
    assert leaks == [f"the working folder is {tmp_path} (was {before.cwd})", "the environment differs in HF_ENDPOINT, HOME"]
    assert "secret-token" not in " ".join(leaks)


def test_a_variable_gradio_sets_for_the_process_is_not_counted(monkeypatch):
    monkeypatch.delenv("HF_HUB_DISABLE_TELEMETRY", raising=False)
    before = Snapshot.take()
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "True"
    assert before.leaks() == []


def test_a_child_still_running_is_named_with_its_command(monkeypatch):
    monkeypatch.setattr("tests.state_guard.SETTLE_SECONDS", 0.2)
    before = Snapshot.take()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (leak,) = before.leaks()
        assert leak.startswith(f"child processes still run: {child.pid} ") and "time.sleep(30)" in leak
    finally:
        child.kill()
        child.wait()
    assert before.leaks() == []


def test_a_build_job_still_running_is_named(monkeypatch):
    monkeypatch.setattr("tests.state_guard.SETTLE_SECONDS", 0.2)
    before = Snapshot.take()
    release = threading.Event()
    job = threading.Thread(target=release.wait, name=f"{BUILD_THREAD_PREFIX}job7", daemon=True)
    job.start()
    try:
        assert before.leaks() == [f"build jobs still run: {BUILD_THREAD_PREFIX}job7"]
    finally:
        release.set()
        job.join()
    assert before.leaks() == []
