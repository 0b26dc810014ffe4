"""The runner model's logic, apart from the Triton plumbing (model.py): which era of TensorRT-LLM's
MultimodalModelRunner is installed (eras.py, against runner_eras.yaml), the `args` object its constructor reads
(runner_args.py), one request's values (requests.py) and one reply through the runner's own run() (replies.py).

Copied beside model.py with the model's folder; imports only the standard library, numpy, PIL and PyYAML.
"""
