"""Helpers the Python models of a Triton repository share: config parameters, optional inputs, text values.

The repository writer copies this file into the 1/ folder of each model whose template lists it under `shared`
(model_repo_templates/*/template.yaml), so every model folder stands alone at run time.
"""

import triton_python_backend_utils as pb_utils


def param(config, key, default=""):
    """A string parameter of the model config; `default` when it is missing, empty or left unfilled (${...})."""
    value = config.get("parameters", {}).get(key, {}).get("string_value", default)
    return default if (not value or value.startswith("${")) else value


def as_bool(text):
    """A parameter's text read as a switch: true, 1 or yes (any case) are on."""
    return str(text).strip().lower() in ("true", "1", "yes")


def optional_input(request, name):
    """The request's input `name` as a numpy array, or None when the request does not carry it."""
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


def text_of(value):
    """A value of a string tensor as text (bytes are UTF-8)."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
