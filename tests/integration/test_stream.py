"""Real tritonserver + CPU engine: streamed text, cancellation that frees the engine, interleaving; the same read on
an event loop (gRPC's asyncio API, as the APIs read their replies)."""

import asyncio
import re
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from app.chat.prompts import PromptBuilder
from app.core.conversation import Conversation
from app.core.errors import InputTooLong, ModelNotReady, ServerUnreachable
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient
from app.triton.transport import LOOP_READS
from tests.servers import free_port
from tests.threads import run_async, run_in_threads

QUESTION = Conversation.asking("What is the capital of France?")


def prompt(history=QUESTION) -> str:
    return PromptBuilder(template_name="chatml").build(history)


@pytest.mark.parametrize("model", ["tensorrt_llm_bls", "ensemble"])
def test_streams_the_answer_token_by_token(triton, model):
    client = TritonChatClient(triton.grpc_url, model=model)
    stream = client.stream(prompt(), SamplingParams(max_tokens=32))
    deltas = list(stream)
    assert "Paris" in stream.text
    assert len(deltas) >= 5  # one response per token, not one blob
    assert "".join(deltas) == stream.text
    assert stream.time_to_first_token is not None and stream.time_to_first_token < 10


def test_bls_and_ensemble_agree(triton):
    history = Conversation.asking("Name three colours.")
    texts = [TritonChatClient(triton.grpc_url, model=m).generate(prompt(history), SamplingParams(max_tokens=24))
             for m in ("tensorrt_llm_bls", "ensemble")]
    assert texts[0] == texts[1] and texts[0].strip()


def test_token_by_token_chunks_rebuild_multibyte_text(triton, cpu_model_dir):
    """The postprocessing model turns each token into exact bytes; the client's assembler joins them."""
    from transformers import AutoTokenizer

    from app.triton.textstream import IncrementalText

    text = "Café naïve 3€ 😀 über"
    ids = AutoTokenizer.from_pretrained(cpu_model_dir).encode(text, add_special_tokens=False)
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    assembler = IncrementalText(accumulated=False)
    for token in ids:  # one request per token, exactly as streamed responses arrive
        tokens = grpcclient.InferInput("TOKENS_BATCH", [1, 1, 1], "INT32")
        tokens.set_data_from_numpy(np.array([[[token]]], np.int32))
        length = grpcclient.InferInput("SEQUENCE_LENGTH", [1, 1], "INT32")
        length.set_data_from_numpy(np.array([[1]], np.int32))
        chunk = client.infer("postprocessing", [tokens, length]).as_numpy("OUTPUT").reshape(-1)[0]
        assert "\ufffd" not in assembler.feed(chunk)
    assembler.finish()
    assert assembler.text == text


@pytest.mark.parametrize("model", ["tensorrt_llm_bls", "ensemble"])
def test_finish_reason_says_whether_max_tokens_cut_the_reply(triton, model):
    """The engine does not say why it stopped; the stream counts its tokens against max_tokens."""
    client = TritonChatClient(triton.grpc_url, model=model)
    greedy = SamplingParams(max_tokens=40, top_k=1)
    whole = client.stream(prompt(), greedy)
    assert whole.finish_reason is None  # not ended yet
    list(whole)
    assert whole.finish_reason == "stop" and "Paris" in whole.text
    cut = client.stream(prompt(), SamplingParams(max_tokens=3, top_k=1))
    list(cut)
    assert cut.finish_reason == "length" and cut.tokens == 3
    assert whole.text.startswith(cut.text) and len(cut.text) < len(whole.text)
    stopped = client.stream(prompt(Conversation.asking("Write a very long story about a dragon.")),
                            SamplingParams(max_tokens=400))
    next(stopped)
    stopped.cancel()
    assert list(stopped) == [] and stopped.finish_reason is None


def test_finish_reason_passes_through_the_engine_deployment(app_served):
    """TritonEngineDeployment.open_reply (an AdapterStream, with and without an adapter) reports the ending."""
    from app.deployments.base import ReplyRequest

    deployment = app_served[0].deployment
    for adapter in (None, "pirate"):
        stream = deployment.open_reply(ReplyRequest(QUESTION, SamplingParams(max_tokens=2, top_k=1), adapter))
        list(stream)
        assert stream.text and stream.finish_reason == "length", adapter


def test_continue_goes_on_with_a_cut_reply_inside_the_assistant_turn(app_served):
    """Greedy: the cut reply plus its continuation read as the reply that was never cut."""
    from app.deployments.base import ReplyRequest

    deployment = app_served[0].deployment

    def greedy(tokens: int, continues: str = ""):
        stream = deployment.open_reply(ReplyRequest(QUESTION, SamplingParams(max_tokens=tokens, top_k=1),
                                                    continues=continues))
        list(stream)
        return stream

    whole, cut = greedy(24), greedy(4)
    rest = greedy(20, continues=cut.text)
    assert cut.finish_reason == "length" and cut.text
    assert (cut.text + rest.text).startswith(whole.text[:len(cut.text) + 8]), (cut.text, rest.text, whole.text)
    assert not rest.text.startswith(cut.text)  # only the new text


def read_on_a_loop(open_stream, cancel_after: int | None = None):
    """open_stream() on an event loop of its own thread with LOOP_READS naming that loop, read there as the APIs read
    (await ready(), then next()); cancelled there after `cancel_after` deltas. Returns (stream, deltas)."""
    async def main():
        LOOP_READS.set(asyncio.get_running_loop())
        stream = open_stream()
        deltas = []
        try:
            while True:
                await stream.ready()
                delta = next(stream)
                if delta:
                    deltas.append(delta)
                if cancel_after is not None and len(deltas) == cancel_after:
                    stream.cancel()
        except StopIteration:
            pass
        return stream, deltas

    return run_async(main(), timeout=120)


@pytest.mark.parametrize("model", ["tensorrt_llm_bls", "ensemble"])
def test_a_stream_read_on_the_loop_gives_the_threads_text_token_by_token(triton, model):
    client = TritonChatClient(triton.grpc_url, model=model)
    on_thread = client.stream(prompt(), SamplingParams(max_tokens=32))
    expected = list(on_thread)
    stream, deltas = read_on_a_loop(lambda: client.stream(prompt(), SamplingParams(max_tokens=32)))
    assert stream.reads_on_loop and not on_thread.reads_on_loop
    assert deltas == expected and stream.text == on_thread.text and "Paris" in stream.text  # greedy: the same
    assert stream.finish_reason == on_thread.finish_reason


def engine_log_lines(triton) -> list[str]:
    return [line for line in triton.process.log_path.read_text().splitlines() if "cpu engine: request" in line]


@pytest.mark.parametrize("model", ["tensorrt_llm_bls", "ensemble"])
def test_cancel_stops_generation_on_the_server(triton, model):
    client = TritonChatClient(triton.grpc_url, model=model)
    before = len(engine_log_lines(triton))
    stream = client.stream(prompt(Conversation.asking("Write a very long story about a dragon.")),
                           SamplingParams(max_tokens=400))
    for index, _ in enumerate(stream):
        if index == 2:
            stream.cancel()
    assert stream.cancelled
    deadline = time.monotonic() + 10
    while len(engine_log_lines(triton)) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    line = engine_log_lines(triton)[-1]
    tokens = int(re.search(r"ended after (\d+) tokens", line).group(1))
    assert tokens < 40, line  # stopped long before its 400-token budget
    # the slot is free: a new request is served at once
    assert "Paris" in client.generate(prompt(), SamplingParams(max_tokens=16))


@pytest.mark.parametrize("model", ["tensorrt_llm_bls", "ensemble"])
def test_cancel_of_a_stream_read_on_the_loop_stops_generation_on_the_server(triton, model):
    client = TritonChatClient(triton.grpc_url, model=model)
    before = len(engine_log_lines(triton))
    stream, deltas = read_on_a_loop(lambda: client.stream(
        prompt(Conversation.asking("Write a very long story about a dragon.")), SamplingParams(max_tokens=400)),
        cancel_after=3)
    assert stream.cancelled and len(deltas) == 3
    deadline = time.monotonic() + 10
    while len(engine_log_lines(triton)) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    line = engine_log_lines(triton)[-1]
    assert int(re.search(r"ended after (\d+) tokens", line).group(1)) < 40, line


def test_concurrent_requests_progress_together(triton):
    client = TritonChatClient(triton.grpc_url)

    def one(i):
        stream = client.stream(prompt(Conversation.asking(f"Count from 1 to {10 + i}.")),
                               SamplingParams(max_tokens=30))
        start = time.monotonic()
        first = None
        for _ in stream:
            first = first or time.monotonic() - start
        return first, time.monotonic() - start

    results = run_in_threads(one, 3)
    firsts, ends = [r[0] for r in results], [r[1] for r in results]
    assert max(firsts) < min(ends), results  # everybody started before anybody finished


def test_long_prompt_is_refused_with_a_plain_message(triton):
    long_text = "word " * 2500  # over the CPU engine's max_input_len of 2048 tokens
    client = TritonChatClient(triton.grpc_url)
    with pytest.raises(InputTooLong, match=r"Prompt length \(\d+\) exceeds maximum input length \(2048\)"):
        client.generate(prompt(Conversation.asking(long_text)), SamplingParams(max_tokens=8))


def test_status_and_unknown_model(triton):
    assert TritonChatClient(triton.grpc_url).status().model_ready
    with pytest.raises(ModelNotReady):
        TritonChatClient(triton.grpc_url, model="no_such_model").model_info()


def test_unreachable_server_is_reported():
    client = TritonChatClient(f"127.0.0.1:{free_port()}")
    assert not client.status().live
    with pytest.raises(ServerUnreachable):
        client.model_info()


def engine_request(triton, inputs: dict, request_id="t"):
    """Call the tensorrt_llm model directly (decoupled) and collect output ids."""
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    results = []
    client.start_stream(callback=lambda result, error: results.append((result, error)))
    tensors = []
    for name, array in inputs.items():
        t = grpcclient.InferInput(name, list(array.shape), {np.int32: "INT32", np.bool_: "BOOL", np.uint64: "UINT64",
                                                            np.float32: "FP32"}[array.dtype.type])
        t.set_data_from_numpy(array)
        tensors.append(t)
    client.async_stream_infer("tensorrt_llm", tensors, request_id=request_id, enable_empty_final_response=True)
    client.stop_stream()
    errors = [e for _, e in results if e is not None]
    assert not errors, errors
    ids = [r.as_numpy("output_ids") for r, _ in results if r.as_numpy("output_ids") is not None]
    return [int(x) for chunk in ids for x in chunk.reshape(-1)]


def test_engine_contract_direct(triton, cpu_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(cpu_model_dir)
    ids = tok.encode(prompt())
    base = {"input_ids": np.array([ids], np.int32), "input_lengths": np.array([[len(ids)]], np.int32),
            "request_output_len": np.array([[12]], np.int32), "end_id": np.array([[tok.eos_token_id]], np.int32)}
    # non-streaming without exclude_input_in_output returns prompt + completion (backend default here is exclude)
    full = engine_request(triton, {**base, "exclude_input_in_output": np.array([[False]])})
    assert full[: len(ids)] == ids and len(full) > len(ids)
    only_new = engine_request(triton, {**base, "exclude_input_in_output": np.array([[True]])})
    assert only_new == full[len(ids):]
    # a stop word ends generation right after it appears
    stop = tok.encode(" Paris", add_special_tokens=False)
    words = np.array([[stop + [0], [len(stop), -1]]], np.int32)
    stopped = engine_request(triton, {**base, "exclude_input_in_output": np.array([[True]]),
                                      "stop_words_list": words})
    assert stopped[-len(stop):] == stop and len(stopped) < len(only_new)
    # sampling with a fixed seed is repeatable; another seed may differ
    sampled = {**base, "runtime_top_k": np.array([[50]], np.int32), "temperature": np.array([[1.5]], np.float32),
               "exclude_input_in_output": np.array([[True]]), "request_output_len": np.array([[20]], np.int32)}
    a = engine_request(triton, {**sampled, "random_seed": np.array([[123]], np.uint64)})
    b = engine_request(triton, {**sampled, "random_seed": np.array([[123]], np.uint64)})
    assert a == b
    # top_k 1 is greedy whatever top_p and temperature say (top-k, then top-p, as TensorRT-LLM samples)
    top_one = {**sampled, "runtime_top_k": np.array([[1]], np.int32), "runtime_top_p": np.array([[1.0]], np.float32)}
    greedy = {**sampled, "runtime_top_k": np.array([[0]], np.int32)}
    for seed in (1, 2):
        assert engine_request(triton, {**top_one, "random_seed": np.array([[seed]], np.uint64)}) == \
            engine_request(triton, greedy)


def test_demo_repository_serves_the_pacing_model_at_its_rate(triton):
    """`python -m app --demo --pacing-rate R`: the pacing model beside the demo's models, words at R per second."""
    from tests.servers import DEMO_PACING_RATE

    stream = TritonChatClient(triton.grpc_url, model="pacing").stream("hi", SamplingParams(max_tokens=21))
    times = []
    for _ in stream:
        times.append(time.monotonic())
    assert stream.text.split()[:3] == ["alpha", "bravo", "charlie"] and len(stream.text.split()) == 21
    expected = (len(times) - 1) / DEMO_PACING_RATE  # it paces: never faster, and not stuck (loose upper bound)
    assert 0.9 * expected <= times[-1] - times[0] < 5 * expected, times[-1] - times[0]
