"""Sentences the app.web.pages package shows to people (errors, warnings, notes); other modules import them."""

# adapter_training.py
MSG_INTRO = ("Train a LoRA adapter on a few prompt/response pairs: upload a JSONL file (one "
             '`{{"prompt": ..., "response": ...}}` or chat `{{"messages": [...]}}` object per line) or type pairs in '
             "the table. {where} Limits: up to {pairs} pairs, {steps} steps, {max_len} tokens per pair, rank "
             "{rank}. The adapter goes where adapters added above go (the folder the tab's first line names: that of the "
             "server this browser chose in the chat) and is offered in Chat and Compare when it is done.")
MSG_UPLOAD_ONLY = "The dataset must be uploaded with the request (gradio_client.handle_file(path))."
MSG_NO_BASE = "Give the base model folder (a Hugging Face checkpoint with its tokenizer) in the workspace."
MSG_PROGRESS = "Step {step} of {steps} · loss {loss} · {seconds:.0f} s"
MSG_STARTING = "Starting: loading the base model ({pairs} pairs, {steps} steps)…"
MSG_REGISTERED = "{summary} Written to {folder}; server: {server}. {note}"
