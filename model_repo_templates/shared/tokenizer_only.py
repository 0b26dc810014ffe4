"""Imported before transformers by a Python model that only tokenizes: transformers then loads without PyTorch.

transformers imports PyTorch whenever it is installed (about 3 s of CPU and 0.25 GiB per stub process, measured on
the CPU demo: 0.37 GiB resident with it, 0.12 without), although a tokenizer loaded without remote code never uses it. A model that loads a tokenizer with
remote code (InternLM-XComposer2's preprocessing) does not import this.
"""

import os
import sys

os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # transformers' "PyTorch was not found" line
sys.modules.setdefault("torch", None)  # `import torch` now fails at once; a process that already has it keeps it
