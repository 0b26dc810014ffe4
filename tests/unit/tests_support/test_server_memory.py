"""The server memory budget of the server pass: estimates from a repository, waits, releases, no deadlock."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import pytest

from tests.server_memory import (
    MODEL_GIB,
    OTHER_MODEL_GIB,
    RUNNER_MODEL_GIB,
    RUNNER_OWN_OUTPUT_GIB,
    SERVER_GIB,
    BudgetedProcess,
    MemoryLedger,
    budget_waits,
    repository_gib,
)


def _models(repo, *names):
    for name in names:
        (repo / name).mkdir(parents=True)
        (repo / name / "config.pbtxt").write_text("")
    (repo / "not-a-model").mkdir()


def test_a_repository_is_estimated_from_its_models(tmp_path):
    _models(tmp_path, "tensorrt_llm", "multimodal_encoders", "preprocessing", "tensorrt_llm_bls", "pacing",
            "runner-nougat", "runner-deplot", "ensemble")
    (tmp_path / "ensemble" / "config.pbtxt").write_text('name: "ensemble"\nplatform: "ensemble"\n')
    expected = SERVER_GIB + MODEL_GIB["tensorrt_llm"] + MODEL_GIB["multimodal_encoders"] + OTHER_MODEL_GIB \
        + MODEL_GIB["tensorrt_llm_bls"] + MODEL_GIB["pacing"] + 2 * RUNNER_MODEL_GIB
    assert MODEL_GIB["pacing"] < OTHER_MODEL_GIB  # a stub without a tokenizer
    assert abs(repository_gib(tmp_path) - expected) < 1e-9


def test_a_runner_twin_whose_own_output_answers_every_picture_is_estimated_without_its_llm(tmp_path):
    """Nougat's markdown answers every picture (its engine never loads); Video NeVA's frame account answers videos
    only (one picture goes to its LLM); a visual folder that cannot be read counts as a runner with its LLM."""
    import json

    repo = tmp_path / "repo"
    for family, job in (("nougat", "markdown"), ("video-neva", "frame_changes"), ("lost", None)):
        vision = tmp_path / f"vision-{family}"
        if job:
            vision.mkdir()
            (vision / "config.json").write_text(json.dumps({"runner_format": {"twin_output": job}}))
        (repo / f"runner-{family}").mkdir(parents=True)
        (repo / f"runner-{family}" / "config.pbtxt").write_text(
            f'parameters: {{ key: "visual_engine_dir" value: {{ string_value: "{vision}" }} }}\n')
    expected = SERVER_GIB + RUNNER_OWN_OUTPUT_GIB + 2 * RUNNER_MODEL_GIB
    assert abs(repository_gib(repo) - expected) < 1e-9


def test_a_start_over_the_budget_waits_until_another_stops(tmp_path):
    asked: list[str] = []  # this process has nothing to stop: make_room frees nothing and the wait goes on
    ledger = MemoryLedger(tmp_path, budget=10, make_room=lambda: asked.append("asked") and False)
    # another process holds 8 GiB (a live pid that is not this one: our parent)
    held = MemoryLedger(tmp_path, budget=10)
    with held._locked() as state:
        state["held"]["other"] = [os.getppid(), 8.0, False]
    waited: list[float] = []
    thread = threading.Thread(target=lambda: waited.append(ledger.acquire("mine", 4.0)))
    thread.start()
    time.sleep(1.5)
    assert not waited, "started over the budget while the other server still ran"
    assert asked == ["asked"]  # once, however long the wait
    held.release("other")
    thread.join(timeout=10)
    assert waited and waited[0] >= 1.0
    assert ledger.held() == {"mine": 4.0}
    assert [(w["key"], w["gib"]) for w in ledger.waits()] == [("mine", 4.0)] and ledger.waits()[0]["seconds"] >= 1.0


def test_the_waits_are_summed_in_one_line_longest_first():
    waits = [{"key": "triton /tmp/run/pytest-of-root/popen-gw0/llmapi-triton0", "gib": 1.9, "seconds": 12.0},
             {"key": "vllm /tmp/run/vllm0", "gib": 2.9, "seconds": 80.4},
             {"key": "demos of test_lora 123", "gib": 3.8, "seconds": 3.0}]
    assert budget_waits(waits) == ("Waits for the server memory budget: 95 s in 3 starts: vllm vllm0 80 s (2.9 GiB), "
                                   "triton llmapi-triton0 12 s (1.9 GiB), demos of test_lora 123 3 s (3.8 GiB)")
    assert budget_waits([]) == ""


def test_a_start_within_the_budget_or_alone_goes_ahead(tmp_path):
    ledger = MemoryLedger(tmp_path, budget=5)
    assert ledger.acquire("a", 3.0) < 0.5
    assert ledger.acquire("b", 2.0) < 0.5
    assert ledger.waits() == []  # only a start that waited is noted
    ledger.release("a")
    ledger.release("b")
    assert ledger.acquire("huge", 50.0) < 0.5  # nothing else runs: waiting would never end
    assert ledger.held() == {"huge": 50.0}


def test_holders_that_died_are_dropped(tmp_path):
    ledger = MemoryLedger(tmp_path, budget=5)
    dead = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    dead.start()
    dead.join()
    with ledger._locked() as state:
        state["held"]["gone"] = [dead.pid, 5.0, False]
    assert ledger.acquire("mine", 4.0) < 0.5
    assert ledger.held() == {"mine": 4.0}


def test_when_every_other_holder_waits_the_lowest_waiter_goes_ahead(tmp_path):
    ledger = MemoryLedger(tmp_path, budget=5)
    both_wait = {"held": {"a": [100, 4.0, False], "b": [200, 1.0, False]}, "waiting": [100, 200]}
    assert ledger._may_start(both_wait, 100, 4.0)
    assert not ledger._may_start(both_wait, 200, 4.0)
    one_runs = {"held": {"a": [100, 4.0, False], "b": [200, 1.0, False]}, "waiting": [200]}
    assert not ledger._may_start(one_runs, 200, 4.0)  # 100 runs its tests and will stop its server


def test_a_budgeted_process_gives_its_memory_back_when_stopped(tmp_path):
    class Server:
        pid = os.getpid()  # alive: only stop() gives the hold back

        def stop(self, grace=15.0):
            return grace

    ledger = MemoryLedger(tmp_path, budget=5)
    ledger.acquire("server", 3.0)
    process = BudgetedProcess(Server(), ledger, "server")
    assert process.pid == os.getpid() and ledger.held() == {"server": 3.0}
    assert process.stop(grace=2.0) == 2.0
    assert ledger.held() == {}


def test_a_hold_goes_with_its_server_and_a_restart_holds_again(tmp_path):
    import subprocess
    import sys

    class Server:
        def __init__(self):
            self.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            self.pid = self.child.pid

        def stop(self):
            self.child.kill()
            self.child.wait()

    ledger = MemoryLedger(tmp_path, budget=5)
    ledger.acquire("server", 3.0)
    first = BudgetedProcess(Server(), ledger, "server", 3.0)
    first._process.stop()  # killed by the test, not through the budget: nobody would give its room back
    assert ledger.held() == {}  # ...so the hold went with the server
    second = first.restarted(Server())
    assert ledger.held() == {"server": 3.0}
    second.stop()
    assert ledger.held() == {}


def test_a_lasting_server_is_never_waited_for(tmp_path):
    ledger = MemoryLedger(tmp_path, budget=5)
    with ledger._locked() as state:  # the other worker's demo server, kept for its whole session
        state["held"]["demo"] = [os.getppid(), 4.0, True]
    assert ledger.acquire("family outputs", 6.0) < 0.5  # over the budget, but nothing would ever stop
    assert ledger.acquire("my demo", 4.0, lasting=True) < 0.5


def test_holding_gives_the_memory_back_after_the_block(tmp_path):
    ledger = MemoryLedger(tmp_path, budget=5)
    with ledger.holding("demos", 3.0):
        assert ledger.held() == {"demos": 3.0}
    assert ledger.held() == {}


def test_a_start_that_fails_gives_its_memory_back(tmp_path):
    ledger = MemoryLedger(tmp_path, budget=5)

    def fails():
        raise RuntimeError("no server")

    with pytest.raises(RuntimeError, match="no server"):
        ledger.start_held("server", 3.0, fails)
    assert ledger.held() == {}
    assert ledger.start_held("server", 3.0, lambda: "started") == "started"
    assert ledger.held() == {"server": 3.0}


def test_a_start_that_must_wait_first_asks_its_own_process_for_room(tmp_path):
    """This worker's own demo server (lasting) and another's server fill the budget: make_room is asked once, and
    the start goes ahead as soon as the server it stopped gives its hold back, without waiting for the other's."""
    calls: list[str] = []

    def make_room() -> bool:
        calls.append("asked")
        ledger.release("my demo")  # what stopping the demo server does through its BudgetedProcess
        return True

    ledger = MemoryLedger(tmp_path, budget=10, make_room=make_room)
    ledger.acquire("my demo", 3.0, lasting=True)
    with ledger._locked() as state:  # the other worker's runner twins
        state["held"]["other"] = [os.getppid(), 5.0, False]
    assert ledger.acquire("llmapi", 4.0) < 5.0
    assert calls == ["asked"] and ledger.held() == {"other": 5.0, "llmapi": 4.0}
    assert [w.get("made_room") for w in ledger.waits()] in ([], [True])  # noted when the wait lasted 1 s or more
    assert budget_waits([{"key": "triton /tmp/x/runner0", "gib": 5.1, "seconds": 3.0, "made_room": True}]).endswith(
        "runner0 3 s (5.1 GiB); 1 of them stopped their worker's demo server to make room")
    assert ledger.acquire("small", 1.0) < 0.5 and calls == ["asked"]  # within the budget: nothing is asked

