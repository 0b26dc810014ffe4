"""A CPU stand-in for TensorRT-LLM's MultimodalModelRunner (the late era's constructor and methods), so the runner
topology's model runs unchanged on the CPU. It takes each family's own prompt format, image size and token count
(formats.py, from the visual folder's config.json that setup writes from the family file); the LLM and the vision
step are given to it by the model folder's wiring (the CPU engine and the CPU image encoder), as parts import no
other part."""
