"""Sentences the cpu_runtime.runner_standin package shows to people (errors, warnings, notes); other modules import them."""

# runner.py
MSG_LAYOUT = "engine_dir {path} must hold vision/ and llm/ (the 1.x runner's layout)."
MSG_NO_PICTURE = "The {family} twin needs a picture: send an image{video}."

# llm.py (ModelRunnerCpp's checks, [M])
MSG_STOPPING = "stopping_criteria is not supported in C++ session."
MSG_BEAMS = "The CPU twin's LLM runs one beam; num_beams was {beams}."
MSG_NO_END_ID = "end_id is required: the runner gives its tokenizer's end token."
MSG_TOO_LONG = ("The prompt ({length} tokens) plus max_new_tokens ({new}) exceeds the CPU engine's max_seq_len "
                "({limit}).")
