"""LoRA on the engine path: PEFT -> the backend's .npy pair (convert), and the engine-side checks
(engine), plus the convert command.

May import: setup.catalog and the base modules.
"""
