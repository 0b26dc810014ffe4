"""model_repo_templates/shared/request_loop.py: each request of a batch gets its own response, a failure as that
request's error (the others still answered, in order)."""

import types

from tests.template_models import load_shared_helper


def _pb_utils():
    stub = types.ModuleType("triton_python_backend_utils")
    stub.TritonError = lambda text: f"error: {text}"
    stub.InferenceResponse = lambda output_tensors=(), error=None: ("response", error)
    return stub


def test_a_failing_request_gets_its_error_and_the_others_their_answers():
    module = load_shared_helper("request_loop.py", _pb_utils())

    def answer(request):
        if request == "bad":
            raise ValueError("max_tokens must be a single value greater than 0.")
        return request.upper()

    assert module.answer_each(["a", "bad", "c"], answer) == [
        "A", ("response", "error: max_tokens must be a single value greater than 0."), "C"]
