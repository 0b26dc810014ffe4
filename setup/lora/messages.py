"""User-facing sentences of LoRA training (setup/lora/train*.py, dataset.py), in one place: one per refusal."""

# Settings, checked before anything starts.
MSG_RANK = "Rank must be a whole number from 1 to {limit}, got {value}."
MSG_STEPS = "Steps must be a whole number from 1 to {limit}, got {value}."
MSG_MAX_LEN = "The sequence length must be a whole number from 16 to {limit} tokens, got {value}."
MSG_LEARNING_RATE = "The learning rate must be between {low:g} and {high:g}, got {value}."
MSG_THREADS = "Threads must be a whole number from 1 to {limit}, got {value}."
MSG_NO_TARGETS = "Pick at least one target module ({allowed})."
MSG_BAD_TARGETS = "Target module(s) {names} cannot be trained here; pick from {allowed}."
MSG_ALPHA = "LoRA alpha must be above 0, got {value}."

# The dataset.
MSG_DATASET_TOO_BIG = "The dataset {where} is larger than the {limit} limit; use fewer or shorter pairs."
MSG_DATASET_MISSING = "The dataset {where} does not exist or is not a file."
MSG_DATASET_UNREADABLE = "The dataset {where} could not be read: {reason}."
MSG_DATASET_NOT_TEXT = "The dataset {where} is not UTF-8 text; give a JSONL file (one JSON object per line)."
MSG_LINE_NOT_JSON = "Line {line} of {where} is not JSON ({reason}); each line must be one JSON object."
MSG_LINE_SHAPE = ('Line {line} of {where} needs "prompt" and "response" text, or "messages" (a list of '
                  '{{"role", "content"}} ending with an assistant message).')
MSG_PAIR_HALF = "Pair {row} has a prompt or a response but not both; fill in both or clear the row."
MSG_TOO_FEW_PAIRS = "The dataset holds {count} pair(s); training needs at least {limit}."
MSG_TOO_MANY_PAIRS = "The dataset holds {count} pairs; the limit is {limit} (every step trains on all of them)."
MSG_TOO_LONG = ("Pair {row} is {tokens} tokens long with the chat template, above the sequence length {limit}; "
                "shorten it or raise the sequence length.")

# The base model and the output folder.
MSG_BASE_MISSING = "The base model folder {path} does not exist or holds no config.json."
MSG_BASE_UNREADABLE = "The base model in {path} could not be loaded: {reason}."
MSG_NO_CHAT_TEMPLATE = "The tokenizer in {path} has no chat template, so pairs cannot be laid out as chats."
MSG_OUT_EXISTS = "{path} exists already; pick another name (or remove that adapter first)."
MSG_OUT_UNWRITABLE = "Could not write the adapter into {path}: {reason}."

# Running.
MSG_BUSY = "A training is running already; wait for it to finish or cancel it (one training at a time)."
MSG_CANCELLED = "Training cancelled at step {step} of {steps}; nothing was written."
MSG_TRAIN_FAILED = "Training stopped with an error at step {step} of {steps}: {reason}; nothing was written."
MSG_WHERE_CPU = "Training runs on this machine's CPU with {threads} thread(s), so serving keeps the other cores."
MSG_WHERE_GPU = "Training runs on GPU {index} ({name}) of this machine."
MSG_DONE = "Trained {name} in {seconds:.0f} s: loss {first:.3f} -> {last:.3f} over {steps} steps."

# train_cli.py
MSG_INTERRUPTED = "Interrupted; nothing was written."

# adapter_facts.py and audit.py: what a deployment applies of an adapter
MSG_AUDIT_NOT_JSON = "{path} is not valid JSON ({reason}); an adapter needs a readable adapter_config.json."
MSG_AUDIT_HEADER = "The weights in {path} could not be read as plain tensors ({reason})."
MSG_AUDIT_NO_WEIGHTS = "{folder} has neither adapter_model.safetensors nor adapter_model.bin."
MSG_AUDIT_PEFT_TYPE = ("This is a {kind} adapter; the servers this app fronts serve LoRA adapters only "
                       "(peft_type LORA).")
MSG_AUDIT_DORA = ("DoRA adapters (use_dora) are refused: their magnitude vectors must be normalised against the "
                  "base model's weights, which a PEFT folder does not hold, and the recorded backends take plain "
                  "LoRA rows only.")
MSG_AUDIT_RANK = "The adapter's rank {rank} is above the {server}'s max_lora_rank {max_rank}; it cannot be loaded."
MSG_AUDIT_LAYERS = ("The adapter was made for {base}: it has weights for layer {layer}, but {model} has {layers} "
                    "layers.")
MSG_AUDIT_SHAPE = ("The adapter was made for {base}: layer {layer} {module} maps {got_in} -> {got_out} features, but "
                   "{model}'s maps {want_in} -> {want_out}.")
MSG_AUDIT_VOCAB = ("The adapter was made for {base}: its embedding LoRA covers {got} tokens, but {model}'s vocabulary "
                   "has {want}.")
MSG_AUDIT_NOTHING_APPLIED = "The {server} would apply none of this adapter's weights."
MSG_AUDIT_SAVED = ("Whole modules saved with the adapter (modules_to_save: {names}) are not applied by the {server}; "
                   "replies use the base model's.")
MSG_AUDIT_BASE_NAME = ("The adapter names {base} as its base and the server serves {model}; the shapes match, so it "
                       "is applied, but it was trained on another checkpoint.")
MSG_AUDIT_DTYPE = "Stored as {dtype}; the server takes {target} (converted when sent)."
MSG_AUDIT_DROP_TOWER = "the vision tower and projector: LoRA is applied to the language model only"
MSG_AUDIT_DROP_EMBEDDING = "embedding layers: not applied by these servers"
MSG_AUDIT_DROP_MODULE = "the {server} applies LoRA to {modules} only"
MSG_AUDIT_DROP_OTHER = "outside the language model's layers: not applied"
MSG_AUDIT_ANY_SERVER = "server (language model only)"
MSG_AUDIT_SHAPES_UNCHECKED = ("Shapes not checked (hidden size, layers, vocabulary): {why}. An adapter made for another "
                              "base model is found out only by the server, at its first use.")
MSG_AUDIT_NO_SHAPES = "the {server} does not say its model's shapes"
MSG_AUDIT_NO_FOLDER = "{folder} is not a folder; give an adapter folder (adapter_config.json and its weights)."
