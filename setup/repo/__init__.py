"""Triton model repositories from model_repo_templates/: fill, validate (parsed, no placeholder left,
multimodal wiring checked) and write atomically; llmapi.py writes Triton llmapi repositories
(config.pbtxt of the release + 1/model.yaml).

May import: setup.catalog and the base modules.
"""
