"""Sentences the cpu_runtime.runner_standin package shows to people (errors, warnings, notes); other modules import them."""

# runner.py
MSG_LAYOUT = "engine_dir {path} must hold vision/ and llm/ (the late runner's layout)."
MSG_NO_PICTURE = "The {family} twin needs a picture: send an image{video}."
