"""Talks to Triton only: the gRPC client with model-config-driven inputs and server-side cancel, the
streaming transport, incremental detokenised text, the metrics reader.

May import: app.core, setup.
"""
