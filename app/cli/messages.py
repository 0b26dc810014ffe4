"""What app.cli says to people: its messages, in one place."""

MSG_CLI_IMAGE_MISSING = "Image file {path} does not exist."
MSG_CLI_APP_UNREACHABLE = "The app at {url} cannot be reached ({detail})."
MSG_CLI_APP_NO_COMPARE = "The app at {url} has no compare endpoint in its Gradio API (is it this app, and recent?)."
MSG_CLI_APP_LOGIN_NEEDED = ("The app at {url} asks for a login; give a file with its USER:PASSWORD line "
                            "(--login-file FILE).")
MSG_CLI_APP_LOGIN_REFUSED = "The app at {url} refused the login of user '{user}' from --login-file."
MSG_CLI_APP_FAILED = "The app at {url} failed without a message."
MSG_CLI_INTERRUPTED = "interrupted: every column was stopped"

# app/__main__.py: --deployment names the server kind, --twin the CPU demo's repository (issue #48)
MSG_TWIN_IS_NOT_A_KIND = ("'{twin}' is a CPU twin, picked with --twin {twin} (with --demo); --deployment names the "
                          "server kind: {kinds}")
MSG_TWIN_WITHOUT_DEMO = ("--twin {twin} picks the CPU demo's repository; use it with --demo (against a running server "
                         "give its kind instead: --deployment {kind})")
MSG_TWIN_KIND_CONFLICT = "--twin {twin} is served as the {kind} kind; give --deployment {kind} or leave it out"
MSG_DEMO_RUNNER_NEEDS_TWIN = ("--demo --deployment runner: the runner kind's CPU demos are the runner twins; pick one "
                              "with --twin FAMILY ({families})")
