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
