"""Library of the CPU OCR encoder (importable without Triton, so it can be tested directly)."""
