"""Commands beside the UI (`python -m app <command>`) for what the UI does that `python -m app bench` does not:
`compare` runs the Compare tab's job from a terminal, through a deployment or a running app's Gradio API.

May import: app.chat and below, setup; gradio_client (app_client, for --app), never Gradio itself.
"""
