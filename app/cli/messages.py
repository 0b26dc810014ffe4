"""What app.cli says to people: its messages, in one place."""

MSG_CLI_IMAGE_MISSING = "Image file {path} does not exist."
MSG_CLI_APP_UNREACHABLE = "The app at {url} cannot be reached ({detail})."
MSG_CLI_APP_NO_COMPARE = "The app at {url} has no compare endpoint in its Gradio API (is it this app, and recent?)."
MSG_CLI_APP_LOGIN_NEEDED = ("The app at {url} asks for a login; give a file with its USER:PASSWORD line "
                            "(--login-file FILE).")
MSG_CLI_APP_LOGIN_REFUSED = "The app at {url} refused the login of user '{user}' from --login-file."
MSG_CLI_APP_FAILED = "The app at {url} failed without a message."
MSG_CLI_INTERRUPTED = "interrupted: every column was stopped"
