"""Model families and TensorRT-LLM releases as data (setup/data/*.yaml) with their loaders, checkpoint
facts (config.json readers), and the build messages.

May import: setup.paths.
"""
