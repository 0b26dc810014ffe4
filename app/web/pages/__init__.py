"""One module per tab; each exposes build(ctx) and can be launched alone (python -m app.web.pages.X)."""
