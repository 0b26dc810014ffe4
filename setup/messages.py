"""Sentences the setup package shows to people (errors, warnings, notes); other modules import them."""

# workspace.py
MSG_SYSTEM_ROOT = "'{path}' cannot be a workspace folder: it is / or a system folder. Pick a project or data folder."
MSG_OUTSIDE = ("The {what} '{path}' is outside the folders this app may use ({roots}). Move it there, or start "
               "the app with --workspace FOLDER to allow another folder.")
MSG_EMPTY = "The {what} is empty; give a folder path."
