"""The embedded CPU deployment: the model prepared from its wheel, the CPU engine and OCR encoder
folders, the demo repositories (engine topology in demo.py, Triton llmapi in llmapi_demo.py), and the
benchmark pacing model.

May import: setup.repo, setup.lora, setup.catalog and the base modules.
"""
