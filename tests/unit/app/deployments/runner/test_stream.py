"""Replies of the runner kind read from real gRPC responses (an in-process GRPCInferenceService on loopback plays
the multimodal_runner model): the whole reply and its figures (finish_reason, reply_mode, runner_era,
prompt_format), a streamed reply's pieces, the one-line summary, and the model's errors in its own words."""

from __future__ import annotations

from concurrent import futures

import grpc
import numpy as np
import pytest
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import serialize_byte_tensor

from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.errors import ChatError
from app.core.sampling import REPETITION_FOR_PENALTIES, SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.messages import MSG_RUNNER_PENALTIES
from app.deployments.runner.deployment import RunnerDeployment
from app.triton.transport import drop_channel
from tests.unit.app.deployments.runner.conftest import ServedClient, served_info

FIGURES = {"finish_reason": "stop", "reply_mode": "whole reply", "runner_era": "late",
           "prompt_format": "kosmos-2 (kosmos-2): '<image><grounding>{question}', 224x224 px, 64 visual tokens"}


def outputs(values: dict[str, str]) -> service_pb2.ModelInferResponse:
    response = service_pb2.ModelInferResponse(model_name="multimodal_runner")
    for name, text in values.items():
        response.outputs.add(name=name, datatype="BYTES", shape=[1])
        response.raw_output_contents.append(serialize_byte_tensor(np.array([text.encode()], dtype=np.object_))
                                            .item())
    return response


class RunnerModel(service_pb2_grpc.GRPCInferenceServiceServicer):
    """Answers each request with `replies` (dicts of outputs, the last one final) or with `error`; with
    `error_after`, the replies are pieces of a reply the error then ends."""

    def __init__(self):
        self.requests: list = []
        self.replies: list[dict[str, str]] = []
        self.error = ""
        self.error_after = ""  # sent after `replies` (all then non-final)

    def ModelStreamInfer(self, request_iterator, context):  # noqa: N802 - the gRPC method name
        self.requests.append(next(request_iterator))
        if self.error:
            yield service_pb2.ModelStreamInferResponse(error_message=self.error)
            return
        for number, values in enumerate(self.replies, 1):
            response = outputs(values)
            response.parameters["triton_final_response"].bool_param = number == len(self.replies) and \
                not self.error_after
            yield service_pb2.ModelStreamInferResponse(infer_response=response)
        if self.error_after:  # the model's error response ends a reply that had begun
            yield service_pb2.ModelStreamInferResponse(error_message=self.error_after)


@pytest.fixture
def served(tmp_path):
    model = RunnerModel()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(model, server)
    url = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    yield model, RunnerDeployment(ServedClient(served_info(), url=url), AdapterRegistry(tmp_path / "adapters"))
    server.stop(grace=None)
    drop_channel(url)


def test_a_whole_reply_comes_in_one_piece_with_its_figures(served):
    model, deployment = served
    model.replies = [{"text_output": "An image of a cat on a sofa.", **FIGURES}]
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("<grounding>An image of")))
    assert list(stream) == ["An image of a cat on a sofa."] and stream.text == "An image of a cat on a sofa."
    assert stream.details == FIGURES and stream.finish_reason == "stop"
    (request,) = model.requests
    assert request.model_name == "multimodal_runner"


def test_the_figures_line_is_short_and_the_internals_go_to_what_the_model_saw(served):
    """The figures line says how the reply came and the family's format by name; the prompt format, the
    settings' notes, the finish and the runner's era are lines of the folded "What the model saw"."""
    from app.chat.model_saw import image_reports, saw_lines

    model, deployment = served
    model.replies = [{"text_output": "A cat.", **FIGURES}]
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("What is it?")))
    "".join(stream)
    assert stream.details_line() == "whole reply · NeVA format"
    (lines,) = saw_lines(image_reports(stream))
    assert lines == ("Prompt format: " + FIGURES["prompt_format"],
                     MSG_RUNNER_PENALTIES.format(value=REPETITION_FOR_PENALTIES), "Finished: stop",
                     "TensorRT-LLM runner era: late")


def test_a_reply_cut_at_max_tokens_says_length(served):
    model, deployment = served
    model.replies = [{"text_output": "A cat", **FIGURES, "finish_reason": "length"}]
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("What is it?")))
    assert "".join(stream) == "A cat" and stream.finish_reason == "length"
    assert stream.details_line().startswith("whole reply") and "Finished: length" in stream.internals()


def test_a_streamed_reply_comes_in_pieces_and_the_final_response_carries_its_figures(served):
    """A runner that streams sends each new piece of text as its own response, the final one with the rest (may be
    empty) and the figures; the chat gets each piece as it comes, and the figures say "streamed"."""
    model, deployment = served
    model.replies = [{"text_output": "A cat"}, {"text_output": " on a"},
                     {"text_output": " sofa.", **FIGURES, "reply_mode": "streamed", "finish_reason": "length"}]
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("What is it?")))
    assert list(stream) == ["A cat", " on a", " sofa."] and stream.text == "A cat on a sofa."
    assert stream.details["reply_mode"] == "streamed" and not stream.whole_reply and stream.chunks == 3
    assert stream.finish_reason == "length" and stream.details_line().startswith("streamed · ")


def test_a_streamed_reply_may_end_with_an_empty_final_response(served):
    model, deployment = served
    model.replies = [{"text_output": "A cat"}, {"text_output": " sleeps."},
                     {"text_output": "", **FIGURES, "reply_mode": "streamed"}]
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("What is it?")))
    assert list(stream) == ["A cat", " sleeps."] and stream.text == "A cat sleeps." and stream.chunks == 2
    assert stream.details["reply_mode"] == "streamed" and stream.finish_reason == "stop"


def test_an_error_after_some_pieces_ends_the_reply_with_the_models_words(served):
    model, deployment = served
    model.replies = [{"text_output": "A cat"}]
    model.error_after = "The runner failed: Executor error on request 3"
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("What is it?")))
    assert next(stream) == "A cat"
    with pytest.raises(ChatError, match="Executor error on request 3"):
        list(stream)
    assert stream.finish_reason is None


def test_a_reply_without_figures_has_an_empty_summary(served):
    model, deployment = served
    model.replies = [{"text_output": "A cat."}]
    no_penalties = SamplingParams(presence_penalty=0.0, frequency_penalty=0.0)
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("What is it?"), no_penalties))
    assert "".join(stream) == "A cat." and stream.details == {} and stream.details_line() == ""
    assert stream.image_report is None
    assert stream.finish_reason is None  # the model did not say why it ended


def test_the_summary_says_when_a_repetition_penalty_stood_in_for_the_chats_penalties(served):
    model, deployment = served
    model.replies = [{"text_output": "A cat.", **FIGURES}]
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("What is it?")))  # the chat's penalties
    "".join(stream)
    note = MSG_RUNNER_PENALTIES.format(value=REPETITION_FOR_PENALTIES)
    assert stream.notes == (note,) and note in stream.internals() and note not in stream.details_line()


def test_the_models_error_reaches_the_chat_in_its_words(served):
    model, deployment = served
    model.error = "The kosmos-2 twin needs a picture: send an image."
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("Hello")))
    with pytest.raises(ChatError) as caught:
        list(stream)
    assert "The kosmos-2 twin needs a picture: send an image." in str(caught.value)
    assert stream.finish_reason is None


def test_an_unreachable_server_is_a_chat_error_not_a_traceback(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"127.0.0.1:{port}"
    deployment = RunnerDeployment(ServedClient(served_info(), url=url), AdapterRegistry(tmp_path / "adapters"))
    try:
        with pytest.raises(ChatError):
            list(deployment.open_reply(ReplyRequest(Conversation.asking("Hello"))))
    finally:
        drop_channel(url)
