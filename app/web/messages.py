"""What app.web says to people: its messages, in one place."""

MSG_SERVER_WAITING = "Waiting for the server at {url}..."
MSG_BENCH_BUSY = "A benchmark is already running; wait for it to finish."
MSG_BENCH_STOPPED_AT = ("Stopped. Concurrency {level} was cut short and is not shown; {done} level(s) finished "
                        "before it.")
MSG_BENCH_NOTHING_TO_STOP = "No benchmark is running."
MSG_BENCH_RUNNING = "Running concurrency {level}..."
MSG_BENCH_STOPPING = "Stopping: cancelling the requests under way…"
MSG_BENCH_NO_LEVELS = "Choose at least one concurrency level."
MSG_JOB_UNREAD = ("Nobody read this job's result within {seconds:.0f} s of submitting it, so it was cancelled. "
                  "Read GET /gradio_api/call/<api>/<event_id> right after the POST (gradio_client does).")
MSG_BUILD_SERVER_RUNNING = "A server started from this page is already running; stop it first."
MSG_BUILD_NO_SERVER = "No server started from this page is ready."
MSG_TWIN_SERVING = (" Serving the CPU twin of {family}; it is listed in the chat's Server picker, and \"Chat with this "
                    "server\" picks it for this browser (from the command line: "
                    "`python -m app --demo --twin {demo}`).")
MSG_TWIN_LABEL = "Build page: CPU twin of {family}"
MSG_BUILT_SERVER_LABEL = "Build page: {family}"
MSG_TWIN_STARTING = " (the CPU twin of {family})"

# pages/build*.py
MSG_DISABLED = ("The Build page is disabled: the app listens on {host}, not only on this machine, and no "
                "login is configured. Start it with authentication, or on 127.0.0.1.")
MSG_BUSY_STOPPING = "The server started from this page is still stopping; try again in a moment."
MSG_NOTHING_TO_RESUME = "Pick a build job that was cancelled, failed or interrupted to resume it."

# gate.py

# labels.py
# Adapters tab: removing asks first (the folder is deleted).
MSG_PICK_TO_REMOVE = "⚠️ Pick an adapter to remove."
MSG_CONFIRM_REMOVE = ("Remove **{name}**? Its folder `{folder}` is deleted and its task id is retired; chats that use "
                      "it will fail until it is added again.")
MSG_REMOVE_KEPT = "Nothing removed."
MSG_PICK_TO_CHECK = "⚠️ Pick an adapter to check."
# The API may name any adapter: the lists are checked when the call comes, not when the app started.
MSG_NO_ADAPTER = "⚠️ There is no adapter named '{name}' to {action}; the adapters are: {names}."
MSG_BUSY_SWITCH = "A reply is still running; press Stop before switching conversations."
MSG_IMPORTED = "Imported “{title}” ({count})."
MSG_IMPORTED_AGAIN = "“{title}” ({count}) is in your list already; it is shown, not added twice."
MSG_NOTHING_TO_EXPORT = "This conversation is empty; there is nothing to export."

# The chat's reply view (chat_view.py): which of the person's messages the model was sent
MSG_SENT_ALL = "Sent to the model: your message{s} {numbers} (the whole conversation)."
MSG_SENT_SOME = "Sent to the model: your message{s} {numbers} of {count}; {reason}."
MSG_LEFT_OUT_PICTURE = "a new picture starts what the model sees"
MSG_LEFT_OUT_ADAPTER = ("the earlier ones were answered with another adapter (Sampling → Earlier turns sent with "
                        "each message: same adapter)")
# Conversations older apps wrote (legacy_chats.py): what is wrong with a file
MSG_NOT_A_MESSAGE = 'message {number} is not {{"role": "user" or "assistant", "content": text}}'
MSG_DAMAGED_REPLY = "reply {number} is damaged ({detail})"

# pages/build_api.py
MSG_BUILD_API_NO_FAMILY = "Give the model family as settings[\"family\"] (got {family!r}); one of: {choices}."
MSG_BUILD_API_UNKNOWN_FIELDS = "Unknown Build settings: {names}. The settings are: {known}."
MSG_BUILD_API_UNKNOWN_JOB = "There is no build job {job!r}; the Build page's job list names the jobs."
MSG_SERVER_ADDED = "Added {server}; this browser talks to it now (the Server picker switches back)."
MSG_SERVER_BACK = "Back on this app's server"
MSG_GREEDY_REGENERATE = ("Decoding is Greedy, so this reply has the same words as the one before (unless the "
                         "adapter or the server changed). For another reply, choose Sample under Sampling.")
MSG_MODEL_SOURCE_RULE = ("With a model id, an empty checkpoint box means models/ORG--NAME in the workspace, and a "
                         "folder that is empty or missing gets the download; a folder with a checkpoint of your own "
                         "wins over the model id.")
MSG_ASK_CLEAR = "Clear this conversation? Undo brings it back until your next change."
MSG_ASK_DELETE = "Delete “{title}” from this browser? Undo brings it back until your next change."
