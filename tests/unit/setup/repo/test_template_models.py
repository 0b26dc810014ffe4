"""The template Python models (BLS, preprocessing, postprocessing) run against a stand-in for
triton_python_backend_utils: per-sequence streams, stop words kept and searched after an echoed
prompt, valid UTF-8 deltas, decoder ids, prompt-table extra ids, BOS and postprocessing modes."""

import types

import numpy as np
import pytest

from tests.template_models import StandInTensor, load_template_model


class _Response:
    def __init__(self, tensors=(), error=None):
        self.tensors, self.error_value = {t.name: t for t in tensors}, error

    def has_error(self):
        return self.error_value is not None

    def error(self):
        return types.SimpleNamespace(message=lambda: self.error_value)


class _Sender:
    def __init__(self):
        self.sent = []

    def is_cancelled(self):
        return False

    def send(self, response=None, flags=0):
        self.sent.append((response, flags))


def _stub(models):
    """A triton_python_backend_utils whose InferenceRequest.exec calls models[model_name](inputs)."""
    stub = types.ModuleType("triton_python_backend_utils")
    stub.Tensor = StandInTensor
    stub.TritonError = lambda text: text
    stub.InferenceResponse = lambda tensors=(), error=None: _Response(tensors, error)
    stub.TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
    stub.get_input_tensor_by_name = lambda request, name: (
        StandInTensor(name, request[name]) if request.get(name) is not None else None)
    stub.get_output_tensor_by_name = lambda response, name: response.tensors.get(name)
    stub.using_decoupled_model_transaction_policy = lambda config: config["model_transaction_policy"]["decoupled"]

    class InferenceRequest:
        def __init__(self, model_name, inputs, requested_output_names, request_id=""):
            self.model_name, self.inputs = model_name, {t.name: t.value for t in inputs}

        def exec(self, decoupled=False):
            result = models[self.model_name](self.inputs)
            return iter(result) if decoupled else result

    stub.InferenceRequest = InferenceRequest
    return stub


def _load(relative, models=None):
    return load_template_model(relative, _stub(models or {}))


def _response(**tensors):
    return _Response([StandInTensor(k, v) for k, v in tensors.items()])


PROMPT = [ord(c) for c in "Q?"]


def _preprocessing(inputs):
    return _response(INPUT_ID=np.array([PROMPT], np.int32), REQUEST_INPUT_LEN=np.array([[len(PROMPT)]], np.int32),
                     REQUEST_OUTPUT_LEN=inputs["REQUEST_OUTPUT_LEN"])


def _postprocessing(inputs):
    """Token id = Unicode code point, one byte string per beam (id 0xE9 is sent as two halves: 1000, 1001)."""
    tokens, lengths = inputs["TOKENS_BATCH"][0], inputs["SEQUENCE_LENGTH"][0]
    texts = []
    for row, length in zip(tokens, lengths, strict=True):
        data = b"".join(b"\xc3" if t == 1000 else b"\xa9" if t == 1001 else chr(t).encode() for t in row[:length])
        texts.append(data)
    return _response(OUTPUT=np.array([texts], dtype=object))


def _engine(responses):
    """tensorrt_llm answering with (sequence index, token ids) pairs, one response each."""
    def run(inputs):
        return [_response(output_ids=np.array([[ids]], np.int32), sequence_length=np.array([[len(ids)]], np.int32),
                          sequence_index=np.array([[index]], np.int32)) for index, ids in responses]
    return run


def _bls(responses, accumulate=False, exclude_input=True):
    module = _load("inflight_batcher_llm/tensorrt_llm_bls/1/model.py", {
        "preprocessing": _preprocessing, "postprocessing": _postprocessing, "tensorrt_llm": _engine(responses)})
    bls = module.TritonPythonModel()
    bls.decoupled, bls.accumulate, bls.exclude_input = True, accumulate, exclude_input
    bls.llm_name, bls.encoders_name, bls.engine_names = "tensorrt_llm", "", {}
    bls.finished_streams = module.FinishedStreams()
    return module, bls


def _request(stream=True, stop=(), **extra):
    request = {"text_input": np.array([[b"Q?"]], object), "max_tokens": np.array([[8]], np.int32),
               "stream": np.array([[stream]], bool), **extra}
    if stop:
        request["stop_words"] = np.array([[w.encode() for w in stop]], object)
    return request


def _texts(sender):
    return [(r.tensors["text_output"].value.reshape(-1)[0].decode(),
             int(r.tensors["sequence_index"].value.reshape(-1)[0]) if "sequence_index" in r.tensors else None)
            for r, _ in sender.sent if r is not None]


def test_each_returned_sequence_streams_on_its_own():
    _, bls = _bls([(0, [ord("a")]), (1, [ord("x")]), (0, [ord("b")]), (1, [ord("y")])])
    sender = _Sender()
    bls._run(_request(num_return_sequences=np.array([[2]], np.int32)), sender)
    assert _texts(sender) == [("a", 0), ("x", 1), ("b", 0), ("y", 1)]
    _, bls = _bls([(0, [ord("a")]), (1, [ord("x")]), (0, [ord("b")]), (1, [ord("y")])], accumulate=True)
    sender = _Sender()
    bls._run(_request(num_return_sequences=np.array([[2]], np.int32)), sender)
    assert _texts(sender) == [("a", 0), ("x", 1), ("ab", 0), ("xy", 1)]


def test_non_streamed_sequences_are_separate_responses():
    _, bls = _bls([(0, [ord(c) for c in "one"]), (1, [ord(c) for c in "two"])])
    sender = _Sender()
    bls._run(_request(stream=False, num_return_sequences=np.array([[2]], np.int32)), sender)
    assert _texts(sender) == [("one", 0), ("two", 1)]


def test_stop_word_is_kept_and_the_engine_stopped():
    stopped = []
    module, bls = _bls([(0, [ord(c)]) for c in "Hi User: more"])
    bls._stop_engine = stopped.append
    sender = _Sender()
    bls._run(_request(stop=["User:"]), sender)
    assert "".join(t for t, _ in _texts(sender)) == "Hi User:"
    assert len(stopped) == 1


def test_stop_word_in_an_echoed_prompt_does_not_end_the_answer():
    module, bls = _bls([(0, PROMPT + [ord(c) for c in " fine. Q? again"])], exclude_input=False)
    sender = _Sender()
    bls._run(_request(stream=False, stop=["Q?"]), sender)
    assert _texts(sender) == [("Q? fine. Q?", 0)]
    assert module.stop_end("Q? answer", ["Q?"], start=2) is None


def test_deltas_hold_back_a_character_until_its_bytes_are_complete():
    _, bls = _bls([(0, [ord("a")]), (0, [1000]), (0, [1001]), (0, [ord("b")])])
    sender = _Sender()
    bls._run(_request(), sender)
    chunks = [t for t, _ in _texts(sender)]
    assert chunks == ["a", "é", "b"] and all("\ufffd" not in c for c in chunks)


def test_stream_that_ends_mid_character_flushes_it():
    _, bls = _bls([(0, [ord("a")]), (0, [1000])])
    sender = _Sender()
    bls._run(_request(), sender)
    assert "".join(t for t, _ in _texts(sender)) == "a\ufffd"


def test_several_sequences_need_decoupled_mode():
    _, bls = _bls([])
    bls.decoupled = False
    response = bls._run(_request(stream=False, num_return_sequences=np.array([[2]], np.int32)), None)
    assert "decoupled_mode" in response.error_value


class _Tokenizer:
    bos_token = "<s>"

    def encode(self, text, add_special_tokens=False):
        return ([1] if add_special_tokens else []) + [ord(c) for c in text]

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if not (skip_special_tokens and i == 1))


def _preprocessing_model(add_special_tokens=True):
    module = _load("inflight_batcher_llm/preprocessing/1/model.py")
    model = module.TritonPythonModel()
    model.tokenizer, model.add_special_tokens, model.max_images = _Tokenizer(), add_special_tokens, 0
    model.end_id, model.pad_id, model.vocab_size, model.fake_base = 2, 0, 1000, 1000
    model.pre_prompt = model.post_prompt = ""
    return module, model


def test_special_tokens_by_default_but_never_a_second_bos():
    _, model = _preprocessing_model()
    assert model._encode("hi", 0) == [1, ord("h"), ord("i")]
    assert model._encode("<s>hi", 0) == [ord(c) for c in "<s>hi"]
    _, model = _preprocessing_model(add_special_tokens=False)
    assert model._encode("hi", 0) == [ord("h"), ord("i")]


def test_decoder_ids_and_prompt_table_extra_ids():
    _, model = _preprocessing_model(add_special_tokens=False)
    base = {"QUERY": np.array([[b"ab"]], object), "REQUEST_OUTPUT_LEN": np.array([[4]], np.int32)}
    out = model._one(base).tensors
    assert out["DECODER_INPUT_ID"].value.tolist() == [[0]] and out["REQUEST_DECODER_INPUT_LEN"].value.tolist() == [[1]]
    assert "OUT_PROMPT_TABLE_EXTRA_IDS" not in out
    out = model._one({**base, "DECODER_QUERY": np.array([[b"xyz"]], object)}).tensors
    assert out["DECODER_INPUT_ID"].value.tolist() == [[ord("x"), ord("y"), ord("z")]]
    assert out["REQUEST_DECODER_INPUT_LEN"].value.tolist() == [[3]]
    module, _ = _preprocessing_model()
    ids = np.array([[5, 1000, 1001, 7]], np.int32)
    extra = module.extra_ids(ids, np.array([[42]], np.uint64), 1000)
    assert extra.dtype == np.uint64 and extra.tolist() == [[0, 42, 42, 0]]


@pytest.mark.parametrize("name", ["IMAGE_BYTES", "VIDEO_BYTES"])
def test_image_bytes_and_video_are_refused_in_a_sentence(name):
    module, _ = _preprocessing_model()
    with pytest.raises(ValueError, match="server-side image processor"):
        module.image_count({name: np.zeros((1, 1, 4, 4, 3), np.uint8)}, 2)


def test_postprocessing_gives_text_by_default_and_token_bytes_when_asked():
    module = _load("inflight_batcher_llm/postprocessing/1/model.py")
    model = module.TritonPythonModel()
    model.tokenizer, model.skip_special, model.table = _Tokenizer(), True, None
    assert model._decode([1, ord("o"), ord("k")]) == b"ok"
    model.table = [b"", b"<s>", b"\xc3", b"\xa9"]
    assert model._decode([2, 3]) == "é".encode()


def test_family_wrapping_as_upstream_preprocessing_does_it():
    """llava: 'USER:\\n' + image + question + ' ASSISTANT:' (v0.19 preprocessing), from the family's data."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2 as pb

    from setup.catalog.builds import families
    from setup.repo.writer import DeploymentConfig, parameter_specs, render_model

    wrap = families()["llava-1.5"].triton["server_prompt"]
    config = DeploymentConfig(template="multimodal", parameters={
        "engine_dir": "/e", "tokenizer_dir": "/t", "multimodal_model_path": "/v", **wrap})
    written = text_format.Parse(render_model("preprocessing", config, parameter_specs()), pb.ModelConfig())
    pre, post = (written.parameters[k].string_value for k in ("pre_prompt", "post_prompt"))
    assert (pre, post) == ("USER:\n", " ASSISTANT:")
    _, model = _preprocessing_model(add_special_tokens=False)
    model.pre_prompt, model.post_prompt, model.marker, model.image_tokens = pre, post, "<image>", 2
    encode = model.tokenizer.encode
    assert model._encode("Hi?", 1) == encode("USER:\n") + [1000, 1001] + encode("Hi? ASSISTANT:")
    assert model._encode("a<image>b", 1) == encode("USER:\na") + [1000, 1001] + encode("b ASSISTANT:")
    assert model._encode("Hi?", 0) == encode("USER:\nHi? ASSISTANT:")


def _multimodal_bls(preprocessing, encoder, seen):
    """The BLS in the multimodal layout; the engine records the inputs it was given."""
    def engine(inputs):
        seen.append(inputs)
        return _engine([(0, [ord("k")])])(inputs)
    module = _load("inflight_batcher_llm/tensorrt_llm_bls/1/model.py", {
        "preprocessing": preprocessing, "multimodal_encoders": encoder, "postprocessing": _postprocessing,
        "tensorrt_llm": engine})
    bls = module.TritonPythonModel()
    bls.initialize({"model_config": '{"model_transaction_policy": {"decoupled": true}, "parameters": '
                                    '{"multimodal_encoders_name": {"string_value": "multimodal_encoders"}}}'})
    return bls


def test_the_encoder_runs_beside_preprocessing_and_its_rows_reach_the_engine():
    import threading

    both = threading.Barrier(2, timeout=10)  # one after the other, the first call would wait here alone

    def preprocessing(inputs):
        both.wait()
        return _preprocessing(inputs)

    def encoder(inputs):
        both.wait()
        return _response(OUT_PROMPT_EMBEDDING_TABLE=np.ones((1, 3, 4), np.float16),
                         OUT_PROMPT_VOCAB_SIZE=np.array([[3]], np.int32))

    seen, sender = [], _Sender()
    bls = _multimodal_bls(preprocessing, encoder, seen)
    bls._run(_request(image_input=np.zeros((1, 3, 8, 8), np.float16)), sender)
    bls.finalize()
    assert _texts(sender) == [("k", 0)]
    assert seen[0]["prompt_embedding_table"].shape == (1, 3, 4) and seen[0]["prompt_vocab_size"].tolist() == [[3]]


def test_a_preprocessing_error_is_the_one_reported_when_both_fail():
    def failing(message):
        return lambda inputs: _Response(error=message)

    seen, sender = [], _Sender()
    bls = _multimodal_bls(failing("The prompt has 2 image marker(s)"), failing("encoder broke"), seen)
    bls._run(_request(image_input=np.zeros((1, 3, 8, 8), np.float16)), sender)
    bls.finalize()
    (response, flags), = sender.sent
    assert "2 image marker(s)" in str(response.error_value) and flags == 1 and not seen


def test_the_bls_drops_a_finished_engine_stream_after_the_stub_does():
    """The python backend's stub keeps its own reference to a decoupled BLS response iterator and drops it on its
    service thread after the final response; stubs before python_backend PR #390 (nvidia-pytriton 0.7.0's among them)
    free the responses' arrays there without the GIL when theirs is the last reference, and the stub segfaults under
    concurrent streams. Here the stand-in stub drops its reference after the request ended; the BLS must still hold
    the stream then, and free it on a thread of its own (finalize, here)."""
    import threading

    freed_on, stub_references = [], []

    class EngineStream:  # the stub's ResponseIterator
        def __init__(self, responses):
            self._responses = iter(responses)

        def __iter__(self):
            return self

        def __next__(self):
            return next(self._responses)

        def __del__(self):
            freed_on.append(threading.current_thread().name)

    def engine(inputs):
        stream = EngineStream(_engine([(0, [ord("o")]), (0, [ord("k")])])(inputs))
        stub_references.append(stream)
        return stream

    module = _load("inflight_batcher_llm/tensorrt_llm_bls/1/model.py", {
        "preprocessing": _preprocessing, "postprocessing": _postprocessing, "tensorrt_llm": engine})
    bls = module.TritonPythonModel()
    bls.initialize({"model_config": '{"model_transaction_policy": {"decoupled": true}}'})
    sender = _Sender()
    bls._run(_request(), sender)
    assert "".join(t for t, _ in _texts(sender)) == "ok"
    service = threading.Thread(target=stub_references.clear, name="stub-service-thread")
    service.start()
    service.join()
    assert freed_on == [], "the stub's service thread dropped the last reference"
    bls.finalize()
    assert freed_on == [threading.current_thread().name]


class _AskingFor(dict):
    """A request whose client names the outputs it wants."""

    def __init__(self, names, inputs):
        super().__init__(inputs)
        self.names = names

    def requested_output_names(self):
        return self.names


def test_a_response_carries_only_the_outputs_the_client_asked_for():
    """The stub's send() drops the others with the GIL released, and older stubs free their arrays there without it
    (python_backend PR #390): the BLS leaves them out itself."""
    _, bls = _bls([(0, [ord("o")]), (0, [ord("k")])])
    sender = _Sender()
    bls._run(_AskingFor(["text_output"], _request()), sender)
    sent = [response for response, _ in sender.sent if response is not None]
    assert [set(response.tensors) for response in sent] == [{"text_output"}] * len(sent) and len(sent) == 2
    sender = _Sender()
    bls._run(_AskingFor([], _request()), sender)  # none named: all of them, as Triton sends them
    assert all("sequence_index" in response.tensors for response, _ in sender.sent if response is not None)
