"""Fixtures of the CPU engine's unit tests: the runner on the real SmolLM2 and the demo prompts' ids."""

from __future__ import annotations

import pytest

from tests.cpu_engine_helpers import ADAPTER_TASKS, PROMPTS, chat_ids, load_runner, load_tokenizer


@pytest.fixture(scope="module")
def runner():
    return load_runner()


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


@pytest.fixture(scope="module")
def prompt_ids(tokenizer):
    return [chat_ids(tokenizer, p) for p in PROMPTS]


@pytest.fixture(scope="module")
def adapters():
    return dict(ADAPTER_TASKS)
