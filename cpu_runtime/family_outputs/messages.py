"""Sentences the cpu_runtime.family_outputs package shows to people; other modules import them."""

# outputs.py
MSG_UNKNOWN_OUTPUT = "Unknown twin output {name!r}; known: {known}."

# markdown.py
MSG_NO_PAGE_TEXT = "(No text was found on this page.)"

# chart.py
MSG_NO_BARS = "No bars were found: the twin reads bar charts (solid coloured bars on a light background)."

# grounding.py
NOTHING_GROUNDED = "nothing it can point to"

# frames.py
MSG_NO_FRAMES = "The video gave no frames."
