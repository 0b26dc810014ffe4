"""What some families answer with, besides prose: parsers of their output formats into plain typed data
(dataclasses an API can return as fields), the formats written back (for the CPU twins), and their display
forms (Markdown, CSV, a picture with boxes).

    chart_table          Deplot's linearised data table -> ChartTable; Markdown, CSV, the linearised text
    grounding            Kosmos-2's <phrase>/<object><patch_index_NNNN> markup -> phrases with boxes (32 x 32 grid)
    grounding_picture    the boxes and their phrases drawn on the picture (Pillow)

May import: app.core, setup, Pillow. No Gradio, no server code.
"""
