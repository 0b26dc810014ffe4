"""The CPU twin's runner wiring (model_repo_templates/cpu_engine/multimodal_runner/1/cpu_runner.py): its LLM is the CPU
engine on the real SmolLM2, loaded at once or on first use (a twin whose own output answers every picture)."""

from __future__ import annotations

import importlib.util
import sys
import types

from tests.cpu_engine_helpers import PROJECT_ROOT, chat_ids, load_tokenizer

WIRING = PROJECT_ROOT / "model_repo_templates/cpu_engine/multimodal_runner/1/cpu_runner.py"
GREEDY = {"temperature": 1.0, "top_k": 1, "top_p": 1.0, "repetition_penalty": 1.0}


def _wiring():
    sys.modules.setdefault("triton_python_backend_utils", types.ModuleType("triton_python_backend_utils"))
    spec = importlib.util.spec_from_file_location("cpu_runner_under_test", WIRING)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_llm_loaded_on_first_use_answers_as_one_loaded_at_once():
    wiring = _wiring()
    from cpu_runtime.engine.runner import load_engine_config
    from setup.cpu.engine import build_cpu_engine

    folder = build_cpu_engine(log=lambda *_: None)
    tokenizer = load_tokenizer()
    ids = chat_ids(tokenizer, "What colour is the sky?")
    later = wiring.EngineLLM(folder, load_now=False)
    assert later._engine is None  # nothing loaded yet: what the prompt table needs is read from the configs
    assert later.vocab_size == len(tokenizer) and later.max_seq_len == int(
        load_engine_config(folder)["build_config"]["max_seq_len"])
    lazy_tokens = list(later.tokens(ids, 6, tokenizer.eos_token_id, GREEDY))
    assert later._engine is not None and later.vocab_size == later._engine.vocab_size
    at_once = wiring.EngineLLM(folder)
    assert at_once._engine is not None
    assert lazy_tokens == list(at_once.tokens(ids, 6, tokenizer.eos_token_id, GREEDY)) and len(lazy_tokens) == 6
