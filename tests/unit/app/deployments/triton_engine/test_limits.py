"""app/deployments/triton_engine/limits.py: max_input_len read from engine config.json files (real files), which
model runs the engine (BLS, ensemble, engine itself), what happens while the server cannot say, and the
token check. The server is a stand-in that answers model configs; the AppContext path is in
tests/integration/test_request_bounds.py."""

from __future__ import annotations

import json

import pytest

from app.core.errors import ChatError, InputTooLong, ModelNotReady, ServerUnreachable
from app.deployments.triton_engine.limits import (
    UNKNOWN,
    check_prompt_tokens,
    engine_input_limit,
    engine_model,
    read_input_limit,
)
from app.triton.client import ModelInfo


def engine_folder(tmp_path, name: str, config) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    return str(folder)


@pytest.mark.parametrize("config, limit", [
    ({"build_config": {"max_input_len": 2048}}, 2048),
    ({"builder_config": {"max_input_len": 512}}, 512),  # engines before TensorRT-LLM 0.8
    ({"build_config": {"max_input_len": 0}}, None),
    ({"build_config": {"max_input_len": True}}, None),
    ({"build_config": {"max_input_len": "2048"}}, None),
    ({"build_config": None}, None),
    ({"build_config": [1]}, None),
    ({"pretrained_config": {}}, None),
    ([1, 2], None),
    ("{broken", None),
])
def test_engine_input_limit(tmp_path, config, limit):
    assert engine_input_limit(engine_folder(tmp_path, "engine", config)) == limit


def test_an_engine_folder_without_config_has_no_limit(tmp_path):
    assert engine_input_limit(tmp_path) is None and engine_input_limit(tmp_path / "absent") is None


def param(value: str) -> dict:
    return {"string_value": value}


class Server:
    """Answers model_info() for the chat model and model_config(name) for others, or raises `error`."""

    def __init__(self, chat: dict, configs: dict | None = None, error: Exception | None = None):
        self.chat, self.configs, self.error = chat, configs or {}, error
        self.asked: list[str] = []

    def model_info(self) -> ModelInfo:
        if self.error is not None:
            raise self.error
        return ModelInfo.from_config(self.chat)

    def model_config(self, name: str) -> dict:
        self.asked.append(name)
        if name not in self.configs:
            raise ModelNotReady(f"no model {name}")
        return self.configs[name]


ENSEMBLE = {"name": "ensemble", "ensemble_scheduling": {"step": [{"model_name": "preprocessing"},
                                                               {"model_name": "tensorrt_llm"}]}}


@pytest.mark.parametrize("chat, engine", [
    (ENSEMBLE, "tensorrt_llm"),
    ({"name": "tensorrt_llm_bls", "parameters": {"tensorrt_llm_model_name": param("my_engine")}}, "my_engine"),
    ({"name": "tensorrt_llm_bls", "parameters": {"tensorrt_llm_model_name": param("${tensorrt_llm_model_name}")}},
     "tensorrt_llm"),  # a template never filled in: the default name
    ({"name": "tensorrt_llm_bls", "parameters": {"tensorrt_llm_model_name": param("")}}, "tensorrt_llm"),
    ({"name": "cpu_llm", "parameters": {"gpt_model_path": param("/engines/x")}}, "cpu_llm"),
    ({"name": "python_echo"}, None),
])
def test_engine_model(chat, engine):
    assert engine_model(Server(chat)) == engine


def test_the_limit_is_read_from_the_engine_models_gpt_model_path(tmp_path):
    path = engine_folder(tmp_path, "engine", {"build_config": {"max_input_len": 300}})
    server = Server(ENSEMBLE, {"tensorrt_llm": {"parameters": {"gpt_model_path": param(path)}}})
    assert read_input_limit(server, None) == 300 and server.asked == ["tensorrt_llm"]


def test_a_given_engine_folder_wins_and_the_server_is_not_asked(tmp_path):
    path = engine_folder(tmp_path, "engine", {"build_config": {"max_input_len": 64}})
    server = Server(ENSEMBLE, error=ServerUnreachable("down"))
    assert read_input_limit(server, path) == 64


def test_an_unreadable_given_folder_falls_back_to_the_server(tmp_path):
    path = engine_folder(tmp_path, "engine", {"build_config": {"max_input_len": 77}})
    server = Server(ENSEMBLE, {"tensorrt_llm": {"parameters": {"gpt_model_path": param(path)}}})
    assert read_input_limit(server, str(tmp_path / "absent")) == 77


@pytest.mark.parametrize("error", [ServerUnreachable("down"), ModelNotReady("loading")])
def test_while_the_server_cannot_say_the_limit_is_unknown(error):
    assert read_input_limit(Server(ENSEMBLE, error=error), None) is UNKNOWN


def test_other_server_errors_mean_no_limit():
    assert read_input_limit(Server(ENSEMBLE, error=ChatError("odd model")), None) is None


def test_an_engine_model_that_is_not_loaded_yet_is_unknown():
    assert read_input_limit(Server(ENSEMBLE, {}), None) is UNKNOWN


@pytest.mark.parametrize("chat, configs", [
    ({"name": "python_echo"}, {}),  # no engine model at all
    (ENSEMBLE, {"tensorrt_llm": {"parameters": {}}}),  # the engine does not say where it is
    (ENSEMBLE, {"tensorrt_llm": {}}),
])
def test_no_limit_to_read(chat, configs):
    assert read_input_limit(Server(chat, configs), None) is None


class WordCounter:
    @staticmethod
    def count_tokens(prompt: str) -> int:
        return len(prompt.split())


class NoTokenizer:
    @staticmethod
    def count_tokens(prompt: str) -> None:
        return None


def test_prompt_token_check():
    check_prompt_tokens(None, WordCounter, "a " * 10_000)  # no limit
    check_prompt_tokens(3, WordCounter, "a b c")
    check_prompt_tokens(3, NoTokenizer, "a b c d")  # cannot count: the server's own check applies
    with pytest.raises(InputTooLong, match="4 tokens.*at most 3"):
        check_prompt_tokens(3, WordCounter, "a b c d")
