"""Triton model repositories from model_repo_templates/: fill, validate (parsed, no placeholder left,
multimodal wiring checked) and write atomically.

May import: setup.catalog and the base modules.
"""
