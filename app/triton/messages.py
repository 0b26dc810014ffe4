"""What app.triton says to people: its messages, in one place."""

MSG_METRICS_UNREACHABLE = "Triton's metrics at {url} cannot be read ({detail})."
