"""What app.api says to people: its messages, in one place."""

MSG_API_NOT_AN_OBJECT = "The request body must be a JSON object in OpenAI's chat completions format (model, messages, ...)."
MSG_API_BAD_JSON = "The request body is not valid JSON ({detail})."
MSG_API_BODY_TOO_LARGE = "The request body is larger than {limit_mb:.0f} MB."
MSG_API_NO_MESSAGES = "messages must be a non-empty list of {role, content} objects."
MSG_API_BAD_ROLE = "messages[{index}].role must be system, user or assistant, got {role!r}."
MSG_API_BAD_CONTENT = "messages[{index}].content must be text or a list of text and image_url parts."
MSG_API_BAD_PART = ("messages[{index}].content[{part}] is a {kind!r} part; only text, image_url, video_url and file "
                    "(PDF) parts are read.")
MSG_API_FILE_ID = ("messages[{index}]: this app keeps no uploaded files, so a file_id cannot be read; send the PDF "
                   "inline as file_data: data:application/pdf;base64,...")
MSG_API_NOT_PDF_DATA = ("messages[{index}]: a file part's file_data must be a data:application/pdf;base64,... URL "
                        "(PDF documents are the files this app reads).")
MSG_API_PDF_PAGES = ("messages[{index}]: a file part's pages must be a page range such as \"1-3,5\" (the same range "
                     "for every PDF of the message).")
MSG_API_REMOTE_VIDEO = ("messages[{index}]: send videos inline as data:video/mp4;base64,... (or video/webm, image/gif) "
                        "URLs in a video_url part; this server fetches no URL.")
MSG_API_REMOTE_IMAGE = ("messages[{index}]: send images inline as data:image/...;base64,... URLs; "
                        "the app does not fetch remote files.")
MSG_API_BAD_BASE64 = "messages[{index}]: the image's data URL does not hold valid base64."
MSG_API_LAST_NOT_USER = "The last message must be the user's (role 'user')."
MSG_API_N = "n must be 1: this app returns one choice per request."
MSG_API_STOP = ("stop must be a non-empty string or a list of at most {limit} non-empty strings, "
                "each at most {chars} characters long.")
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
MSG_API_NO_IMAGES = "Send at least one image (gradio_client.handle_file(path))."
MSG_API_CANNOT_DESCRIBE = ("This deployment's image encoder does not say what it finds in pictures; only the CPU "
                           "demo's engine topology does (its encoder describes each picture in words).")
MSG_NO_REQUEST = "This action needs a request from the browser or the API; nothing was run."
