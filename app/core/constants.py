"""Defaults and limits the app's packages share (their sentences are in app/core/messages.py)."""

DEFAULT_MODEL = "tensorrt_llm_bls"
SUPPORTED_MODELS = ("tensorrt_llm_bls", "ensemble")
DEFAULT_UI_PORT = 7860
DEFAULT_HOST = "127.0.0.1"
DEFAULT_CONCURRENCY = 256  # replies streamed at once when the served model's batch is smaller or unknown
STREAM_STALL_SECONDS = 60.0
SERVER_CHECK_TIMEOUT = 2.0
STATUS_REFRESH_SECONDS = 3.0
MAX_PROMPT_CHARS = 32_000
# The whole conversation a request may send (every message, the system prompt): bounded before any template,
# tokenizer or server sees it, so one request cannot make the server's preprocessing grow without end.
MAX_CONVERSATION_CHARS = 100_000
MAX_CONVERSATION_MESSAGES = 1_000
MAX_UPLOAD = "20mb"


# Which earlier turns each reply is sent (ContextPolicy); "history" is the saved conversations only
CONTEXT_MODES = {
    "same adapter": "Each adapter sees only the turns it answered (plus your new message), so styles do not leak "
                    "between adapters through the conversation.",
    "whole conversation": "Every reply sees the whole conversation, whichever adapter wrote the earlier replies.",
}
MAX_COMPARE_ADAPTERS = 3
LLMAPI_MODEL = "tensorrt_llm"  # the llmapi model's name in upstream's layout and in the demo

CPU_DEMO_NOTE = (
    "CPU demo: a real Triton server runs SmolLM2-135M-Instruct on the CPU in the `tensorrt_llm` slot, "
    "standing in for a TensorRT-LLM engine; greedy decoding unless top-k or top-p is set."
)

# Image intake (app/vision/images.py): formats, limits and the message for each refusal.
IMAGE_FORMATS = {"PNG": "PNG", "JPEG": "JPEG", "WEBP": "WebP", "BMP": "BMP", "GIF": "GIF"}
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 40_000_000  # a 12-megapixel photo passes; larger is refused before decoding
IMAGE_BACKGROUND = (255, 255, 255)  # transparent areas are composited onto white


# Video intake (app/vision/video.py): checked from the container's header before frames are decoded.
VIDEO_FORMATS = ("MP4", "WebM", "GIF")
MAX_VIDEO_BYTES = 20 * 1024 * 1024  # the same as an image: the upload limit (MAX_UPLOAD) binds anyway
MAX_VIDEO_SECONDS = 120.0
MAX_VIDEO_FRAMES = 3_600  # frames in the file (a minute at 60 fps); only the sampled ones are kept
MAX_VIDEO_FRAME_PIXELS = 1920 * 1080
MAX_SAMPLED_FRAMES = 32  # TensorRT-LLM's run.py takes --video_num_frames up to 32
DEFAULT_VIDEO_FRAMES = 8  # frames sampled for a family whose file names no frame count (the CPU twins describe each)
GIF_DEFAULT_DELAY_MS = 100  # a GIF frame delay under 20 ms plays at 100 ms in browsers; counted so here

# PDF intake (app/vision/documents.py): pages rendered to images with pdfium.
MAX_PDF_BYTES = 20 * 1024 * 1024
MAX_PDF_PAGES = 8  # pages rendered for one message; a longer document needs a page range
PDF_RENDER_DPI = 144.0
MAX_PDF_PAGE_PIXELS = 12_000_000  # a larger page is rendered at a lower resolution to fit
CPU_OCR_NOTE = (
    "Images on the CPU demo: the stand-in vision encoder describes each image in words (an ImageNet classifier's "
    "labels, faces, the main colours and simple shapes, hints of the setting, and the text it reads with the OCR "
    "models inside rapidocr-onnxruntime) and hands the LLM its own embeddings of that description; \"What the model "
    "saw\" under a reply shows it. It does not see the picture itself, so details beyond that description are "
    "out of its reach. GPU deployments run the model's own vision tower (LLaVA, BLIP-2, VILA) in the "
    "multimodal_encoders slot."
)


# OpenAI-compatible HTTP API (app/api/openai_routes.py, app/api/openai_schema.py).
API_MAX_BODY_BYTES = 64 * 1024 * 1024  # a few base64 images at MAX_IMAGE_BYTES each
API_MAX_STOP_WORDS = 4
API_MAX_STOP_CHARS = 200
API_MAX_MODEL_CHARS = 256

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
# Gradio's queue looks for work every 1 ms and for progress every 10 ms, busy or not (about 8 % of a core for an app
# nobody uses). The app keeps that pace while anything waits or runs and for QUEUE_QUIET_AFTER_SECONDS after each new
# job; after that it looks at the slower pace, so the first job after a quiet spell waits at most
# QUEUE_QUIET_POLL_SECONDS more to start.
QUEUE_QUIET_AFTER_SECONDS = 2.0
QUEUE_QUIET_POLL_SECONDS = 0.02
QUEUE_QUIET_PROGRESS_SECONDS = 0.1
UNREAD_JOB_GRACE_SECONDS = 10.0  # a Gradio job nobody reads the result of is cancelled after this long


# The runner topology sends the whole reply at once where its runner cannot stream (encoder-decoder LLMs, mllama,
# eras before the late one), and even a streamed reply is silent through the runner's preprocessing: its silence can
# last the whole generation, so its stall limit is this rather than STREAM_STALL_SECONDS.
WHOLE_REPLY_STALL_SECONDS = 600.0
