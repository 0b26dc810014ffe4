"""Plain sentences of the deployments package."""

MSG_UNKNOWN_ADAPTER = "There is no adapter named '{adapter}'. Known: {known}."
MSG_NO_LORA = ("Model '{model}' of this deployment takes no LoRA inputs, so adapter '{adapter}' cannot be applied. "
               "Pick the base model or deploy tensorrt_llm_bls / an ensemble with LoRA inputs.")
MSG_IMAGE_REQUIRED = ("{family} answers about one image per message: attach an image (follow-up questions are "
                      "about the conversation's latest image; this deployment takes no text-only conversations).")
MSG_IMAGE_MARKERS = ("The prompt must hold the image marker '{marker}' exactly once; it has {count} (the system "
                     "prompt may not contain it).")
MSG_TRITON_SENDS_ON_USE = "The first message with it sends its weights to the server's LoRA cache."
MSG_TOO_MANY_IMAGES = "This app sends at most {limit} images with one message, got {count}."

# The four deployment kinds, as the status line and the server list name them (one folder each, connect.py picks)
ENGINE_KIND = "Triton engine topology"
LLMAPI_KIND = "Triton llmapi (TensorRT-LLM 1.x)"
RUNNER_KIND = "Triton runner topology (TensorRT-LLM's MultimodalModelRunner)"
OPENAI_KIND = "OpenAI-compatible server"

# OpenAI-compatible servers
MSG_OPENAI_UNREACHABLE = "The server at {url} cannot be reached ({detail})."
MSG_OPENAI_NOT_OPENAI = "{url} does not answer like an OpenAI-compatible API (no model list at /v1/models)."
MSG_OPENAI_NO_MODEL = "The server at {url} lists no model named '{model}'; it serves: {known}."
MSG_OPENAI_EMPTY = "The server at {url} lists no models yet."
MSG_OPENAI_KEY = "The server refused the API key ({status}); check --api-key-file."
MSG_OPENAI_BUSY = "The server is busy ({status}); try again in a moment."
MSG_OPENAI_REFUSED = "The server refused the request: {detail}"
MSG_OPENAI_FAILED = "The server failed to answer ({status}): {detail}"
MSG_OPENAI_UNKNOWN_MODEL = "The server does not serve '{model}': {detail}"
MSG_OPENAI_TOO_LONG = "The conversation is too long for this server; clear it and start again. The server said: {detail}"
MSG_OPENAI_TEXT_ONLY = "The served model takes no images: {detail}"
MSG_OPENAI_CUT = "The server closed the reply before it finished."
MSG_OPENAI_STALLED = "No reply from the server for {seconds:.0f} s; the request was cancelled."
MSG_LOADED_AT_RUNTIME = "Registered with the server at run time (/v1/load_lora_adapter)."
MSG_NO_RUNTIME_LOADING = ("The server does not load adapters at run time ({detail}); start it with this adapter "
                          "(for vLLM: --lora-modules {name}=PATH, or VLLM_ALLOW_RUNTIME_LORA_UPDATING=True).")
MSG_SENT_AS_LORA_REQUEST = "Sent as lora_request with its path; the server must read {path}."
MSG_API_KEY_FILE = "Cannot read the API key file {path}: {detail}."

# Triton llmapi model (TensorRT-LLM 1.x)
MSG_LLMAPI_NO_LORA = ("Model '{model}' of this deployment declares no lora_id/lora_name/lora_path inputs (llmapi "
                      "before 2026), so adapter '{adapter}' cannot be applied; pick the base model.")
MSG_LLMAPI_NOT_PEFT = ("Adapter '{adapter}' is a converted .npy pair; the llmapi model reads Hugging Face PEFT folders "
                       "by path. Add the PEFT folder instead.")
MSG_LLMAPI_UNSEEN = ("The Triton server cannot read adapter '{adapter}' at {path}: the llmapi model loads adapters "
                     "from its own filesystem. Put the adapters folder on a mount the server sees and name it with "
                     "--server-adapters-dir.")
MSG_LLMAPI_SHARED = "Sent by path with each message; the server reads {path}."
MSG_LLMAPI_COPY_FAILED = "Could not copy adapter '{adapter}' into the server's adapters folder {folder}: {detail}."

MSG_CONVERSATION_TOO_MANY_TOKENS = ("The conversation is {tokens:,} tokens; this deployment takes at most {limit:,} "
                                    "input tokens. Start a new chat or shorten it.")
CONTINUE_TURN = "Continue your last reply from where it stopped, without repeating it."  # where no extra does it

# model_lora.py
MSG_OWN_ADAPTER_ONLY = ("{family} applies its own adapter ({own}) to every reply, and this deployment cannot "
                        "combine it with another one, so adapter '{adapter}' cannot be used here. Pick the base "
                        "model (which keeps {own} on).")
MSG_OWN_ADAPTER_MISSING = ("{family} needs its own adapter '{own}' on every request, but the adapters folder has no "
                           "adapter of that name. Add it on the Adapters tab (or start with another --model-adapter).")
MSG_RUNNER_IMAGES = "{family} takes {limit} picture(s) per message through the runner; this message has {count}."
MSG_RUNNER_PENALTIES = ("TensorRT-LLM's runner reads no presence or frequency penalty: repetition penalty {value} "
                        "sent in their place")
MSG_RUNNER_NO_LORA = ("Model '{model}' (the runner topology) takes no adapter: TensorRT-LLM's runner for this family "
                      "has no LoRA task input.")
MSG_RUNNER_APP_PROMPT = "prompt written by the app: '{template}' ({family}'s runner uses the text as sent)"
MSG_RUNNER_NO_QUESTION = " - the question is not read"
MSG_RUNNER_FAMILY_FORMAT = "{family} format"  # the figures line's short format note
MSG_RUNNER_PROMPT_FORMAT = "Prompt format: {format}"  # the rest: the reply's folded "What the model saw"
MSG_RUNNER_FINISHED = "Finished: {reason}"
MSG_RUNNER_RELEASE_ERA = "TensorRT-LLM runner era: {era}"
MSG_RUNNER_ENCDEC_SETTINGS = ("{settings} not applied: {family}'s LLM is encoder-decoder (TensorRT-LLM's "
                              "EncDecModelRunner takes only the beam count), so the reply is greedy")
MSG_RUNNER_ENCDEC_LORA = ("{family}'s LLM is encoder-decoder: TensorRT-LLM's EncDecModelRunner applies no LoRA, so "
                          "adapter '{adapter}' cannot be used here. Ask the base model.")
MSG_RUNNER_LORA_NOT_BAKED = ("Adapter '{adapter}' is not built into model '{model}': the runner serves only the "
                             "adapters its LLM engine was built with (trtllm-build --lora_dir), here {baked}.")
MSG_RUNNER_NO_BAKED = "none"

# Why a kind's adapter audit knows no model shapes (setup/lora/audit.py says "Shapes not checked: ..." with it)
MSG_SHAPES_REMOTE = ("the server at {host} is not on this machine, and an OpenAI-compatible model list gives no "
                     "hidden size, layers or vocabulary")
MSG_SHAPES_NO_ROOT = "the server lists no model folder on this machine as its base model's root ({root})"
MSG_SHAPES_NO_LISTING = "the server's model list could not be read ({detail})"
MSG_SHAPES_LLMAPI = "no readable model folder was given (--tokenizer-dir: {folder})"
MSG_SHAPES_RUNNER = ("neither the LLM engine's config.json ({engine}) nor the model folder's ({model}) could be read "
                     "on this machine")

# The Server tab's adapter-cache section (Deployment.lora_cache) for a server with no LoRA figures to show
MSG_NO_LORA_FIGURES = ("The {server} publishes no figures of its adapter cache, and this app does not send it adapter "
                       "weights whose evictions it could count.")
MSG_LORA_METRICS_UNREACHABLE = "The server's metrics at {url} could not be read ({detail})."
MSG_NO_LORA_METRIC = ("The server at {url} gives no LoRA figures on /metrics (no {metric}, the gauge vLLM {release} "
                      "keeps when started with --enable-lora).")
MSG_TRTLLM_SERVE_NO_LORA = ("trtllm-serve {release} reports no LoRA figures: its /metrics gives iteration statistics "
                            "(GPU memory, in-flight batching, KV cache) and its /prometheus/metrics request and "
                            "KV-cache figures, nothing of the adapters it holds.")
