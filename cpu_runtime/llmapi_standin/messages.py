"""Sentences the cpu_runtime.llmapi_standin package shows to people (errors, warnings, notes); other modules import them."""

# images.py
MSG_LOCAL = ("image_url must be an http(s) URL or a data: URI; local paths and file:// URLs are refused "
             "(got '{start}').")
MSG_REMOTE = "The CPU stand-in fetches no remote images; send the image inline as a data: URI."
MSG_DATA = "image_url {index} is not a base64 data: URI of an image ({detail})."
MSG_NOT_MULTIMODAL = "This model was deployed without triton_config.multimodal in model.yaml; it reads no images."
MSG_TOO_MANY = "At most {limit} images per request; got {count}."
MSG_MARKERS = "The prompt has {markers} {marker} markers for {count} images."

# peft.py
# Upstream's texts (tests/data/upstream/trtllm-0a710573/llmapi.yaml, behaviour.errors).
MSG_PARTIAL = "lora_id, lora_name, and lora_path must all be provided together"
MSG_NO_PATH = "lora_path does not exist on the Triton server's filesystem: {path}"
MSG_SOURCE = "lora_ckpt_source must be one of ('hf', 'nemo'), got {source!r}"
# The stand-in's own refusals.
MSG_NOT_ENABLED = "This model was loaded without lora_config in model.yaml, so it takes no LoRA adapters."
MSG_NEMO = "The CPU stand-in reads Hugging Face PEFT adapters only (lora_ckpt_source 'hf')."
MSG_NOT_PEFT = "lora_path {path} is not a PEFT adapter folder (adapter_config.json and adapter_model.safetensors)."
MSG_RANK = "Adapter '{name}' has rank {rank}; lora_config.max_lora_rank is {max_rank}."
MSG_MODULE = "Adapter '{name}' changes {module}, which lora_config.lora_target_modules does not list."
MSG_SHAPE = "Adapter '{name}': {key} has shape {shape}, the model's layer wants {want}."

# requests.py
# Upstream's texts (tests/data/upstream/trtllm-0a710573/llmapi.yaml, behaviour.errors).
MSG_MISSING_TEXT = "text_input is missing from the request"
MSG_NOT_SCALAR = "Expected a scalar tensor for tensor {name}"
MSG_NOT_1D = "The current implementation only supports text_input being a 1D tensor."
# The stand-in's own.
MSG_BEAMS = "The CPU stand-in generates one sequence (best_of / beam_width 1); got {value}."
MSG_EMPTY = "The prompt is empty."
MSG_TOO_LONG = "The prompt has {tokens} tokens; this model takes at most {limit} (max_input_len)."
MSG_NO_ROOM = "The prompt has {tokens} tokens and leaves no room under max_seq_len ({limit})."
MSG_RANGE = "sampling_param_{name} must be {rule}, got {value}."
