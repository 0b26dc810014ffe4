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
