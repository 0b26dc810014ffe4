"""The CPU inference engine: a Hugging Face causal LM run by PyTorch behind the `tensorrt_llm` model's
contract (in-flight batching, KV blocks, LoRA rows, sampling). Llama-style checkpoints load with torch alone
(checkpoint.py), others through transformers; threads.py sets how many threads it computes on. Imports only its
own modules and model wheels."""
