"""Plain sentences of the chat package (older ones live in app.core.constants)."""

MSG_QUEUE_FULL = "{count} messages are already waiting for this reply; wait for it or press Stop."
MSG_BUSY_REGENERATE = "A reply is still running; press Stop first, then Regenerate."
MSG_NO_REGENERATE = "There is no message to regenerate yet."
MSG_IMPORT_NOT_JSON = "{name} is not a conversation file: it is not JSON ({detail})."
MSG_IMPORT_SHAPE = "{name} is not a conversation file: {detail}"
MSG_IMPORT_TOO_BIG = "{name} is {size:,} bytes; a conversation file may be at most {limit:,} bytes."
MSG_IMAGE_NOT_KEPT = "[image {name}: not kept]"
MSG_NO_TEXT_REPLY = "(the model returned no text)"
MSG_REPLY_FAILED = ("The reply failed on an error the app did not expect ({kind}: {detail}). The app's log has the "
                    "details; try again, or press Clear and start over.")

MSG_EMPTY_PROMPT = "Type a message first."
MSG_PROMPT_TOO_LONG = "The message is longer than {limit} characters; shorten it."
MSG_NOT_A_NUMBER_FIELD = "{name} must be a number, got {value!r}."
MSG_NOT_TEXT = "The message must be text, got {kind}."

MSG_COMPARE_NO_COLUMNS = "Pick the base model or at least one adapter to compare."
MSG_COMPARE_TOO_MANY = "Compare takes the base model and at most {limit} adapters."
MSG_COMPARE_ADAPTERS = ("adapters must be a list of adapter names, an empty name (or \"base model\") for the base "
                        "model; got {value!r}.")
MSG_COMPARE_CUT = "cut at the {limit}-token limit"  # a column whose reply reached max_tokens
MSG_COMPARE_NOTHING_TO_CONTINUE = "Only a column cut at the token limit can be continued; no column of the last run was."
MSG_COMPARE_CONTINUES = ("continues must list one text per column ({count}), an empty one for a fresh reply; "
                         "got {value!r}.")

# "Is the adapter really applied?" (app/chat/adapter_check.py)
MSG_APPLIED = "Adapter '{adapter}' is applied: on {probe} its {how} differ from the base model's."
MSG_NOT_APPLIED = ("⚠️ Adapter '{adapter}' does not seem to be applied: on {probe} its greedy tokens and their "
                   "log-probabilities are the same as the base model's (within {tolerance:g}). Check the adapter's "
                   "files and how the server loaded it.")
MSG_CHECK_CROWDED = ("The check of adapter '{adapter}' is inconclusive: its probes gave the base model's tokens while "
                     "other replies were streaming, and a server may apply an adapter to every request it batches "
                     "with one. Check it again from the Adapters tab when nothing else runs.")
MSG_INCONCLUSIVE = ("The check of adapter '{adapter}' is inconclusive: on {probe} its first tokens are the same as the "
                    "base model's, and the server returned no log-probabilities the check could compare. That does "
                    "not mean it is not applied: try it on a prompt like its training data, or beside the base "
                    "model in Compare.")
MSG_CHECK_FAILED = "The adapter check for '{adapter}' could not run: {error}"
MSG_CHECK_BUILT_IN = ("Adapter '{adapter}' is part of the served model and on in every reply, so there is no reply "
                      "without it to compare with; this check cannot tell whether it is applied. Its effect shows in "
                      "the replies themselves (for a Partial LoRA: in answers about an image).")
PROBE_TEXT = "the probe prompt"
PROBE_WITH_PICTURE = "the probe question about a small picture"  # where only an image shows an adapter
PROBE_TRAINING_ONE = "its training prompt \"{prompt}\""
PROBE_TRAINING = "{count} of its training prompts"
HOW_TOKENS = "greedy first tokens"
HOW_LOGPROBS = "log-probabilities of the same greedy tokens"

# How replies, figures and the APIs word "no adapter" (the domain value is None).
BASE_MODEL_WORDS = "base model"

# A reply that stopped at the max-new-tokens limit (shown in italics under it), and Continue's refusals.
MSG_CUT = "— cut at the {limit}-token limit"
MSG_NOTHING_TO_CONTINUE = "Only a reply cut at the token limit (or stopped) can be continued; the last reply was not."
MSG_BUSY_CONTINUE = "A reply is still running; press Stop first, then Continue."
MSG_BUSY_VERSIONS = "A reply is still running; wait for it before stepping between versions."
MSG_IMAGE_GONE = "(image {name}: no longer on the server)"
MSG_IMAGE_TOO_BIG = "(image {name}: {size:,} bytes, too big to embed; the limit is {limit:,})"

# The servers a session can pick (app/chat/servers.py)
MSG_SERVER_MARK_STOPPED = " (stopped)"
MSG_SERVER_MARK_UNREACHABLE = " (unreachable)"
MSG_SERVER_NOT_LISTED = "There is no server '{server}' in the list; listed: {listed}."
MSG_SERVER_STOPPED = "{server} cannot be used now; pick another server."
MSG_SERVER_FELL_BACK = "{server} is gone, so this chat talks to {own} again."
MSG_SERVER_ADDRESS = ("Give the server's address: an OpenAI-compatible URL such as http://127.0.0.1:8000/v1, or "
                      "a Triton gRPC address HOST:PORT.")
MSG_SERVER_NOT_ANSWERING = "Nothing answers at {url}: {detail} It was not added."
MSG_SERVER_NOT_READY = "{url} answers, but its model is not ready yet ({detail}); add it again once it is."

# figures.py: once per conversation, on a reply from an adapter the deployment applies only in part
MSG_PARTIAL_ADAPTER = ("⚠️ {adapter} is applied only in part: {percent}% of its weights ({dropped} dropped; "
                       "see the Adapters tab)")
MSG_BUSY_EDIT = "A reply is still running; press Stop first, then edit the message."
MSG_EDIT_MESSAGES_ONLY = "Only your own messages can be edited; Regenerate makes another version of a reply."
MSG_CHAT_GONE = "That conversation is no longer in this browser."
