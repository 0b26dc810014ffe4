"""The overhead benchmark's figures: per-path summaries, ratios to direct with their spread, goals, the tables."""

from __future__ import annotations

from statistics import median

DIRECT = "direct"
SWEEP_GOAL = 0.95  # the sweep reports where each path falls below this share of direct tokens/s
# (path, chats, least share of direct tokens/s) at each rate measured; issue #51's goals at 100 tokens/s per chat
GOALS = (("app (openai)", 32, 0.95), ("app (openai)", 128, 0.95), ("app (sse)", 32, 0.90))


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def spread(values: list[float]) -> dict:
    """Median, lowest and highest of the repeats' values (None when there are none)."""
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None, "low": None, "high": None}
    return {"median": median(values), "low": min(values), "high": max(values)}


def ratios(rows: list[dict]) -> list[dict]:
    """Each app row against the direct row of its rate and level: tokens/s ratio per repeat (the batches ran side
    by side, so each repeat's ratio compares like with like) with median and range, added TTFT, errors."""
    by = {(r["rate"], r["concurrency"], r["path"]): r for r in rows}
    out = []
    for (rate, level, path), row in by.items():
        base = by.get((rate, level, DIRECT))
        if path == DIRECT or base is None:
            continue
        per_repeat = [ratio(a, b) for a, b in zip(row["batch_tokens_per_second"], base["batch_tokens_per_second"],
                                                  strict=False)]
        out.append({
            "rate": rate, "concurrency": level, "path": path,
            "offered_tokens_per_second": rate * level,
            "tokens_ratio": ratio(row["tokens_per_second"], base["tokens_per_second"]),
            "tokens_ratio_repeats": spread(per_repeat),
            "ttft_added_ms": None if row["ttft_p50_ms"] is None or base["ttft_p50_ms"] is None
            else row["ttft_p50_ms"] - base["ttft_p50_ms"],
            "errors": row["errors"], "app_cpu_per_1k_tokens": row["app_cpu_per_1k_tokens"],
        })
    return out


def goals(found: list[dict]) -> list[dict]:
    """The goals for every rate measured at a goal's level: met when the ratio is at least the goal's share and
    no chat failed."""
    out = []
    for path, level, least in GOALS:
        for r in (r for r in found if r["path"] == path and r["concurrency"] == level):
            met = r["tokens_ratio"] is not None and r["tokens_ratio"] >= least and r["errors"] == 0
            out.append({"path": path, "concurrency": level, "rate": r["rate"], "least": least,
                        "tokens_ratio": r["tokens_ratio"], "errors": r["errors"], "met": met})
    return out


def falls_below(found: list[dict], least: float = SWEEP_GOAL) -> dict[str, dict]:
    """Per path: the highest offered tokens/s (chats x rate) still at `least` of direct, and the lowest below it."""
    out: dict[str, dict] = {}
    for path in sorted({r["path"] for r in found}):
        mine = sorted((r for r in found if r["path"] == path), key=lambda r: r["offered_tokens_per_second"])
        held = [r["offered_tokens_per_second"] for r in mine if _holds(r, least)]
        below = [r["offered_tokens_per_second"] for r in mine if not _holds(r, least)]
        out[path] = {"highest_held": max(held) if held else None, "lowest_below": min(below) if below else None}
    return out


def _holds(r: dict, least: float) -> bool:
    return r["tokens_ratio"] is not None and r["tokens_ratio"] >= least and r["errors"] == 0


def _f(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def format_report(result: dict) -> str:
    """The figures table, the ratio table (median and range over repeats), the sweep's limits, the goals."""
    lines = [f"{'rate':>5}{'conc':>5}  {'path':<20}{'TTFT p50':>9}{'TTFT p90':>9}{'ITL p50':>8}{'tokens/s':>9}"
             f"{'batch s':>8}{'app CPU s':>10}{'CPU s/1k tok':>13}{'load CPU s':>11}{'errors':>7}"]
    for r in result["rows"]:
        lines.append(f"{r['rate']:>5g}{r['concurrency']:>5}  {r['path']:<20}{_f(r['ttft_p50_ms'], '.1f'):>9}"
                     f"{_f(r['ttft_p90_ms'], '.1f'):>9}{_f(r['itl_p50_ms'], '.1f'):>8}"
                     f"{r['tokens_per_second']:>9.1f}{r['batch_seconds']:>8.2f}{_f(r['app_cpu_seconds'], '.2f'):>10}"
                     f"{_f(r['app_cpu_per_1k_tokens'], '.3f'):>13}{r['client_cpu_seconds']:>11.2f}{r['errors']:>7}")
    lines += ["", f"{'rate':>5}{'conc':>5}  {'app vs direct':<20}{'offered tok/s':>14}{'+TTFT ms':>9}"
                  f"{'tokens/s':>9}{'median':>8}{'range':>14}{'errors':>7}"]
    for r in result["ratios"]:
        s = r["tokens_ratio_repeats"]
        span = f"{_f(s['low'], '.3f')}-{_f(s['high'], '.3f')}"
        lines.append(f"{r['rate']:>5g}{r['concurrency']:>5}  {r['path']:<20}{r['offered_tokens_per_second']:>14g}"
                     f"{_f(r['ttft_added_ms'], '.1f'):>9}{_f(r['tokens_ratio'], '.3f'):>9}"
                     f"{_f(s['median'], '.3f'):>8}{span:>14}{r['errors']:>7}")
    lines.append("")
    for path, limit in result["falls_below"].items():
        lines.append(f"{path}: at >= {SWEEP_GOAL:.0%} of direct up to {_f(limit['highest_held'], 'g')} offered "
                     f"tokens/s; below from {_f(limit['lowest_below'], 'g')}")
    for g in result["goals"]:
        lines.append(f"{g['path']} at {g['concurrency']} chats, {g['rate']:g} tokens/s each: tokens/s >= "
                     f"{g['least']:.0%} of direct with no errors: {'met' if g['met'] else 'MISSED'} "
                     f"({_f(g['tokens_ratio'], '.3f')}, {g['errors']} errors)")
    return "\n".join(lines)
