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
