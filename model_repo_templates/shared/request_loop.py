"""The request loop of the models that answer each request with one response (preprocessing, postprocessing, the
encoders): a request that fails gets its own error response and the others of the batch are still answered.

Copied by the repository writer into the 1/ folder of each model that lists it (template.yaml `shared`).
"""

import triton_python_backend_utils as pb_utils


def answer_each(requests, answer):
    """[answer(request) for each request], a failure as that request's error response (its message to the client)."""
    responses = []
    for request in requests:
        try:
            responses.append(answer(request))
        except Exception as exc:  # noqa: BLE001 - reported to this request's client, not raised to Triton
            responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))))
    return responses
