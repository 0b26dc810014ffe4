"""The web app and everything that talks to a running Triton server."""
