"""Hugging Face Hub downloads: a model id's checkpoint into a folder, with the real `huggingface_hub` client.

Imports: huggingface_hub, setup.paths, setup.cli_types and the standard library; never the plan, the build
runner or the app. Tokens come from the environment (HF_TOKEN) and never appear in arguments, files or messages.
"""
