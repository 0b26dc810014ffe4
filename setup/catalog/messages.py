"""User-facing texts of the build wizard, planner and runner, in one place."""

# Planner: one message per problem (all are collected before anything runs).
MSG_BAD_VERSION = "TensorRT-LLM version '{version}' is not a version number like 0.11 or 0.19.0."
MSG_UNKNOWN_FAMILY = "Unknown model family '{family}'; choose one of: {choices}."
MSG_FAMILY_TOO_NEW = "{family} needs TensorRT-LLM {min_version} or newer (chosen: {version})."
MSG_NO_CHECKPOINT = "Give the Hugging Face checkpoint folder."
MSG_MODEL_ID_NEMO = ("{family} takes a .nemo checkpoint file, which is not on the Hugging Face Hub as a model id: "
                     "give the file as the checkpoint instead of a model id.")
MSG_CHECKPOINT_MISSING = "Checkpoint {path} does not exist."
MSG_CHECKPOINT_NOT_DIR = "Checkpoint {path} is not a folder."
MSG_CHECKPOINT_NOT_FILE = "{family} takes a .nemo checkpoint file; {path} is not a file."
MSG_TOKENIZER_MISSING = "Tokenizer folder {path} does not exist."
MSG_VILA_PATH = "{family} needs a clone of the VILA repository (--vila-path)."
MSG_VILA_PATH_MISSING = "VILA repository {path} does not exist."
MSG_DTYPE = "{family} does not support dtype {dtype}; use {allowed}."
MSG_POSITIVE = "{name} must be at least 1, got {value}."
MSG_TP_HEADS = "Tensor parallelism {tp} does not divide the {heads} attention heads of {config}."
MSG_SEQ_LEN = "max_seq_len ({seq}) must be larger than max_input_len ({inp})."
MSG_INPUT_TOO_SHORT = ("max_input_len ({inp}) must cover the visual tokens: {tokens} per image x {images} "
                       "image(s) = {needed}.")
MSG_TOO_MANY_IMAGES = "max_num_images {images} is above what {family} takes per request ({limit})."
MSG_LORA_UNSUPPORTED = "{family} has no LoRA support; leave the LoRA folder empty."
MSG_LORA_MISSING = "LoRA folder {path} does not exist."
MSG_LORA_EMPTY = "LoRA folder {path} holds no adapter (no adapter_config.json in it or its subfolders)."
MSG_LORA_BAD_CONFIG = "Adapter {path}: adapter_config.json is not readable ({reason})."
MSG_LORA_RANK = "Adapter {name} has rank {rank}, above max_lora_rank {max_rank}."
MSG_LORA_CACHE_RANK = "lora_cache_max_adapter_size {size} is above max_lora_rank {max_rank}."
MSG_UNKNOWN_TRITON = "Unknown Triton parameter '{name}' (see setup/data/repo_parameters.yaml)."
MSG_KV_FRACTION = "kv_cache_free_gpu_mem_fraction must be above 0 and at most 1, got {value}."
MSG_TRITON_BATCH = "triton_max_batch_size {value} is above the engine's max_batch_size {engine}."
MSG_KV_REUSE_NO_PAGED = ("KV-cache reuse and chunked context need a paged KV cache, which {family} is built "
                         "without on TensorRT-LLM {version}.")
MSG_NOT_A_NUMBER = "{name} must be a whole number, got '{value}'."
MSG_UNKNOWN_KEYS = "Unknown keys in {where}: {keys}."
MSG_CONFIG_MISSING = "Config file {path} does not exist."
MSG_CONFIG_YAML = "Config file {path} is not valid YAML: {reason}"
MSG_CONFIG_MAPPING = "Config file {path} must hold a mapping at the top level."
MSG_NO_OUT = "Give the output folder."

# Planner: warnings shown with the plan (nothing blocks).
WARN_NOT_SERVED = "{note} Use instead: {instead} The plan stops after the engines."
WARN_TRITON_TOO_OLD = ("The templates serve {family} from backend {since}; with {version} the plan stops "
                       "after the engines. Use instead: TensorRT-LLM's examples/multimodal/run.py.")
WARN_TEMPLATE_MISSING = ("The repository template '{template}' is not in model_repo_templates yet, so the "
                         "'write repository' step will fail until it is added.")
WARN_OLD_TEMPLATES = ("This project's repository templates follow backend 0.19; check the written repository "
                      "against your backend {version}.")
WARN_TOKENS_BUDGET = "{family}: {tokens} tokens per image is a budget, not an exact count."
WARN_HEADS_UNKNOWN = "Could not read the attention head count from {config}; tensor parallelism not checked."
WARN_TOKENIZER = "{note}"

# Runner.
MSG_STEP_FAILED = "Step '{title}' failed with exit code {code}."
MSG_STEP_SAID = "{failed} {said}"  # the step's own last "error: ..." sentence after the exit code
MSG_STEP_NO_OUTPUT = "Step '{title}' finished but did not write {path}."
MSG_STEP_NOT_FOUND = "Step '{title}' cannot start: {program} was not found."
MSG_CANCELLED = "Cancelled during '{title}'; earlier steps' outputs are kept (run again to resume)."
MSG_SKIPPED = "Skipped '{title}': outputs exist and inputs are unchanged."
MSG_JOB_RUNNING = "A build is already running in {out}."
WARN_HOST_MEMORY = ("Host memory: about {need:.1f} GiB needed to convert a {ckpt:.1f} GiB checkpoint, "
                    "{free:.1f} GiB available.")
WARN_GPU_MISSING = "No NVIDIA GPU found (nvidia-smi is not on PATH): engine builds need one."
WARN_GPU_COUNT = "World size {world} needs {world} GPUs; {count} found."
WARN_GPU_MEMORY = ("GPU {index}: about {need:.1f} GiB needed per GPU for {ckpt:.1f} GiB of weights over "
                   "{world} GPU(s), {free:.1f} GiB free.")
WARN_DISK = "Disk: about {need:.1f} GiB needed in {path}, {free:.1f} GiB free."
WARN_TOOL_MISSING = "{what} not found: {path}."
ENGINE_STALE = "built with TensorRT-LLM {built}, installed {installed}: rebuild"
ENGINE_UNKNOWN = "TensorRT-LLM is not installed here; cannot tell whether it is current"
ENGINE_CURRENT = "current"
MSG_REPOSITORY_WOULD_FAIL = ("The Triton repository step would fail after the engines are built: {reason} Fix the "
                             "deployment parameters first.")
WARN_REFUSED = ("Not served on Triton by this project's templates: {reason} The plan builds the engines and stops "
                "there (no repository is written for {family}).")
WARN_CHECKPOINT_NOT_YET = ("Checkpoint {path} does not exist yet: this plan uses the shapes of the family's example "
                           "checkpoint {example} ({shapes}). Download the checkpoint before running; Run refuses "
                           "until it is there.")
WARN_CHECKPOINT_DOWNLOADED = ("The plan's first step downloads {model_id} into {path}; until then this plan uses the "
                              "shapes of the family's example checkpoint {example} ({shapes}).")
WARN_CHECKPOINT_NO_SHAPES = ("Checkpoint {path} does not exist yet and the catalogue has no shapes for {family}: "
                             "tensor parallelism is not checked against the attention heads. Download the "
                             "checkpoint before running; Run refuses until it is there.")

# llmapi_releases.py
MSG_RELEASE = "Triton llmapi repositories are written for TensorRT-LLM {choices}; got '{version}'."
WARN_RUNNER_HF_DIR = ("The checkpoint is a .nemo file; the runner reads its tokenizer from {folder}. Set tokenizer_dir to "
                      "the folder holding the tokenizer (tokenizer.model) if it is elsewhere.")
