"""Messages of the InternLM-XComposer2 repository checks and the family-driven `repo --family` path."""

MSG_XC2_NEEDS = "The InternLM-XComposer2 layout needs {name} ({why})."
MSG_XC2_PLAN_IS_DIR = ("vit_plan_dir is the visual engine file, not its folder: {path} is a folder{hint}.")
MSG_XC2_PLAN_MISSING = "vit_plan_dir {path} does not exist (build the visual engine first)."
MSG_XC2_MARKER = "image_marker is '{given}', but InternLM-XComposer2 prompts mark the image with '<ImageHere>'."
MSG_XC2_TOKENS = "tokens_per_image is {given}, but InternLM-XComposer2 has {tokens} visual tokens per image (35 x 35)."
MSG_XC2_TABLE = ("The engine in {engine} was built with max_prompt_embedding_table_size (--max_multimodal_len) {table}, "
                 "but max_batch_size {batch} x {tokens} visual tokens x 1 image = {expected}. Rebuild the engine with "
                 "--max_multimodal_len {expected}.")
MSG_XC2_NO_LORA = ("The engine in {engine} was built without the LoRA plugin; InternLM-XComposer2's Partial LoRA needs "
                   "--lora_plugin float16 --lora_dir <adapter folder> --max_lora_rank {rank}.")
MSG_XC2_LORA_RANK = ("The engine in {engine} takes LoRA rank up to {engine_rank}; the Partial-LoRA adapter has rank "
                     "{rank}. Rebuild with --max_lora_rank {rank}.")
MSG_XC2_CACHE_RANK = ("lora_cache_max_adapter_size {given} is below the Partial-LoRA rank {rank}: the adapter would not "
                      "fit the LoRA cache; set it to {rank}.")
MSG_XC2_NOT_NUMBER = "{name} must be a whole number, got '{value}'."
MSG_FAMILY_UNKNOWN = "Unknown family '{family}'; known: {known}."
MSG_FAMILY_NOT_SERVED = "{family} has no Triton repository written by this app: {note}"
MSG_XC2_CPU_TOKENS = ("tokens_per_image is {given}, but the CPU encoder in {encoder} makes {tokens} rows per image; "
                      "write them equal.")
MSG_XC2_CPU_NOT_ENCODER = "vit_plan_dir {path} is not a CPU encoder's config.json (the twin runs that encoder): {detail}."
MSG_XC2_CPU_PARTIAL = ("The CPU engine in {engine} applies LoRA at every row; the InternLM-XComposer2 twin needs "
                       "pretrained_config.has_partial_lora_mask true (Partial LoRA).")
MSG_SHARED_MISSING = "Template '{template}' shares {file} with its {model} model, but {path} does not exist."
MSG_RUNTIME_UNKNOWN = ("Template '{template}' gives its {model} model the cpu_runtime part(s) {parts}, which do not "
                       "exist; the parts are: {known}.")

# llmapi.py
MSG_ENGINE = "engine must be one of {choices}, got '{value}'."
MSG_POSITIVE = "{name} must be a whole number of at least 1, got {value}."
MSG_FRACTION = "kv_cache_fraction must be above 0 and at most 1, got {value}."
MSG_NO_MODEL = "Give the model to load (a checkpoint folder the server reads, or a Hugging Face name)."
MSG_NO_LORA = ("TensorRT-LLM {release}'s llmapi model takes no adapter inputs (lora_id, lora_name, lora_path came "
               "in 2026); pick 1.3 or leave LoRA out.")
MSG_NO_IMAGES = "TensorRT-LLM {release}'s llmapi model takes no images (image_url came in 2026); pick 1.3."
MSG_NO_INSTANCES = "TensorRT-LLM {release}'s llmapi model runs one instance (gpu_device_ids came later); pick 1.3."
MSG_GPU_IDS = ("gpu_device_ids must list one group of GPU ids per instance, ';' between groups and ',' inside "
               "(e.g. \"0,1;2,3\"), with tp x pp = {width} ids per group and no id twice; got '{value}' for "
               "{instances} instance(s).")
MSG_RESERVED = "'{key}' is written from the form's own fields; remove it from the extra LLM arguments."
MSG_CODE = ("The llmapi model's Python files ({files}) are TensorRT-LLM's own code: give the folder that holds them "
            "or a checkout of {repo} at the release (they live in {path}); not found under '{where}'.")
MSG_EXISTS = "{out} already exists; pass --force to replace it."
MSG_CHECKOUT_ONLY = ("TensorRT-LLM {release}'s llmapi tensors are not recorded here, so its repository copies "
                     "config.pbtxt from a checkout of the release; the CPU stand-in follows {recorded}.")
MSG_CHECKOUT_CONFIG = ("{path} is not an llmapi config with text_input and text_output; give a checkout of "
                       "NVIDIA/TensorRT-LLM at release {release}.")

# multimodal_checks.py
MSG_NEEDS = "The multimodal layout needs {name} ({why})."
MSG_CONFIG_UNREADABLE = "Cannot read {path}: {detail}"
MSG_TABLE_SIZE = (
    "The engine in {engine} was built with max_prompt_embedding_table_size (--max_multimodal_len) {table}, "
    "but max_batch_size {batch} x {tokens} visual tokens per image ({family}) x max_num_images {images} = "
    "{expected}. Rebuild the engine with --max_multimodal_len {expected}"
    "{alternative}."
)
MSG_FAMILY_MISMATCH = ("multimodal_family is '{given}', but the visual engine in {path} reports model_type "
                       "'{model_type}' (family '{found}').")
MSG_SERVER_PROCESSOR = ("{family} takes {kind}, which needs the Hugging Face processor on the server; this "
                        "template's preprocessing does not include it. Use a family that takes image_input.")
MSG_MAX_IMAGES = "max_num_images {images} is above what {family} takes per request ({limit})."
MSG_MARKER = ("image_marker is '{given}', but {family} marks images with '{marker}'; leave image_marker unset "
              "or set it to '{marker}'.")
MSG_NO_TOKENS = "{family} has no fixed visual token count, so it cannot use a fixed prompt table."
MSG_VISUAL_ROWS = (
    "The visual engine in {path} makes {rows} prompt-table rows per image ({source}), but {family} has {tokens} "
    "visual tokens per image, which preprocessing places as fake ids and the LLM engine's prompt table is sized for: "
    "every image would be misaligned. Another model size of the family has another token count; build the visual "
    "engine from the checkpoint the family file records ({tokens} rows), or serve this one with its own family entry."
)
MSG_RUNNER_NEEDS = "The runner layout needs {name} ({why})."
MSG_RUNNER_NO_TYPE = "{path} records no builder_config.model_type; is {folder} a visual engine folder?"
MSG_RUNNER_FAMILY = ("multimodal_family is '{given}', but the visual engine in {folder} reports model_type '{model_type}'"
                     ", which is {found}.")
MSG_RUNNER_NO_LLM = "llm_engine_dir {folder} has no config.json, nor decoder/config.json (build the LLM engine first)."
MSG_RUNNER_NO_HF = "hf_model_dir {folder} is not a folder (the runner reads its tokenizer and processor there)."
MSG_RUNNER_SETTINGS = "{name} must be name=value pairs separated by ';' (e.g. session=python), got '{given}'."
MSG_RUNNER_ERAS = "runner_eras names {unknown}; the runner eras this template serves: {known} (runner_eras.yaml)."
MSG_RUNNER_FAMILY_NEEDS = ("{family} needs {name}={wanted} (its family file: {why}); this deployment has "
                           "{name}={given}.")
MSG_RUNNER_REQUIRED = ("runner_settings sets {name}={given}, but the family requires {name}={wanted} "
                       "(runner_required); leave {name} out of runner_settings.")
