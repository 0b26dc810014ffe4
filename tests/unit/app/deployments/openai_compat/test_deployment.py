"""The OpenAI-compatible deployment against trtllm-serve's request contract (lora_request adapters).

trtllm-serve cannot run here (TensorRT-LLM needs a GPU), so a loopback stand-in plays its /v1 surface and
refuses what trtllm-serve refuses, by the upstream facts in tests/data/upstream/trtllm-serve/chat_request.yaml
(extra fields forbidden; LoRARequest's fields and types; lora_path must exist on the server). The app's own
/v1 and vLLM's CPU build are the real servers of the integration tests.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.errors import InvalidRequest
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.messages import CONTINUE_TURN
from app.deployments.openai_compat.deployment import OpenAICompatDeployment
from setup.paths import PROJECT_ROOT
from tests.lora_helpers import SMOL, write_model_config

FACTS = yaml.safe_load((PROJECT_ROOT / "tests/data/upstream/trtllm-serve/chat_request.yaml").read_text())
TYPES = {"str": str, "int": int}


def contract_errors(body: dict) -> list[str]:
    """What trtllm-serve's ChatCompletionRequest validation would refuse in `body`."""
    allowed = set(FACTS["chat_request_fields"]) | set(FACTS["aliases"])
    errors = [f"extra field {key}" for key in body if key not in allowed]
    errors += [f"{key} needs {needed}" for key, needed in FACTS["requires"].items() if key in body and not body[needed]]
    lora = body.get("lora_request")
    if lora is not None:
        fields = FACTS["lora_request_fields"]
        errors += [f"lora_request.{key} unknown" for key in lora if key not in fields]
        errors += [f"lora_request.{key} missing" for key in FACTS["lora_request_required"] if key not in lora]
        errors += [f"lora_request.{key} not {kind}" for key, kind in fields.items()
                   if key in lora and not isinstance(lora[key], TYPES[kind])]
        if not Path(lora.get("lora_path", "")).exists():
            errors.append("lora_path does not exist")
    return errors


class TrtllmServeStandIn(BaseHTTPRequestHandler):
    """/v1/models as trtllm-serve lists itself (owned_by tensorrt_llm, no adapters); /v1/chat/completions
    checked against the contract, then three streamed chunks (or, unstreamed, one token with log-probabilities)."""

    bodies: list[dict] = []
    root: str | None = None  # the folder the base model was loaded from, as vLLM lists it

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        base = {"id": "tensorrt_llm", "object": "model", "owned_by": "tensorrt_llm"}
        self._send(200, {"object": "list", "data": [{**base, "root": self.root} if self.root else base]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        errors = contract_errors(body)
        if errors:
            self._send(400, {"object": "error", "message": "; ".join(errors), "type": "BadRequestError",
                             "code": 400})
            return
        if not body.get("stream"):
            top = [{"token": "Arr", "logprob": -0.1}, {"token": "Hello", "logprob": -2.5}]
            self._send(200, {"id": "c", "object": "chat.completion", "model": body["model"], "choices": [{
                "index": 0, "message": {"role": "assistant", "content": "Arr"}, "finish_reason": "length",
                "logprobs": {"content": [{"token": "Arr", "logprob": -0.1, "top_logprobs": top}]}}]})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for word in ("Arr", ", ", "Paris"):
            chunk = {"id": "c", "object": "chat.completion.chunk", "model": body["model"],
                     "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture
def server():
    TrtllmServeStandIn.bodies, TrtllmServeStandIn.root = [], None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), TrtllmServeStandIn)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def deployment(server, tmp_path):
    registry = AdapterRegistry(tmp_path / "adapters")
    registry.add_folder(PROJECT_ROOT / "adapters" / "pirate", "pirate")
    return OpenAICompatDeployment(server, registry)


def test_the_stand_in_refuses_what_trtllm_serve_refuses(tmp_path):
    assert contract_errors({"model": "m", "messages": [], "max_tokens": 4}) == []
    assert contract_errors({"model": "m", "messages": [], "max_new_tokens": 4}) == ["extra field max_new_tokens"]
    assert contract_errors({"model": "m", "messages": [], "lora_request": {"lora_name": "a", "lora_int_id": "7",
                                                                           "lora_path": str(tmp_path)}}) \
        == ["lora_request.lora_int_id not int"]


def test_trtllm_serve_is_detected_and_gets_lora_request(deployment):
    assert deployment.adapters_as() == "lora_request"
    assert "pirate" in [a.name for a in deployment.adapters()]


def test_an_adapter_reply_passes_the_contract(deployment):
    params = SamplingParams(max_tokens=8, temperature=0.7, top_k=40, top_p=0.9, repetition_penalty=1.1)
    stream = deployment.open_reply(ReplyRequest(Conversation.asking("Hi"), params, "pirate", min_tokens=2))
    text = "".join(piece for piece in stream)
    body = TrtllmServeStandIn.bodies[-1]
    assert "Paris" in text and contract_errors(body) == []
    lora = body["lora_request"]
    assert lora["lora_name"] == "pirate" and lora["lora_int_id"] == deployment.registry.task_id("pirate")
    assert Path(lora["lora_path"]) == (deployment.registry.folder / "pirate").resolve()
    assert body["model"] == "tensorrt_llm" and body["top_k"] == 40 and body["min_tokens"] == 2


def test_continue_on_trtllm_serve_asks_in_a_user_turn_within_the_contract(deployment):
    """trtllm-serve refuses vLLM's continue_final_message, so Continue sends the partial reply and a user turn."""
    question = Conversation.asking("Hi")
    list(deployment.open_reply(ReplyRequest(question, SamplingParams(max_tokens=8), continues="Arr, the capital")))
    body = TrtllmServeStandIn.bodies[-1]
    assert contract_errors(body) == []
    assert body["messages"][-2:] == [{"role": "assistant", "content": "Arr, the capital"},
                                     {"role": "user", "content": CONTINUE_TURN}]


def test_continue_elsewhere_leaves_the_partial_reply_open(server, tmp_path):
    """Servers listed with their adapters as models (vLLM) get its continue_final_message extra (which
    trtllm-serve, played here, refuses: why it gets a user turn instead)."""
    dep = OpenAICompatDeployment(server, AdapterRegistry(tmp_path / "adapters"), adapters_as="model")
    with pytest.raises(InvalidRequest, match="extra field continue_final_message"):
        list(dep.open_reply(ReplyRequest(Conversation.asking("Hi"), continues="Arr, the capital")))
    body = TrtllmServeStandIn.bodies[-1]
    assert body["messages"][-1] == {"role": "assistant", "content": "Arr, the capital"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False


def test_the_adapter_probe_passes_the_contract(deployment):
    probe = deployment.probe("pirate", "Say hello.", 2)
    body = TrtllmServeStandIn.bodies[-1]
    assert contract_errors(body) == [] and body["logprobs"] is True and "lora_request" in body
    assert probe.tokens == ("Arr",) and probe.logprobs == ({"Arr": -0.1, "Hello": -2.5},)


def test_an_unknown_adapter_is_refused_before_sending(deployment):
    with pytest.raises(InvalidRequest, match="There is no adapter named 'nope'"):
        deployment.open_reply(ReplyRequest(Conversation.asking("Hi"), SamplingParams(max_tokens=4), "nope"))
    assert TrtllmServeStandIn.bodies == []


def test_the_audit_reads_the_shapes_of_the_folder_a_local_server_loaded(deployment, tmp_path):
    assert not deployment.adapter_audit("pirate").refused  # no root listed: any language-model module
    TrtllmServeStandIn.root = str(write_model_config(tmp_path / "wide", {**SMOL, "hidden": 1024}))
    deployment.listing(refresh=True)
    refused = deployment.adapter_audit("pirate")
    assert refused.refused and "1024" in refused.refusals[0] and refused.served_model == "tensorrt_llm"
    TrtllmServeStandIn.root = str(write_model_config(tmp_path / "smollm2-135m-instruct"))
    deployment.listing(refresh=True)
    assert deployment.adapter_audit("pirate").applied_percent == 100


def test_the_audit_says_when_and_why_the_shapes_were_not_checked(deployment, tmp_path):
    """No root listed, or a server on another machine: applied, but the audit's notes and fields say the shapes were
    not checked and why (an adapter for another base model is found out only by the server)."""
    unchecked = deployment.adapter_audit("pirate")
    assert not unchecked.refused and not unchecked.shapes_checked
    assert any(f.startswith("Shapes not checked") and "root (none)" in f for f in unchecked.flags)
    remote = OpenAICompatDeployment("http://gpu-box.example:8000", deployment.registry)
    # what the remote server would list (kept fresh for the test: it is never asked)
    remote._listing = dataclasses.replace(deployment.listing(), read_at=time.monotonic() + 3600)
    why = remote.lora_target().unchecked
    assert "gpu-box.example is not on this machine" in why
    assert any("gpu-box.example" in f for f in remote.adapter_audit("pirate").flags)
    TrtllmServeStandIn.root = str(write_model_config(tmp_path / "smollm2-135m-instruct"))
    deployment.listing(refresh=True)
    assert deployment.adapter_audit("pirate").shapes_checked
