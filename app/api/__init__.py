"""Programmatic surfaces on the app's port: the Gradio API endpoints (gradio_api, the only Gradio
import here), the OpenAI-compatible routes with their schema and reply pump, and the HTTP guard.

May import: app.chat and below, setup; FastAPI and Starlette live only in this package.
"""
