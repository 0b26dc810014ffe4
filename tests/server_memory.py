"""A memory budget shared by the workers of the server pass: the servers the tests start hold an estimate of their
memory while they run, and a start that would take the run's servers over the budget waits until others stop.

Why: each worker keeps its own servers (its demo tritonserver, then the servers of the group it runs); on 2 workers
a family-output server (four runner stand-ins of ~1.4 GiB each), vLLM and two demo servers together filled 24 GiB and
the machine thrashed until CI's time ran out. The budget is a fixed figure (`SERVER_MEMORY_GIB`, default 14), not
what the machine has free at the moment, so the run behaves the same on an idle and on a busy machine. 14 leaves
room on 24 GiB for the test processes, Chromium and the apps (2-3 GiB), the page cache the stubs' libraries run
from, and 4 GiB of other work: at 16, beside `scripts/busy_machine.py --gib 4`, the kernel spent a third of five
minutes stalled on memory and three runner models took 290 s to load instead of 12.

The figures are estimates measured with `ps` on the CPU demo (resident set of each model's stub process), kept
here beside the rule. The ledger is a JSON file in the run's temporary folder, changed under `flock`. A lasting
hold (each worker's demo tritonserver, kept for its whole session) counts against the budget but is never waited
for; a worker whose start must wait stops its own demo server first when the test at hand does not use it
(`make_room`, tests/server_lifetimes.py), and a later test that does starts it again. No deadlock: a start goes ahead when no other passing server runs, or when every other holder is waiting too
(the lowest pid first), so the budget can be overrun, never hang the run. Holders that died are dropped.

Only the test suite imports this module; it imports nothing of the app (of the CPU twins, one list of names).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from cpu_runtime.family_outputs.jobs import ANSWERS_EVERY_PICTURE

T = TypeVar("T")

BUDGET_ENV = "SERVER_MEMORY_GIB"
DEFAULT_BUDGET_GIB = 14.0
LEDGER = "server-memory.json"
WAITS = "server-waits.jsonl"  # one line per start that waited for the budget: what, how long, for how much
LEDGER_FILES = (LEDGER, "server-memory.lock", WAITS)  # the run's own, not left by a test
WAIT_NOTED_SECONDS = 1.0
POLL_SECONDS = 0.5

# GiB per model folder of a Triton repository (proportional set size of each stub process on the CPU demo, measured
# during the server pass), and per server
MODEL_GIB = {"tensorrt_llm": 1.3, "multimodal_encoders": 0.8,
             # stubs that only route requests or pace tokens: 0.02 measured each (their libraries are shared pages)
             "tensorrt_llm_bls": 0.1, "pacing": 0.1,
             # a tokenizer without PyTorch (model_repo_templates/shared/tokenizer_only.py): 0.12 resident; a
             # preprocessing model may run an image encoder too (XComposer2's), so it keeps OTHER_MODEL_GIB
             "postprocessing": 0.15}
RUNNER_MODEL_GIB = 1.6  # runner-<family>: the CPU engine, the image encoder and OCR in one stub (1.4-1.7 measured)
# a runner twin whose own output answers every picture (cpu_runtime/family_outputs/jobs.py) never loads the CPU
# engine: the image encoder and OCR (0.54 measured at start)
RUNNER_OWN_OUTPUT_GIB = 0.8
OTHER_MODEL_GIB = 0.3  # preprocessing, postprocessing and the like: a Python stub with the tokenizer
DEMO_COMMAND_GIB = 3.5  # a test's own `python -m app --demo`: the demo repository (no pacing model) and the app
SERVER_GIB = 0.3  # tritonserver itself
VLLM_GIB = 2.9  # vLLM's CPU build: API server, engine core and worker


def repository_gib(repo: Path) -> float:
    """The estimated resident memory of a tritonserver serving `repo`."""
    total = SERVER_GIB
    for model in (p for p in repo.iterdir() if (p / "config.pbtxt").is_file()):
        if 'platform: "ensemble"' in (model / "config.pbtxt").read_text(encoding="utf-8", errors="replace"):
            continue  # an ensemble only routes: no process of its own
        if model.name.startswith("runner-"):
            total += RUNNER_OWN_OUTPUT_GIB if _answers_every_picture(model) else RUNNER_MODEL_GIB
        else:
            total += MODEL_GIB.get(model.name, OTHER_MODEL_GIB)
    return total


def _answers_every_picture(model: Path) -> bool:
    """Whether the runner twin in `model` gives its family's own output for every picture (its visual folder's
    runner_format names such a job), so it never loads its LLM."""
    found = re.search(r'key: "visual_engine_dir" value: \{ string_value: "([^"]+)" \}',
                      (model / "config.pbtxt").read_text(encoding="utf-8", errors="replace"))
    try:
        raw = json.loads((Path(found.group(1)) / "config.json").read_text(encoding="utf-8")) if found else {}
    except (OSError, ValueError):
        return False
    return (raw.get("runner_format") or {}).get("twin_output") in ANSWERS_EVERY_PICTURE


def budget_waits(waits: list[dict]) -> str:
    """One line on the starts that waited for the budget, longest first ("" when none did)."""
    if not waits:
        return ""
    ranked = sorted(waits, key=lambda wait: -wait["seconds"])
    named = ", ".join(f"{_short(w['key'])} {w['seconds']:.0f} s ({w['gib']:.1f} GiB)" for w in ranked[:6])
    more = f" and {len(ranked) - 6} more" if len(ranked) > 6 else ""
    roomed = sum(1 for w in waits if w.get("made_room"))
    stopped = f"; {roomed} of them stopped their worker's demo server to make room" if roomed else ""
    return (f"Waits for the server memory budget: {sum(w['seconds'] for w in waits):.0f} s in {len(waits)} starts: "
            f"{named}{more}{stopped}")


def _short(key: str) -> str:
    """A hold's key without its folder's path ("triton /tmp/.../family-outputs0" -> "triton family-outputs0")."""
    what, _, rest = key.partition(" ")
    return f"{what} {Path(rest).name}" if rest.startswith("/") else key


def budget_gib() -> float:
    return float(os.environ.get(BUDGET_ENV, DEFAULT_BUDGET_GIB))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class MemoryLedger:
    """The run's ledger: {"held": {hold id: [pid, GiB, lasting, server pid or None]}, "waiting": [pid, ...]}, one
    file for all workers. A hold goes when its holder dies, or when the server it was bound to (`bind`) is gone: a
    test that kills its server and starts another by other means must not leave a hold that nobody gives back."""

    def __init__(self, folder: Path, budget: float | None = None, make_room: Callable[[], bool] | None = None) -> None:
        """`make_room()` is called once when a start of this process must wait: it may stop a server this process
        keeps but does not need now (True when it did), so the wait ends when that server is gone."""
        self.path = folder / LEDGER
        self.waits_path = folder / WAITS
        self.budget = budget_gib() if budget is None else budget
        self.make_room = make_room

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict]:
        with open(self.path.with_suffix(".lock"), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = json.loads(self.path.read_text()) if self.path.is_file() else {}
                state.setdefault("held", {})
                state.setdefault("waiting", [])
                state["held"] = {k: v for k, v in state["held"].items()
                                 if _alive(v[0]) and (len(v) < 4 or v[3] is None or _alive(v[3]))}
                state["waiting"] = [pid for pid in state["waiting"] if _alive(pid)]
                yield state
                self.path.write_text(json.dumps(state))
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _may_start(self, state: dict, pid: int, gib: float) -> bool:
        used = sum(hold[1] for hold in state["held"].values())
        passing = [hold for hold in state["held"].values() if hold[0] != pid and not hold[2]]
        if used + gib <= self.budget or not passing:
            return True
        others = {hold[0] for hold in passing}
        # every other holder waits too: nobody would ever stop a server, so one of the waiters goes ahead
        return others <= set(state["waiting"]) and pid == min(state["waiting"] or [pid])

    def acquire(self, key: str, gib: float, lasting: bool = False) -> float:
        """Hold `gib` under `key` once the budget allows (at once when `lasting`: a server kept for the whole session
        is never waited for, so it must not wait either); returns the seconds waited."""
        pid, started, asked_for_room, made_room = os.getpid(), time.monotonic(), False, False
        while True:
            with self._locked() as state:
                if lasting or self._may_start(state, pid, gib):
                    state["held"][key] = [pid, gib, lasting]
                    state["waiting"] = [p for p in state["waiting"] if p != pid]
                    waited = time.monotonic() - started
                    if waited >= WAIT_NOTED_SECONDS:
                        with open(self.waits_path, "a", encoding="utf-8") as out:
                            out.write(json.dumps({"key": key, "gib": gib, "seconds": round(waited, 1),
                                                  "made_room": made_room}) + "\n")
                    return waited
                if pid not in state["waiting"]:
                    state["waiting"].append(pid)
            if not asked_for_room and self.make_room is not None:
                asked_for_room = True
                made_room = bool(self.make_room())  # outside the lock: the server it stops gives its hold back through it
            time.sleep(POLL_SECONDS)

    def start_held(self, key: str, gib: float, start: Callable[[], T], lasting: bool = False) -> T:
        """`start()` once `gib` is held under `key` (see acquire); the hold is given back when the start fails, and
        otherwise when the server stops (BudgetedProcess)."""
        self.acquire(key, gib, lasting=lasting)
        try:
            return start()
        except BaseException:
            self.release(key)
            raise

    def bind(self, key: str, server_pid: int | None) -> None:
        """Tie the hold `key` to its server's process: the hold goes when that process is gone."""
        with self._locked() as state:
            if key in state["held"] and server_pid:
                state["held"][key] = [*state["held"][key][:3], server_pid]

    def waits(self) -> list[dict]:
        """The starts that waited for the budget in this run, in order."""
        if not self.waits_path.is_file():
            return []
        return [json.loads(line) for line in self.waits_path.read_text(encoding="utf-8").splitlines() if line]

    def release(self, key: str) -> None:
        with self._locked() as state:
            state["held"].pop(key, None)

    def held(self) -> dict[str, float]:
        with self._locked() as state:
            return {k: hold[1] for k, hold in state["held"].items()}

    @contextlib.contextmanager
    def holding(self, key: str, gib: float) -> Iterator[None]:
        """Hold `gib` while the block runs (servers a test starts by other means than a repository)."""
        self.acquire(key, gib)
        try:
            yield
        finally:
            self.release(key)


class BudgetedProcess:
    """A started server whose stop() also gives its memory back to the ledger (other attributes pass through)."""

    def __init__(self, process, ledger: MemoryLedger, key: str, gib: float = 0.0) -> None:
        self._process, self._ledger, self._key, self._gib = process, ledger, key, gib
        ledger.bind(key, getattr(process, "pid", None))

    def restarted(self, process) -> BudgetedProcess:
        """The same hold for a server started again in this one's place (the killed one's hold went with it)."""
        self._ledger.release(self._key)
        self._ledger.acquire(self._key, self._gib)
        return BudgetedProcess(process, self._ledger, self._key, self._gib)

    def stop(self, *args, **kwargs):
        try:
            return self._process.stop(*args, **kwargs)
        finally:
            self._ledger.release(self._key)

    def __getattr__(self, name: str):
        return getattr(self._process, name)
