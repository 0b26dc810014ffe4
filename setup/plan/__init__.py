"""Turns a build config into ordered steps (argv lists) with checks, warnings and a preflight; the 1.x
deployment kinds without an engine build: serve.py (trtllm-serve) and llmapi.py (Triton's llmapi model).

May import: setup.repo, setup.lora, setup.catalog and the base modules.
"""
