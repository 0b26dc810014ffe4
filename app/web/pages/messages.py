"""Sentences the app.web.pages package shows to people (errors, warnings, notes); other modules import them."""

# adapter_training.py
MSG_INTRO = ("Train a LoRA adapter on a few prompt/response pairs: upload a JSONL file (one "
             '`{{"prompt": ..., "response": ...}}` or chat `{{"messages": [...]}}` object per line) or type pairs in '
             "the table. {where} Limits: up to {pairs} pairs, {steps} steps, {max_len} tokens per pair, rank "
             "{rank}. The adapter goes where adapters added above go (the folder the tab's first line names: that of the "
             "server this browser chose in the chat) and is offered in Chat and Compare when it is done.")
MSG_UPLOAD_ONLY = "The dataset must be uploaded with the request (gradio_client.handle_file(path))."
MSG_NO_BASE = "Give the base model folder (a Hugging Face checkpoint with its tokenizer) in the workspace."
MSG_BASE_INFO = ("Empty: the checkpoint of the server this browser chose (shown greyed). Another folder must lie in "
                 "the workspace.")
MSG_BASE_NONE = "a Hugging Face checkpoint folder in the workspace"
MSG_PROGRESS = "Step {step} of {steps} · loss {loss} · {seconds:.0f} s"
MSG_STARTING = "Starting: loading the base model ({pairs} pairs, {steps} steps)…"
MSG_REGISTERED = "{summary} Written to {folder}; server: {server}. {note}"

# server.py: the adapter-cache section of the server the browser session chose
MSG_CACHE_SERVER_FIGURES = (
    "**Adapters on {server}**, as its own metrics say ({source}). In use now (requests running or waiting): "
    "**{in_use}** · in use in the last {minutes} minutes: {recent} · adapters a batch may use at once (max loras): "
    "{max_loras}.  \nNewest state {age} (the server keeps {states}, one per set of adapters seen). The server says "
    "which adapters its requests use, not which it keeps loaded.")
MSG_CACHE_NO_FIGURES = "**Adapters in the cache of {server}**: {note}"
MSG_CACHE_NONE = "none"
MSG_CACHE_AGE = "{seconds:.0f} s ago"
MSG_CACHE_AGE_UNKNOWN = "at an unknown time"
