"""app/bench/stats.py: percentiles, millisecond latencies, the run summary (what counts, what is left out)
and the printed table. Complements the figures checked in tests/unit/app/bench/test_bench.py."""

from __future__ import annotations

import pytest

from app.bench.stats import Latency, RequestRecord, format_summary, percentile, summarize


def ok(latency: float, tokens: int = 4, ttft: float | None = 0.1, gaps=()) -> RequestRecord:
    return RequestRecord(started=100.0, ended=100.0 + latency, first_token=None if ttft is None else 100.0 + ttft,
                         tokens=tokens, gaps=list(gaps))


def failed(message: str, tokens: int = 0) -> RequestRecord:
    return RequestRecord(started=100.0, ended=109.0, first_token=100.5, tokens=tokens, gaps=[5.0], error=message)


def test_record_timings():
    record = ok(2.5, ttft=0.25)
    assert record.latency == pytest.approx(2.5) and record.ttft == pytest.approx(0.25)
    assert ok(1.0, ttft=None).ttft is None


@pytest.mark.parametrize("values, pct, expected", [
    ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
    ([1.0, 2.0, 3.0, 4.0], 90, 3.7),
    ([4.0, 1.0, 3.0, 2.0], 0, 1.0),
    ([4.0, 1.0, 3.0, 2.0], 100, 4.0),
    ([7.0], 99, 7.0),
])
def test_percentile_interpolates_between_neighbours(values, pct, expected):
    assert percentile(values, pct) == pytest.approx(expected)


def test_percentile_leaves_its_input_alone():
    values = [3.0, 1.0, 2.0]
    percentile(values, 50)
    assert values == [3.0, 1.0, 2.0]


def test_latency_is_in_milliseconds_and_empty_is_none():
    lat = Latency.of([0.1, 0.2, 0.3])
    assert (lat.avg, lat.p50) == (pytest.approx(200.0), pytest.approx(200.0))
    assert lat.p99 == pytest.approx(298.0)
    assert Latency.of([]) == Latency(None, None, None, None)


def test_failed_requests_count_only_as_errors():
    summary = summarize([ok(1.0, tokens=10), failed("boom", tokens=99)], wall_seconds=1.0)
    assert (summary.requests, summary.completed, summary.errors) == (2, 1, 1)
    assert summary.output_tokens_per_second == pytest.approx(10.0)  # the failed one's 99 tokens are left out
    assert summary.e2e_ms.p99 == pytest.approx(1000.0)  # not its 9 s
    assert summary.itl_ms.avg is None  # its gaps are left out too
    assert summary.ttft_ms.avg == pytest.approx(100.0)


def test_requests_without_a_first_token_are_left_out_of_ttft():
    summary = summarize([ok(1.0, ttft=0.2), ok(1.0, ttft=None)], wall_seconds=1.0)
    assert summary.ttft_ms.avg == pytest.approx(200.0) and summary.completed == 2


def test_error_messages_keep_the_five_most_common():
    messages = ["a"] * 3 + ["b"] * 6 + ["c", "d", "e", "f"] + ["g"] * 2
    summary = summarize([failed(m) for m in messages], wall_seconds=1.0)
    assert list(summary.error_messages.items())[:3] == [("b", 6), ("a", 3), ("g", 2)]
    assert len(summary.error_messages) == 5 and summary.completed == 0
    assert summary.avg_output_tokens == 0.0 and summary.requests_per_second == 0.0


def test_nothing_sent_and_no_time_taken_still_summarize():
    summary = summarize([], wall_seconds=0.0)
    assert (summary.requests, summary.requests_per_second, summary.avg_output_tokens) == (0, 0.0, 0.0)
    assert summary.e2e_ms == Latency(None, None, None, None)


def test_settings_are_copied():
    settings = {"concurrency": 4}
    summary = summarize([ok(1.0)], wall_seconds=1.0, settings=settings)
    settings["concurrency"] = 99
    assert summary.settings == {"concurrency": 4} and summary.as_dict()["settings"] == {"concurrency": 4}


def test_the_table_shows_dashes_for_missing_figures_and_lists_errors():
    text = format_summary(summarize([failed("boom"), failed("boom"), failed("bang")], wall_seconds=2.0))
    lines = text.splitlines()
    assert lines[0].startswith("Requests") and "0 ok / 3 sent in 2.00 s" in lines[0]  # no label line
    ttft = next(line for line in lines if line.startswith("Time to first token"))
    assert ttft.split()[-4:] == ["-", "-", "-", "-"]
    assert lines[-3:] == ["Errors                    3", "  2 x boom", "  1 x bang"]


def test_the_table_rounds_to_a_tenth_of_a_millisecond():
    text = format_summary(summarize([ok(1.23456, tokens=3)], wall_seconds=1.0, label="run 1"))
    assert text.splitlines()[0] == "run 1"
    e2e = next(line for line in text.splitlines() if line.startswith("End-to-end latency"))
    assert e2e.split()[-4:] == ["1234.6"] * 4
