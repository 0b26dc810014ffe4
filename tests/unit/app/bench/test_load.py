"""app/bench/load.py, the parts without a server: synthetic and dataset requests, the progress line on a
terminal and on a pipe, the drivers' bookkeeping (workers, think time, turns) and the session pool.
Complements tests/unit/app/bench/test_bench.py (concurrency peak, Poisson rate, dataset errors)."""

from __future__ import annotations

import io
import json
import threading
import time

import pytest

from app.bench.load import (
    BenchRequest,
    DatasetError,
    Progress,
    load_dataset,
    run_load,
    run_sessions,
    session_pool,
    synthetic_requests,
)
from app.bench.stats import RequestRecord


def done(error: str | None = None) -> RequestRecord:
    return RequestRecord(started=0.0, ended=0.0, error=error)


# ----- requests -----

def test_synthetic_requests_repeat_for_a_seed_and_differ_between_seeds():
    assert synthetic_requests(3, 20, 8, seed=5) == synthetic_requests(3, 20, 8, seed=5)
    assert synthetic_requests(3, 20, 8, seed=5) != synthetic_requests(3, 20, 8, seed=6)
    assert synthetic_requests(0, 20, 8) == []


def test_a_tiny_input_length_still_gives_a_prompt_with_text():
    (request,) = synthetic_requests(1, 1, 2)
    assert request.prompt.startswith("Request 0:") and len(request.prompt.split()) == 3


def write(tmp_path, content) -> object:
    path = tmp_path / "data.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize("content", [
    {"data": ["a", "b"]},
    {"samples": ["a", "b"]},
])
def test_a_dataset_may_wrap_its_list(tmp_path, content):
    assert [r.prompt for r in load_dataset(write(tmp_path, content), 2, 8)] == ["a", "b"]


def test_a_single_object_is_a_one_prompt_dataset(tmp_path):
    got = load_dataset(write(tmp_path, {"prompt": "only", "output_len": 3}), 3, 8)
    assert [(r.prompt, r.max_tokens, r.min_tokens) for r in got] == [("only", 3, 0)] * 3


def test_fewer_requests_than_items_take_the_first_ones(tmp_path):
    assert [r.prompt for r in load_dataset(write(tmp_path, ["a", "b", "c"]), 2, 8)] == ["a", "b"]


def test_the_first_prompt_key_with_text_wins(tmp_path):
    items = [{"prompt": "  ", "text": "from text", "input": "from input"},
             {"question": "q", "instruction": "   "},  # a blank instruction is left out
             {"input": "x", "output_len": -4}, {"input": "y", "output_len": "12"}, {"input": "z", "output_len": True},
             {"input": "w", "output_len": 5}]
    got = load_dataset(write(tmp_path, items), 6, 8)
    assert [r.prompt for r in got] == ["from text", "q", "x", "y", "z", "w"]
    assert [r.max_tokens for r in got] == [8, 8, 8, 8, 8, 5]  # only a positive whole number sets the budget


@pytest.mark.parametrize("items, number", [(["ok", "   "], 2), (["ok", 42], 2), ([None], 1)])
def test_the_item_without_a_prompt_is_named(tmp_path, items, number):
    with pytest.raises(DatasetError, match=f"item {number}: no prompt text"):
        load_dataset(write(tmp_path, items), 1, 8)


def test_a_bad_json_lines_file_says_what_it_is_not(tmp_path):
    with pytest.raises(DatasetError, match="not JSON or JSON lines"):
        load_dataset(write(tmp_path, '{"text": "a"}\n{"text": \n'), 1, 8)


# ----- progress -----

class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_redraws_one_line_and_ends_it():
    screen = Terminal()
    bar = Progress(2, label="soak", stream=screen)
    bar.update(done())
    bar.update(done("boom"))
    bar.close()
    text = screen.getvalue()
    assert text.startswith("\r") and text.endswith("\n") and text.count("\n") == 1
    assert text.rstrip("\n").rsplit("\r", 1)[1].startswith(f"soak [{'#' * 30}] 2/2 requests, 1 errors, ")


def test_progress_on_a_pipe_writes_few_whole_lines():
    pipe = io.StringIO()
    bar = Progress(1000, stream=pipe)
    for _ in range(1000):
        bar.update(done())
    bar.close()
    lines = pipe.getvalue().splitlines()
    assert "\r" not in pipe.getvalue() and 4 <= len(lines) <= 6  # every quarter, and the end
    assert lines[-1].startswith("bench [") and "1000/1000 requests, 0 errors" in lines[-1]


def test_progress_of_a_timed_run_follows_the_clock():
    pipe = io.StringIO()
    bar = Progress(None, stream=pipe, duration=0.05)
    time.sleep(0.06)
    bar.update(done())
    line = pipe.getvalue().splitlines()[-1]
    assert f"[{'#' * 30}] 1 requests" in line  # no "/total" without a count


# ----- drivers -----

def test_run_load_sends_everything_once_and_closes_the_progress():
    sent: list[str] = []
    pipe = io.StringIO()
    requests = synthetic_requests(7, 4, 2)
    records, wall = run_load(lambda r: (sent.append(r.prompt), done())[1], requests, concurrency=0,
                             progress=Progress(7, stream=pipe))
    assert sorted(sent) == sorted(r.prompt for r in requests) and len(records) == 7 and wall >= 0
    assert "7/7 requests" in pipe.getvalue().splitlines()[-1]


def think_time_run(think_time: float, duration: float) -> tuple[list[tuple[int, int, float]], float]:
    """run_sessions with 2 sessions; the (session, turn, monotonic send time) of every request, and the deadline."""
    calls: list[tuple[int, int, float]] = []
    lock = threading.Lock()

    def send(session: int, request: BenchRequest) -> RequestRecord:
        with lock:
            calls.append((session, int(request.prompt.split("/")[1]), time.monotonic()))
        return done()

    started = time.monotonic()
    run_sessions(send, lambda session, turn: BenchRequest(f"{session}/{turn}", 4), sessions=2, duration=duration,
                 think_time=think_time)
    return calls, started + duration


def test_sessions_take_turns_and_wait_their_think_time():
    calls, deadline = think_time_run(think_time=0.1, duration=0.6)
    for session in (0, 1):
        mine = [c for c in calls if c[0] == session]
        assert [turn for _, turn, _ in mine] == list(range(len(mine)))
        early = [c for c in mine if c[2] < deadline - 0.1]  # sends with a whole think time left before the end
        assert len(early) >= 2
        assert all(b[2] - a[2] >= 0.09 for a, b in zip(early, early[1:], strict=False))


def test_sessions_do_not_burst_in_the_last_think_time_before_the_deadline():
    calls, _ = think_time_run(think_time=0.3, duration=0.6)
    assert len(calls) <= 2 * 3  # 0.6 s at one message per 0.3 s, per session (sends at 0, 0.3 and maybe 0.6)


def test_the_session_pool_never_gives_one_session_to_two_requests_at_once():
    in_use: set[int] = set()
    seen: set[int] = set()
    clashes: list[int] = []
    lock = threading.Lock()

    def send(session: int, request: BenchRequest) -> RequestRecord:
        with lock:
            if session in in_use:
                clashes.append(session)
            in_use.add(session)
            seen.add(session)
        time.sleep(0.01)
        with lock:
            in_use.discard(session)
        return done()

    records, _ = run_load(session_pool(send, 3), synthetic_requests(30, 4, 2), concurrency=3)
    assert len(records) == 30 and clashes == [] and seen == {0, 1, 2}


def test_the_session_pool_gets_its_session_back_after_a_failure():
    def send(session: int, request: BenchRequest) -> RequestRecord:
        raise RuntimeError("server gone")

    one = session_pool(send, 1)
    for _ in range(2):  # with the session lost, the second call would find the pool empty
        with pytest.raises(RuntimeError, match="server gone"):
            one(BenchRequest("p", 1))
