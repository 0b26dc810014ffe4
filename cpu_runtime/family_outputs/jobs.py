"""The jobs a family twin's own output can name (its format's `twin_output`), and which of them answer every picture
(so the twin never runs its LLM). No imports: the model folder's wiring and the test suite read it cheaply."""

KINDS = ("markdown", "chart_table", "grounding", "frame_changes")
ANSWERS_EVERY_PICTURE = ("markdown", "chart_table", "grounding")  # frame_changes lets the LLM answer one picture
