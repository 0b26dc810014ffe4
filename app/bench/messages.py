"""What app.bench says to people: its messages, in one place."""

# Benchmarks (app/bench*.py, app/web/pages/benchmark.py, app/web/pages/server.py).
MSG_BENCH_IMAGE_MISSING = "Image file {path} does not exist."
MSG_BENCH_INPUT_LEN_WITH_DATASET = "--input-len makes synthetic prompts; it cannot be combined with --dataset."
MSG_BENCH_JSON_DIR = "Cannot write {path}: its folder does not exist."
MSG_BENCH_UNREACHABLE = "The Triton server at {url} cannot be reached ({detail})."
MSG_BENCH_UNREACHABLE_API = "The API at {url} cannot be reached ({detail})."
MSG_BENCH_NO_MODELS = "The API at {url} lists no models yet."
MSG_BENCH_NOT_OPENAI = "{url} did not answer with an OpenAI model list; give the API's base URL (ending in /v1)."
MSG_BENCH_MODEL_NOT_READY = "Model '{model}' is not ready on the Triton server at {url} (is it in the repository?)."
MSG_BENCH_HUNG = "The reply stream hung: nothing new for {seconds:.0f} s."
MSG_BENCH_DATASET_UNREADABLE = "Dataset {path} cannot be read: {reason}"
MSG_BENCH_DATASET_EMPTY = "Dataset {path} holds no prompts (expected a JSON list or JSON lines)."
MSG_BENCH_DATASET_ITEM = "Dataset {path}, item {number}: no prompt text (give a string or one of: {keys})."
MSG_BENCH_STOPPED = "Not sent: the benchmark was stopped."

# sweep.py
MSG_NOT_LIVE = "The server at {url} cannot be reached: {detail}"
MSG_NOT_READY = "Model '{model}' is not ready on {url} yet."
