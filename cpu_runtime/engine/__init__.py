"""The CPU inference engine: a Hugging Face causal LM run by PyTorch behind the `tensorrt_llm` model's
contract (in-flight batching, KV blocks, LoRA rows, sampling). Imports only its own modules and model wheels."""
