"""What each runner family's CPU twin returns, as the real model does: Nougat's markdown of a page, Deplot's data
table of a chart, Kosmos-2's grounded text, Video NeVA's account of a video's frames.

The pure logic (layout.py, markdown.py, chart.py, grounding.py, frames.py) works on pictures as numpy arrays and
on OCR results as typed boxes; outputs.py runs the encoder's parts (OCR, face cascades, classifier, colour names)
and picks the job by the family format's `twin_output`. May import cpu_runtime.encoder; the runner stand-in
never imports this package (the model folder's wiring joins them)."""
