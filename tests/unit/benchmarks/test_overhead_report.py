"""The overhead benchmark's figures: ratios per round with their spread, the sweep's limits, the goals, the options."""

from __future__ import annotations

import pytest

from benchmarks.overhead import build_parser
from benchmarks.overhead_report import falls_below, format_report, goals, ratios


def row(rate, level, path, tokens_per_second, rounds, errors=0):
    return {"rate": rate, "concurrency": level, "path": path, "tokens_per_second": tokens_per_second,
            "batch_tokens_per_second": rounds, "ttft_p50_ms": 10.0, "ttft_p90_ms": 20.0, "itl_p50_ms": 10.0,
            "batch_seconds": 1.0, "errors": errors, "app_cpu_seconds": None if path == "direct" else 2.0,
            "app_cpu_per_1k_tokens": None if path == "direct" else 0.2, "client_cpu_seconds": 0.5}


ROWS = [row(100, 32, "direct", 3000, [3000, 3000]), row(100, 32, "app (openai)", 2910, [2940, 2880]),
        row(100, 32, "app (sse)", 2400, [2100, 2700]),
        row(100, 128, "direct", 6000, [6000, 6000]), row(100, 128, "app (openai)", 5400, [5400, 5400], errors=3)]


def test_each_round_gives_a_ratio_and_the_spread_is_reported():
    found = {(r["concurrency"], r["path"]): r for r in ratios(ROWS)}
    openai = found[(32, "app (openai)")]
    assert openai["tokens_ratio"] == pytest.approx(0.97) and openai["offered_tokens_per_second"] == 3200
    assert openai["tokens_ratio_repeats"] == pytest.approx({"median": 0.97, "low": 0.96, "high": 0.98})
    assert found[(32, "app (sse)")]["tokens_ratio_repeats"]["low"] == pytest.approx(0.7)


def test_goals_need_the_ratio_and_no_errors_and_the_sweep_finds_the_limit():
    verdicts = {(g["path"], g["concurrency"]): g["met"] for g in goals(ratios(ROWS))}
    assert verdicts == {("app (openai)", 32): True, ("app (openai)", 128): False, ("app (sse)", 32): False}
    limits = falls_below(ratios(ROWS))
    assert limits["app (openai)"] == {"highest_held": 3200, "lowest_below": 12800}
    assert limits["app (sse)"] == {"highest_held": None, "lowest_below": 3200}
    report = format_report({"rows": ROWS, "ratios": ratios(ROWS), "falls_below": limits, "goals": goals(ratios(ROWS))})
    assert "0.960-0.980" in report and "MISSED (0.900, 3 errors)" in report


def test_the_options_default_to_the_issues_levels_and_refuse_bad_lists():
    args = build_parser().parse_args([])
    assert args.concurrency == [32, 128, 256] and args.tokens_per_second == 100 and args.clients == ["openai", "sse"]
    assert build_parser().parse_args(["--rates", "200,50"]).rates == [50.0, 200.0]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--rates", "0"])
