"""A model folder's generation_config.json as the sampling defaults of API requests (the fields vLLM reads)."""

from __future__ import annotations

import json

from app.deployments.generation_defaults import read_generation_defaults


def test_the_sampling_fields_are_read_and_the_rest_is_not(tmp_path):
    (tmp_path / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 1, "do_sample": True, "temperature": 0.2, "top_p": 0.9, "top_k": 50, "max_new_tokens": 9,
         "repetition_penalty": 1.05}))
    assert read_generation_defaults(tmp_path) == {"temperature": 0.2, "top_p": 0.9, "top_k": 50,
                                                  "repetition_penalty": 1.05}


def test_no_folder_no_file_bad_json_or_out_of_bounds_values_give_no_defaults(tmp_path):
    assert read_generation_defaults(None) == {} and read_generation_defaults(tmp_path) == {}
    (tmp_path / "generation_config.json").write_text("{not json")
    assert read_generation_defaults(tmp_path) == {}
    (tmp_path / "generation_config.json").write_text(json.dumps({"temperature": 7, "top_p": "0.9", "top_k": True}))
    assert read_generation_defaults(tmp_path) == {}
    (tmp_path / "generation_config.json").write_text(json.dumps({"temperature": 0}))
    assert read_generation_defaults(tmp_path) == {"temperature": 0}  # greedy, as in a request
