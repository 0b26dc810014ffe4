"""Commands beside the UI (`python -m app <command>`) for what the UI does that `python -m app bench` does not:
`compare` runs the Compare tab's job from a terminal."""
