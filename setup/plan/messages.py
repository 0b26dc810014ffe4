"""Sentences the setup.plan package shows to people (errors, warnings, notes); other modules import them."""

# llmapi.py
MSG_FAMILY = "Unknown model family '{family}' for the llmapi model; choose one of: {choices}."
MSG_NOT_SERVED = "{name} cannot be deployed with Triton's llmapi model: {note}"
MSG_CODE_LATER = ("`build` copies the release's model.py and helpers.py into the repository: give --code-dir "
                  "(a checkout of {repo}, or the folder {path}).")

# scripts.py
MSG_NOT_IN_CHECKOUT = ("{script} is not in the TensorRT-LLM checkout {root} (looked for {tried}); check out the "
                       "release you chose ({version}) or pass --trtllm-root.")

# serve.py
MSG_SERVE_FAMILY = "Unknown model family '{family}' for trtllm-serve; choose one of: {choices}."
MSG_SERVE_NOT_SERVED = "{name} cannot be deployed with trtllm-serve on TensorRT-LLM {release}: {note}"
MSG_FRACTION = "kv_cache_fraction must be above 0 and at most 1, got {value}."
MSG_PORT = "port must be between 1 and 65535, got {value}."
MSG_LORA_OPTION = "{name} is a LoRA setting; give --lora-dir too."
MSG_OPTION = "--option takes KEY=VALUE with a dotted key (e.g. kv_cache_config.enable_partial_reuse=false), got '{text}'."

# serve_catalog.py
MSG_RELEASE = ("trtllm-serve plans are written for TensorRT-LLM {choices} (the releases whose LLM API "
               "arguments are recorded); got '{version}'.")
MSG_UNKNOWN_KEY = ("'{key}' is not an LLM API argument of TensorRT-LLM {release} (recorded from {repo} {tag}, "
                   "setup/data/llm_api/{release}.yaml).")
MSG_NOT_MAPPING = "'{key}' must be a mapping of {what} fields."
MSG_UNKNOWN_FLAG = "trtllm-serve of TensorRT-LLM {release} has no flag {flag} (recorded from {repo} {tag})."
MSG_RUNNER_LORA_ERA = ("{family} through the runner takes LoRA from TensorRT-LLM 1.x on (its runner passes lora_uids only "
                       "there); {version} ignores the adapters: leave the LoRA folder empty or pick a 1.x release.")
MSG_RUNNER_LORA_FAMILY = ("{family}'s path in the runner passes no LoRA ({why}); leave the LoRA folder empty.")
MSG_RUNNER_LORA_NAME = ("Adapter folder '{name}' cannot be recorded in the repository's lora_adapters (its name has a "
                        "comma, quote or backslash); rename the folder.")
