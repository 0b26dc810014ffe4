"""Ask a deployment's image encoder what it found in the images of a request ("What the model saw").

Only encoders that declare the DESCRIBE input and OUT_DESCRIPTION output answer (the CPU demo's,
cpu_runtime/encoder); GPU vision towers turn pictures into vectors
nobody can read, so there the answer is None. The encoder remembers recent images, so asking after
a reply has been generated costs a lookup, not a second run.
"""

from __future__ import annotations

import json

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from app.core.errors import parse_error

DESCRIBE_INPUT, DESCRIPTION_OUTPUT, IMAGE_INPUT = "DESCRIBE", "OUT_DESCRIPTION", "IMAGE"
DEFAULT_ENCODER = "multimodal_encoders"
DESCRIBE_TIMEOUT = 60.0  # seconds; an image not remembered is encoded again (about 0.1-0.3 s on 2 cores)


def can_describe(encoder_config: dict) -> bool:
    """Whether an encoder model's config offers descriptions."""
    inputs = {i["name"] for i in encoder_config.get("input", [])}
    outputs = {o["name"] for o in encoder_config.get("output", [])}
    return DESCRIBE_INPUT in inputs and DESCRIPTION_OUTPUT in outputs and IMAGE_INPUT in inputs


def describe_pixels(url: str, encoder: str, pixels: np.ndarray) -> list[dict]:
    """What `encoder` found in each image of `pixels` ([1, images, 3, H, W] as the request sent them)."""
    pixels = np.asarray(pixels, dtype=np.float16)
    if pixels.ndim == 4:
        pixels = pixels[None]
    image = grpcclient.InferInput(IMAGE_INPUT, list(pixels.shape), "FP16")
    image.set_data_from_numpy(pixels)
    describe = grpcclient.InferInput(DESCRIBE_INPUT, [pixels.shape[0], 1], "BOOL")
    describe.set_data_from_numpy(np.ones((pixels.shape[0], 1), dtype=bool))
    client = grpcclient.InferenceServerClient(url)
    try:
        result = client.infer(encoder, [image, describe], outputs=[grpcclient.InferRequestedOutput(DESCRIPTION_OUTPUT)],
                              client_timeout=DESCRIBE_TIMEOUT)
    except InferenceServerException as exc:
        raise parse_error(exc.message()) from None
    finally:
        client.close()
    row = result.as_numpy(DESCRIPTION_OUTPUT)[0]
    return [json.loads(item.decode() if isinstance(item, bytes) else item) for item in row if item]


def encoder_name(parameters: dict[str, str]) -> str:
    """The encoder model a multimodal BLS or ensemble names (its `multimodal_encoders_name`), else the default."""
    return parameters.get("multimodal_encoders_name") or DEFAULT_ENCODER
