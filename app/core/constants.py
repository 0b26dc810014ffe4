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
# The whole conversation a request may send (every message, the system prompt): bounded before any template,
# tokenizer or server sees it, so one request cannot make the server's preprocessing grow without end.
MAX_CONVERSATION_CHARS = 100_000
MAX_CONVERSATION_MESSAGES = 1_000
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
MSG_CONVERSATION_TOO_LONG = ("The conversation is {chars:,} characters; this app takes at most {limit:,} characters "
                             "per request. Start a new chat or shorten it.")
MSG_CONVERSATION_TOO_MANY_MESSAGES = ("The conversation has {count:,} messages; this app takes at most {limit:,} "
                                      "per request. Start a new chat or shorten it.")
MSG_CONVERSATION_TOO_MANY_TOKENS = ("The conversation is {tokens:,} tokens; this deployment takes at most {limit:,} "
                                    "input tokens. Start a new chat or shorten it.")
MSG_PROMPT_TOO_LONG = "The message is longer than {limit} characters; shorten it."
MSG_SERVER_WAITING = "Waiting for the server at {url}..."
MSG_STOPPED = "(stopped)"
MSG_NO_LORA = ("Model '{model}' of this deployment takes no LoRA inputs, so adapter '{adapter}' cannot be applied. "
               "Pick \"base model\" or deploy tensorrt_llm_bls / an ensemble with LoRA inputs.")
MSG_UNKNOWN_ADAPTER = "There is no adapter named '{adapter}'. Known: {known}."
ADAPTER_TAG = "\n\n*adapter: {adapter}*"  # appended to each reply so the history shows who produced it
REPLY_FIGURES = '\n\n<small class="reply-figures">{figures}</small>'  # a finished reply's figures, before the tag
# The footer of a reply: its figures line and its adapter tag, each optional (removed before the model sees it)
ADAPTER_TAG_PATTERN = r'(?:\n\n<small class="reply-figures">[^<\n]*</small>)?(?:\n\n\*adapter: (?P<adapter>[^*\n]+)\*)?$'
HISTORY_MODES = {
    "same adapter": "Each adapter sees only the turns it answered (plus your new message), so styles do not leak "
                    "between adapters through the conversation.",
    "whole conversation": "Every reply sees the whole conversation, whichever adapter wrote the earlier replies.",
}
MAX_COMPARE_ADAPTERS = 3
MSG_TEXT_ONLY = "This deployment is text-only: images are not sent. Remove the image or deploy a vision model."

CPU_DEMO_NOTE = (
    "CPU demo: a real Triton server runs SmolLM2-135M-Instruct on the CPU in the `tensorrt_llm` slot, "
    "standing in for a TensorRT-LLM engine; greedy decoding unless top-k or top-p is set."
)

# Image intake (app/vision/images.py): formats, limits and the message for each refusal.
IMAGE_FORMATS = {"PNG": "PNG", "JPEG": "JPEG", "WEBP": "WebP", "BMP": "BMP", "GIF": "GIF"}
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 40_000_000  # a 12-megapixel photo passes; larger is refused before decoding
IMAGE_BACKGROUND = (255, 255, 255)  # transparent areas are composited onto white

MSG_IMAGE_EMPTY = "{name} is empty (0 bytes)."
MSG_IMAGE_TOO_LARGE_BYTES = "{name} is {size_mb:.1f} MB; images may be at most {limit_mb:.0f} MB."
MSG_IMAGE_NOT_AN_IMAGE = "{name} is not an image. Upload a PNG, JPEG, WebP, BMP or GIF file."
MSG_IMAGE_UNSUPPORTED_FORMAT = "{name} is a {format} image; upload a PNG, JPEG, WebP, BMP or GIF file instead."
MSG_IMAGE_TOO_MANY_PIXELS = (
    "{name} is {width} x {height} pixels ({megapixels:.0f} megapixels); images may have at most "
    "{limit_mp:.0f} megapixels. Scale it down and upload it again."
)
MSG_IMAGE_BOMB = (
    "{name} declares far more pixels than an image may have (at most {limit_mp:.0f} megapixels); "
    "it was not decoded."
)
MSG_IMAGE_TRUNCATED = "{name} is truncated or damaged and cannot be read completely. Upload the complete file."
MSG_IMAGE_UNREADABLE = "{name} could not be decoded ({detail})."
MSG_TOO_MANY_IMAGES = "This deployment takes at most {limit} image(s) per message; {count} were attached."
MSG_IMAGE_NO_TEXT_PROMPT = "Add a question or instruction to go with the image."
MSG_UNKNOWN_FAMILY = "The deployment names image family '{family}', which this app does not know."
MSG_IMAGE_INPUT_UNSUPPORTED = (
    "The deployment takes images as {kind}, which this app cannot send yet (it sends image_input tensors)."
)
CPU_OCR_NOTE = (
    "Images on the CPU demo: the stand-in vision encoder reads the text in each image (OCR with the models "
    "inside rapidocr-onnxruntime) and hands the LLM its own embeddings of that text, so it answers questions "
    "about signs, screenshots and documents but does not see shapes or colours. GPU deployments run the "
    "model's own vision tower (LLaVA, BLIP-2, VILA) in the multimodal_encoders slot."
)

# Benchmarks (app/bench*.py, app/web/pages/benchmark.py, app/web/pages/server.py).
MSG_BENCH_IMAGE_MISSING = "Image file {path} does not exist."
MSG_BENCH_INPUT_LEN_WITH_DATASET = "--input-len makes synthetic prompts; it cannot be combined with --dataset."
MSG_BENCH_JSON_DIR = "Cannot write {path}: its folder does not exist."
MSG_BENCH_UNREACHABLE = "The Triton server at {url} cannot be reached ({detail})."
MSG_BENCH_UNREACHABLE_API = "The API at {url} cannot be reached ({detail})."
MSG_BENCH_NOT_OPENAI = "{url} did not answer with an OpenAI model list; give the API's base URL (ending in /v1)."
MSG_BENCH_MODEL_NOT_READY = "Model '{model}' is not ready on the Triton server at {url} (is it in the repository?)."
MSG_BENCH_HUNG = "The reply stream hung: nothing new for {seconds:.0f} s."
MSG_BENCH_DATASET_UNREADABLE = "Dataset {path} cannot be read: {reason}"
MSG_BENCH_DATASET_EMPTY = "Dataset {path} holds no prompts (expected a JSON list or JSON lines)."
MSG_BENCH_DATASET_ITEM = "Dataset {path}, item {number}: no prompt text (give a string or one of: {keys})."
MSG_BENCH_BUSY = "A benchmark is already running; wait for it to finish."
MSG_BENCH_STOPPED = "Not sent: the benchmark was stopped."
MSG_BENCH_STOPPED_AT = ("Stopped. Concurrency {level} was cut short and is not shown; {done} level(s) finished "
                        "before it.")
MSG_BENCH_NOTHING_TO_STOP = "No benchmark is running."
MSG_BENCH_NO_LEVELS = "Choose at least one concurrency level."
MSG_METRICS_UNREACHABLE = "Triton's metrics at {url} cannot be read ({detail})."
MSG_METRICS_NOT_SET = "No metrics address is configured (start the app with --demo, or give the metrics URL)."
MSG_INVALID_TEXT = (
    "The {field} holds a character that is not valid Unicode text (a lone surrogate at position {position}); "
    "remove it and send again."
)
MSG_NOT_A_NUMBER_FIELD = "{name} must be a number, got {value!r}."
MSG_NOT_TEXT = "The message must be text, got {kind}."

# OpenAI-compatible HTTP API (app/api/openai_routes.py, app/api/openai_schema.py).
API_MAX_BODY_BYTES = 64 * 1024 * 1024  # a few base64 images at MAX_IMAGE_BYTES each
API_MAX_STOP_WORDS = 4
MSG_API_NOT_AN_OBJECT = "The request body must be a JSON object in OpenAI's chat completions format (model, messages, ...)."
MSG_API_BAD_JSON = "The request body is not valid JSON ({detail})."
MSG_API_BODY_TOO_LARGE = "The request body is larger than {limit_mb:.0f} MB."
MSG_API_NO_MESSAGES = "messages must be a non-empty list of {role, content} objects."
MSG_API_BAD_ROLE = "messages[{index}].role must be system, user or assistant, got {role!r}."
MSG_API_BAD_CONTENT = "messages[{index}].content must be text or a list of text and image_url parts."
MSG_API_BAD_PART = "messages[{index}].content[{part}] is a {kind!r} part; only text and image_url parts are read."
MSG_API_REMOTE_IMAGE = ("messages[{index}]: send images inline as data:image/...;base64,... URLs; "
                        "the app does not fetch remote files.")
MSG_API_BAD_BASE64 = "messages[{index}]: the image's data URL does not hold valid base64."
MSG_API_LAST_NOT_USER = "The last message must be the user's (role 'user')."
MSG_API_N = "n must be 1: this app returns one choice per request."
MSG_API_PENALTY = "{name} is not supported by this deployment; use repetition_penalty (0.5 to 2.0) instead."
MSG_API_STOP = ("stop must be a non-empty string or a list of at most {limit} non-empty strings, "
                "each at most {chars} characters long.")
API_MAX_STOP_CHARS = 200
API_MAX_MODEL_CHARS = 256
MSG_API_MODEL_NAME = ("model must be the base model's or an adapter's name (see GET /v1/models), "
                      "at most {limit} characters long.")
MSG_API_BOOL = "{name} must be true or false."
MSG_API_MIN_TOKENS = "min_tokens must be a whole number from 0 to max_tokens ({limit}), got {value!r}."
MSG_API_STREAM_OPTIONS = "stream_options must be an object such as {\"include_usage\": true}."
MSG_API_UNAUTHORIZED = "This app requires a login: send Authorization: Bearer USER:PASSWORD (or HTTP Basic)."
MSG_API_BUSY = "The app is streaming its limit of {limit} replies at once (--concurrency); try again shortly."
MSG_API_CONTENT_TYPE = ("Send the request body as JSON with the header Content-Type: application/json "
                        "(this request said {content_type!r}).")
MSG_API_TOO_DEEP = "The request body nests JSON deeper than {limit} levels; a chat request needs only a few."
MSG_API_INTERNAL = "The app failed while answering ({detail}); the error is in the app's log."

# The web server's guard (app/api/http_guard.py): which hosts and pages it answers, request bodies, logins.
MAX_REQUEST_BODY_BYTES = 2 * 1024 * 1024  # every route without its own limit (queue/join, call/*, login, ...)
UPLOAD_FILES_PER_REQUEST = 4  # /gradio_api/upload takes this many files of --max-file-size in one request
LARGE_BODY_BYTES = 2 * 1024 * 1024  # bodies above this size hold one of LARGE_BODY_SLOTS while they arrive
LARGE_BODY_SLOTS = 8
BODY_STALL_SECONDS = 30.0  # a request body that sends nothing for this long is answered 408
MAX_JSON_DEPTH = 64
LOGIN_FAILURES_ALLOWED = 5  # failed logins per client address within LOGIN_WINDOW_SECONDS, then 429
LOGIN_WINDOW_SECONDS = 60.0
QUEUE_SIZE_PER_SLOT = 4  # Gradio's queue holds at most concurrency x this many waiting jobs
UNREAD_JOB_GRACE_SECONDS = 10.0  # a Gradio job nobody reads the result of is cancelled after this long

MSG_GUARD_NO_HOST = "The request has no Host header; this app answers only requests that name it."
MSG_GUARD_BAD_HOST = ("This app does not answer to the host name {host!r}. It answers to {allowed}; start it with "
                      "--allowed-hosts {name} to add that name.")
MSG_GUARD_BAD_ORIGIN = ("Requests from pages on {origin} are refused: this app only answers its own pages (host "
                        "names {allowed}). Start it with --allowed-hosts to add a host name.")
MSG_GUARD_BODY_TOO_LARGE = "The request body is larger than {limit_mb} MB."
MSG_GUARD_BODY_TOO_LARGE_KB = "The request body is larger than {limit_kb} KB."
MSG_GUARD_BODY_TIMEOUT = ("The request body stopped arriving: nothing came for {seconds:g} s, so the app closed "
                          "the connection. Send the whole body without pauses.")
MSG_GUARD_BUSY = ("The app is receiving its limit of {limit} large requests at once; try again in a moment.")
MSG_GUARD_LOGINS = ("Too many failed logins from {client}: at most {limit} in {window:.0f} s. "
                    "Try again in {wait} s.")
MSG_JOB_UNREAD = ("Nobody read this job's result within {seconds:.0f} s of submitting it, so it was cancelled. "
                  "Read GET /gradio_api/call/<api>/<event_id> right after the POST (gradio_client does).")
