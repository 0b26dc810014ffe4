"""Where a test run's CPU goes: CPU seconds summed by kind of process (a model's stub, tritonserver, Chromium, the
pytest workers, vLLM, ...), read from /proc every few seconds until stopped.

    python scripts/cpu_by_kind.py cpu.json &   # then run `make test`; cpu.json is rewritten every 30 s

A process that lives less than one interval is missed; one that was running before the script started counts its
whole life. Subtract two snapshots of the file to get one phase (the server pass starts after the unit pass's
summary line). Standard library only, so it runs before any install.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK")
STUB_MODEL = re.compile(r"/([^/]+)/1/[^/ ]+\.py")  # the model folder in a python-backend stub's arguments


def kind_of(args: list[str]) -> str:
    """The kind of a process from its command line (argv)."""
    if not args:
        return "kernel"
    line = " ".join(args)
    if "triton_python_backend_stub" in args[0]:
        found = STUB_MODEL.search(line)
        return f"stub:{found.group(1) if found else '?'}"
    rules = (("tritonserver", args[0].endswith("tritonserver")), ("chromium", "chrom" in Path(args[0]).name),
             ("vllm", ".venv-vllm" in line), ("dynamo", ".venv-dynamo" in line),
             ("busy_machine", "busy_machine" in line), ("app --demo", " -m app" in line and "--demo" in line),
             ("pytest worker", "exec(eval(sys.stdin" in line), ("pytest", "pytest" in line), ("pip", " pip " in line))
    return next((name for name, matches in rules if matches), f"other:{Path(args[0]).name[:30]}")


def _argv(pid: str) -> list[str] | None:
    try:
        raw = (PROC / pid / "cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def sample(seen: dict[tuple[int, str], list]) -> None:
    """Update `seen` ((pid, start time) -> [kind, CPU ticks]) with every process now running."""
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        try:
            fields = (PROC / entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        key, ticks = (int(entry), fields[19]), int(fields[11]) + int(fields[12])
        if key in seen:
            seen[key][1] = ticks
        elif (args := _argv(entry)) is not None:
            seen[key] = [kind_of(args), ticks]


def totals(seen: dict[tuple[int, str], list]) -> dict[str, float]:
    """CPU seconds by kind, largest first."""
    summed: dict[str, float] = {}
    for kind, ticks in seen.values():
        summed[kind] = summed.get(kind, 0.0) + ticks / TICKS
    return dict(sorted(summed.items(), key=lambda item: -item[1]))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the JSON file to keep rewriting")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between two looks at /proc")
    args = parser.parse_args(argv)
    seen: dict[tuple[int, str], list] = {}
    written = 0.0
    while True:
        sample(seen)
        if time.monotonic() - written >= 30:
            temporary = args.out.with_suffix(".tmp")
            temporary.write_text(json.dumps({"time": time.strftime("%H:%M:%S"),
                                             "cpu_seconds": {k: round(v, 1) for k, v in totals(seen).items()}},
                                            indent=1))
            temporary.replace(args.out)
            written = time.monotonic()
        time.sleep(args.every)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
