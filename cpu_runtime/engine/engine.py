"""In-flight batching: every step runs one forward pass over all running requests.

- Requests wait in arrival order and join between steps while a cache slot (max_batch_size) and the
  KV budget (kv.KvManager, by policy) allow; finished, cancelled and stopped ones leave at once.
- A step holds at most `max_num_tokens` tokens: one for each decoding request first, then prompt
  chunks of the requests still in prefill, so a long prompt is spread over several steps while the
  running streams keep getting a token per step.
- Rows are ordered by adapter so each adapter's LoRA update touches its own rows only.
- Sampling is per row (sampling.sample_rows) with each request's own settings and generator.

This module has no Triton import so tests can drive it directly.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from dataclasses import dataclass

import numpy as np
import torch

from .forward import Segment
from .sampling import sample_rows
from .threads import step_threads


@dataclass
class Event:
    """What a step did to one request: a token to send, or its end (done, maybe cancelled or failed)."""

    gen: object
    token: int | None = None
    logprob: float = 0.0
    cum_logprob: float = 0.0  # of every token so far (the streamed cum_log_probs output)
    done: bool = False
    cancelled: bool = False
    error: str | None = None


def accept_token(gen, token: int) -> bool:
    """Apply the end/length/stop-word rules to a sampled token; True when it goes to the client."""
    if token == gen.end_id:
        gen.finished = True
        return False
    sequence = gen.output_ids + [token]
    if len(sequence) >= gen.max_new_tokens:
        gen.finished = True
    if any(len(w) <= len(sequence) and sequence[-len(w):] == w for w in gen.stop_words):
        gen.finished = True
    return True


def _adapter_key(segment: Segment) -> int:
    return -1 if segment.adapter is None else segment.adapter.task_id


class Engine:
    def __init__(self, runner, kv, max_batch: int, max_num_tokens: int):
        self.runner, self.kv = runner, kv
        self.max_batch = max_batch
        self.max_num_tokens = max(max_num_tokens, max_batch)  # room for every decoding row
        self.cache = runner.batched.new_cache(max_batch, runner.limits.max_seq_len)
        self.waiting: deque = deque()
        self.running: list = []  # in admission order
        self._free = list(range(max_batch))
        self.steps = self.paused_total = 0
        self.threads = 0  # PyTorch's thread count as this engine last set it (0: not yet)
        self.last_step = {"rows": 0, "tokens": 0, "context_rows": 0, "context_tokens": 0, "adapters": 0}

    # ---- queue -------------------------------------------------------------------------------
    def submit(self, gen) -> None:
        self.waiting.append(gen)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def stats(self) -> dict:
        return {"waiting": len(self.waiting), "running": len(self.running), "max_batch": self.max_batch,
                "paused_total": self.paused_total, **self.last_step, "kv": self.kv.stats()}

    # ---- one step ----------------------------------------------------------------------------
    def step(self, cancelled=lambda gen: False) -> list[Event]:
        """Drop cancelled requests, admit waiting ones, run one forward pass; the events it made."""
        events: list[Event] = []
        self._drop_cancelled(cancelled, events)
        self._admit(events)
        plan = self._schedule()
        if not plan:
            return events
        segments = sorted((self._segment(gen, count) for gen, count in plan), key=_adapter_key)
        self.last_step["adapters"] = len({_adapter_key(s) for s in segments} - {-1})
        self._threads_for(sum(s.count for s in segments))
        try:
            outputs = self.runner.forward(segments, self.cache)
        except Exception as exc:  # a failed pass ends the requests in it
            for gen, _ in plan:
                self._retire(gen)
                events.append(Event(gen, done=True, error=f"CPU engine error: {exc}"))
            return events
        self.steps += 1
        self._collect(segments, outputs, events)
        return events

    def _threads_for(self, tokens: int) -> None:
        """PyTorch's threads for a step of `tokens` tokens (threads.step_threads), set only when they change."""
        wanted = step_threads(tokens)
        if wanted != self.threads:
            torch.set_num_threads(wanted)
            self.threads = wanted

    def fail_all(self, error: str) -> list[Event]:
        """End every running and waiting request with `error` (shutdown, or a step that broke)."""
        events = []
        for gen in list(self.running) + list(self.waiting):
            self._retire(gen)
            events.append(Event(gen, done=True, error=error))
        return events

    def _drop_cancelled(self, cancelled, events) -> None:
        for queue in (self.running, self.waiting):
            for gen in [g for g in queue if gen_cancelled(g, cancelled)]:
                self._retire(gen)
                events.append(Event(gen, done=True, cancelled=True))

    def _admit(self, events) -> None:
        while self.waiting and self._free:
            gen = self.waiting[0]
            keys = self.kv.lookup(gen)
            if not self.kv.can_admit(gen, self.running, len(keys)):
                break
            self.waiting.popleft()
            try:
                self._start(gen, keys)
            except ValueError as exc:  # e.g. a prompt table that does not fit the prompt
                self._retire(gen)
                events.append(Event(gen, done=True, error=str(exc)))

    def _start(self, gen, keys) -> None:
        gen.slot = heapq.heappop(self._free)
        self.running.append(gen)
        self.kv.admit(gen, keys)
        self.cache.reserve(len(keys) * self.kv.tpb, gen.slot + 1)
        for index, key in enumerate(keys):
            self.cache.write(gen.slot, index * self.kv.tpb, self.kv.block_data(key))
        gen.cached = len(keys) * self.kv.tpb
        if gen.first_scheduled_ns == 0:
            gen.first_scheduled_ns = time.time_ns()
        self.runner.prepare(gen)

    def _schedule(self) -> list:
        """(request, tokens this step): decoding rows first, then prompt chunks within the budget."""
        budget, plan = self.max_num_tokens, []
        pending = {id(g): len(g.input_ids) + len(g.output_ids) - g.cached for g in self.running}
        order = [g for g in self.running if pending[id(g)] == 1] + [g for g in self.running if pending[id(g)] > 1]
        for gen in order:
            if gen not in self.running:
                continue  # paused to make room for an earlier one
            count = min(pending[id(gen)], budget)
            if count <= 0:
                break
            if not self._grow(gen, gen.cached + count, plan):
                continue
            plan.append((gen, count))
            budget -= count
        context = [c for g, c in plan if pending[id(g)] > 1]
        self.last_step.update(rows=len(plan), tokens=sum(c for _, c in plan), context_rows=len(context),
                              context_tokens=sum(context))
        return plan

    def _grow(self, gen, tokens: int, plan) -> bool:
        """Blocks for `tokens` positions of `gen`, pausing the latest unplanned requests if needed."""
        planned = {id(g) for g, _ in plan}
        while not self.kv.grow(gen, tokens):
            victims = [g for g in reversed(self.running) if g is not gen and id(g) not in planned]
            self._pause(victims[0] if victims else gen)
            if not victims:
                return False
        return True

    def _pause(self, gen) -> None:
        """max_utilization: give back a request's blocks and slot; it resumes by recomputing its tokens."""
        self._retire(gen)
        gen.paused += 1
        self.paused_total += 1
        self.waiting.appendleft(gen)

    def _segment(self, gen, count: int) -> Segment:
        sequence = gen.input_ids + gen.output_ids
        start, end = gen.cached, gen.cached + count
        context = gen.return_context_logits and not gen.output_ids and gen.context_logits is None
        logits = "all" if context else "last" if end == len(sequence) else "none"
        return Segment(slot=gen.slot, start=start, ids=sequence[start:end], adapter=gen.lora_adapter,
                       embeds=self.runner.chunk_embeds(gen, start, end), logits=logits, owner=gen)

    def _collect(self, segments, outputs, events) -> None:
        rows, gens = [], []
        for seg, logits in zip(segments, outputs, strict=True):
            gen = seg.owner
            gen.cached += seg.count
            if seg.logits == "all":
                gen.context_parts.append(logits.numpy().copy())
            if gen.cached == len(gen.input_ids) + len(gen.output_ids):
                if gen.context_parts:
                    gen.context_logits = np.concatenate(gen.context_parts)[None]
                    gen.context_parts = []
                rows.append(logits[-1])
                gens.append(gen)
        if not rows:
            return
        for gen, (token, logprob) in zip(gens, sample_rows(gens, torch.stack(rows)), strict=True):
            if accept_token(gen, token):
                gen.output_ids.append(token)
                gen.log_probs.append(logprob)
                gen.first_token_ns = gen.first_token_ns or time.time_ns()
                events.append(Event(gen, token=token, logprob=logprob, cum_logprob=sum(gen.log_probs)))
            if gen.finished:
                self._retire(gen)
                events.append(Event(gen, done=True))

    def _retire(self, gen) -> None:
        """Take a request out of the queues and give back its slot and KV blocks."""
        if gen in self.waiting:
            self.waiting.remove(gen)
        if gen not in self.running:
            return
        self.running.remove(gen)
        if gen.kv is not None:
            gen.kv_new_blocks += gen.kv.new_total
            gen.kv_reused_blocks += gen.kv.reused_total
            slot = gen.slot
            self.kv.keep(gen, gen.cached, lambda start, end: self.cache.read(slot, start, end))
            self.kv.release(gen)
        heapq.heappush(self._free, gen.slot)
        gen.slot, gen.cached = None, 0
        if not self.running:
            self.cache.release()  # idle: hold no KV memory until the next request


def gen_cancelled(gen, cancelled) -> bool:
    return gen.stop_requested or bool(cancelled(gen))
