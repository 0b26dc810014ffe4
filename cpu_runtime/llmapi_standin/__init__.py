"""The llmapi CPU stand-in's own parts: LLM arguments, requests, PEFT adapters by path, images."""
