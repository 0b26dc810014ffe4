"""The Build page's logic without Gradio, one module per deployment kind the page offers: engine.py (TensorRT
engines + Triton: form fields and help, form -> plan, job status, the engine registry, the server started from the
page, the access rule), serve.py (TensorRT-LLM 1.x, trtllm-serve), llmapi.py (TensorRT-LLM 1.x, Triton llmapi);
what they share: plan_view.py (an engine-free plan or its problems as the page shows them) and folders.py (the
form's folders confined to the workspace). app/web/pages/build*.py lay them out.

May import: app.core, setup. No Gradio, no FastAPI, never app.web.
"""
