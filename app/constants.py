"""Defaults, limits and user-facing texts of the app, in one place."""

DEFAULT_MODEL = "tensorrt_llm_bls"
SUPPORTED_MODELS = ("tensorrt_llm_bls", "ensemble")
DEFAULT_UI_PORT = 7860
DEFAULT_HOST = "127.0.0.1"
DEFAULT_CONCURRENCY = 64
STREAM_STALL_SECONDS = 60.0
SERVER_CHECK_TIMEOUT = 2.0
STATUS_REFRESH_SECONDS = 3.0
MAX_PROMPT_CHARS = 32_000
MAX_UPLOAD = "20mb"

# Sampling defaults and bounds: (default, min, max)
SAMPLING_LIMITS = {
    "max_tokens": (256, 1, 4096),
    "temperature": (0.7, 0.01, 2.0),
    "top_k": (0, 0, 1000),
    "top_p": (0.0, 0.0, 1.0),
    "repetition_penalty": (1.0, 0.5, 2.0),
    "seed": (0, 0, 2**63 - 1),
}

MSG_EMPTY_PROMPT = "Type a message first."
MSG_PROMPT_TOO_LONG = "The message is longer than {limit} characters; shorten it."
MSG_SERVER_WAITING = "Waiting for the Triton server at {url}..."
MSG_STOPPED = "(stopped)"
MSG_TEXT_ONLY = "This deployment is text-only: images are not sent. Remove the image or deploy a vision model."

CPU_DEMO_NOTE = (
    "CPU demo: a real Triton server runs SmolLM2-135M-Instruct on the CPU in the `tensorrt_llm` slot, "
    "standing in for a TensorRT-LLM engine; greedy decoding unless top-k or top-p is set."
)
