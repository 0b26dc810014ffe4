"""Sentences the app.core package shows to people (errors, warnings, notes); other modules import them."""

# access.py
MSG_NEED_TOKEN = ("This action runs programs or writes files on the server, so it needs the app's launch token. "
                  "Open the URL with ?token=... that the app printed when it started (or send the "
                  "X-Launch-Token header).")
MSG_NEED_LOGIN = ("This action runs programs or writes files on the server, and the app listens on {host} "
                  "without a login. Restart it with --auth-file (or on 127.0.0.1) to allow it.")

# constants.py
MSG_CONVERSATION_TOO_LONG = ("The conversation is {chars:,} characters; this app takes at most {limit:,} characters "
                             "per request. Start a new chat or shorten it.")
MSG_CONVERSATION_TOO_MANY_MESSAGES = ("The conversation has {count:,} messages; this app takes at most {limit:,} "
                                      "per request. Start a new chat or shorten it.")
MSG_STOPPED = "(stopped)"
MSG_TEXT_ONLY = "This deployment is text-only: images are not sent. Remove the image or deploy a vision model."
MSG_IMAGE_TOO_LARGE_BYTES = "{name} is {size_mb:.1f} MB; images may be at most {limit_mb:.0f} MB."
MSG_IMAGE_NO_TEXT_PROMPT = "Add a question or instruction to go with the image."
MSG_METRICS_NOT_SET = "No metrics address is configured (start the app with --demo, or give the metrics URL)."
MSG_INVALID_TEXT = (
    "The {field} holds a character that is not valid Unicode text (a lone surrogate at position {position}); "
    "remove it and send again."
)
