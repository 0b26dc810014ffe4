"""What app.build says to people: its messages, in one place."""

# engine.py
MSG_NO_JOB = "No build yet: check the plan, then press Run."
MSG_DEPLOY_NOT_SERVED = "Triton does not serve this family with these templates; nothing to write or launch."
MSG_STOPPING = "Stopping Triton…"
MSG_STOPPED = "Triton stopped."
MSG_NO_MODEL_ID = "No hub id for {family}: it builds from {example}. Give it as the checkpoint below."

# llmapi.py
MSG_STARTING = "Wrote {out}. Starting Triton on it (gRPC 127.0.0.1:{port}); the app chats with it by: {app}"
MSG_RUNNING = "A Triton server started from this page is already running or stopping; stop it first."

# serve.py
MSG_NOT_INSTALLED = ("Wrote {files}. trtllm-serve is not installed on this machine, so nothing was started: run "
                     "{script} where TensorRT-LLM {release} is installed, then point the app at {url}.")
MSG_STARTED = "Wrote {files}. trtllm-serve started (pid {pid}); its OpenAI API will be at {url}."
MSG_SERVE_RUNNING = "A trtllm-serve started from this page is already running; stop it first."

# plan_view.py
MSG_FIELD_NOT_A_NUMBER = "{field} must be a number, not “{value}”."
