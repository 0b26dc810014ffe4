"""Helpers for the CPU engine's batching tests: the engine runner on the real SmolLM2, requests as
parse_request makes them, the unbatched reference (`alone`) and a step driver (`drive`)."""

from __future__ import annotations

import functools
import sys
import types

from setup.lora.convert import convert_peft
from setup.paths import PROJECT_ROOT

PROMPTS = ("What is the capital of France?", "Name three colours.", "Write a haiku about rain.",
           "Why is the sky blue?")
ADAPTER_TASKS = {"pirate": 9101, "french": 9102}


@functools.lru_cache(maxsize=1)
def load_runner():
    """The engine's runner on the real SmolLM2 (one per test process), demo adapters in its LoRA cache."""
    # cpu_runtime.engine.requests imports Triton's module for its parser; these tests use only its dataclasses
    sys.modules.setdefault("triton_python_backend_utils", types.ModuleType("triton_python_backend_utils"))
    from cpu_runtime.engine.runner import EngineRunner
    from setup.cpu.engine import build_cpu_engine

    runner = EngineRunner(build_cpu_engine(log=lambda *_: None), {"lora_cache_host_memory_bytes": str(64 << 20)})
    for name, task in ADAPTER_TASKS.items():
        converted = convert_peft(PROJECT_ROOT / "adapters" / name, "float16")
        runner.lora.release(runner.lora.acquire(task, converted.weights, converted.config))
    return runner


@functools.lru_cache(maxsize=1)
def load_hf_model():
    """Transformers' own model of the runner's folder: the reference the engine's forward pass is checked against."""
    from cpu_runtime.engine.checkpoint import load_with_transformers
    from setup.cpu.model import prepare_cpu_model

    return load_with_transformers(prepare_cpu_model(log=lambda *_: None))


@functools.lru_cache(maxsize=1)
def load_tokenizer():
    from transformers import AutoTokenizer

    from setup.cpu.model import prepare_cpu_model

    return AutoTokenizer.from_pretrained(prepare_cpu_model(log=lambda *_: None))


def chat_ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=True,
                                              add_generation_prompt=True, return_dict=False))


def make_gen(runner, ids, max_new=8, rid="r", task=None, **fields):
    """A GenerationRequest as parse_request makes it (end id 2, the model's eos), adapter attached."""
    from cpu_runtime.engine.requests import GenerationRequest

    gen = GenerationRequest(request_id=rid, input_ids=list(ids), max_new_tokens=max_new, end_id=2, **fields)
    gen.lora_task_id = task
    runner.attach_lora(gen)
    return gen


_ALONE: dict = {}


def alone(runner, ids, **kw):
    """The request run by itself, one token per forward pass with its own cache (the unbatched engine)."""
    key = None if "prompt_table" in kw else (tuple(ids), repr(sorted(kw.items())))
    if key in _ALONE:
        return _ALONE[key]
    gen = make_gen(runner, ids, **kw)
    while not gen.finished:
        token, logprob = runner.step(gen)
        if token is not None:
            gen.output_ids.append(token)
            gen.log_probs.append(logprob)
    runner.release(gen)
    if key is not None:
        _ALONE[key] = gen
    return gen


def make_engine(runner, max_batch=8, max_num_tokens=256, total_blocks=None, policy="guaranteed_no_evict",
                reuse=False, tokens_per_block=64):
    from cpu_runtime.engine.engine import Engine
    from cpu_runtime.engine.kv import KvConfig, KvManager

    blocks = total_blocks or max_batch * runner.limits.max_seq_len // tokens_per_block
    kv = KvManager(KvConfig(total_blocks=blocks, tokens_per_block=tokens_per_block, policy=policy, reuse=reuse))
    return Engine(runner, kv, max_batch, max_num_tokens)


class Trace:
    """What each step of `drive` did."""

    def __init__(self):
        self.rows, self.tokens, self.adapters, self.events = [], [], [], []
        self.cancelled, self.joined = [], {}

    def tokens_at(self, gen, step: int) -> bool:
        return any(e.gen is gen and e.token is not None for e in self.events[step])


def drive(engine, arrivals: dict, stop: dict | None = None, limit: int = 400) -> Trace:
    """Step `engine` until idle: `arrivals` {step: requests} are submitted before that step, `stop`
    {step: requests} are stopped (the `stop` input) before it. Finished requests release their adapter."""
    trace, stop = Trace(), stop or {}
    for step in range(limit):
        for gen in arrivals.get(step, []):
            engine.submit(gen)
        for gen in stop.get(step, []):
            gen.stop_requested = True
        if not engine.has_work() and step > max(arrivals):
            return trace
        unscheduled, ran = list(engine.waiting), engine.steps
        events = engine.step()
        trace.events.append(events)
        for key in ("rows", "tokens", "adapters"):
            getattr(trace, key).append(engine.last_step[key] if engine.steps > ran else 0)
        trace.joined.update({g: step for g in unscheduled if g.first_scheduled_ns})
        for event in events:
            if event.done:
                engine.runner.release(event.gen)
                if event.cancelled:
                    trace.cancelled.append(event.gen)
    raise AssertionError("the engine did not go idle")


TOL = 1e-3  # log-probabilities / logits: batched matmuls round differently from batch-of-one ones


def assert_same(batched, reference):
    assert batched.output_ids == reference.output_ids
    assert max((abs(a - b) for a, b in zip(batched.log_probs, reference.log_probs, strict=True)), default=0) < TOL
