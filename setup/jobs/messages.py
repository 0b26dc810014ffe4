"""Sentences the setup.jobs package shows to people (errors, warnings, notes); other modules import them."""

# cli.py
MSG_NO_VERSION = "Give the TensorRT-LLM version (--trtllm-version, e.g. 0.19)."
MSG_BAD_SET = "--{flag} takes KEY=VALUE, got '{value}'."
MSG_NOT_RESUMABLE = ("Job {job} cannot be resumed: it is not a cancelled, failed or interrupted job with a saved "
                     "config, or a later job used its output folder (`python -m setup build --list-jobs`).")

# serve_cli.py
MSG_NOT_INSTALLED = ("trtllm-serve is not installed on this machine (not on PATH), so it was not started. "
                     "Run {script} where TensorRT-LLM {release} is installed.")
