"""The runner model's logic, apart from the Triton plumbing (model.py): which era of TensorRT-LLM's
MultimodalModelRunner is installed (eras.py, against runner_eras.yaml), the `args` object its constructor reads
(runner_args.py), one request's values (requests.py), one whole reply through the runner's own run() (replies.py),
and a streamed one where the runner's LLM runner can stream (streaming.py: the LLM call redone in llm_call.py, its
snapshots turned into text deltas in deltas.py).

Copied beside model.py with the model's folder; imports only the standard library, numpy, PIL and PyYAML, and torch
where the runner's own tensors are stacked for its LLM call (the runner brings torch).
"""
