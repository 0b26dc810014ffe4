import pytest

from setup.repo.fill import FillError, fill, parse_fill_args, placeholders


def test_parse_plain_pairs():
    assert parse_fill_args("triton_max_batch_size:8,decoupled_mode:true") == {
        "triton_max_batch_size": "8", "decoupled_mode": "true"}


def test_escaped_comma_and_colon_kept_in_values():
    values = parse_fill_args(r"gpu_device_ids:0\,1,engine_dir:C\:/engines,url:http://host\:8000/x")
    assert values["gpu_device_ids"] == "0,1"
    assert values["engine_dir"] == "C:/engines"
    # only the first unescaped colon separates key and value
    assert values["url"] == "http://host:8000/x"


def test_empty_value_allowed_and_missing_colon_rejected():
    assert parse_fill_args("tokenizer_dir:") == {"tokenizer_dir": ""}
    with pytest.raises(FillError, match="no ':'"):
        parse_fill_args("tokenizer_dir")
    with pytest.raises(FillError, match="not a valid placeholder name"):
        parse_fill_args("bad-key:1")


def test_placeholders_found_in_both_forms_and_in_comments():
    text = "max_batch_size: ${a}\n# comment mentions $b\nname: \"x\"\n"
    assert placeholders(text) == {"a", "b"}


def test_fill_substitutes_and_refuses_leftovers():
    text = 'max_batch_size: ${bs}\nparameters: { key: "x" value: { string_value: "${x}" } }\n'
    assert "max_batch_size: 4" in fill(text, {"bs": 4, "x": "v"})
    with pytest.raises(FillError, match="no value for bs"):
        fill(text, {"x": "v"})


def test_optional_parameter_line_dropped_when_unset():
    text = 'max_batch_size: ${bs}\nparameters: { key: "x" value: { string_value: "${x}" } }\n'
    out = fill(text, {"bs": 1}, optional={"x"})
    assert "key: \"x\"" not in out and "${" not in out


def test_booleans_become_protobuf_text():
    assert fill("decoupled: ${d}", {"d": True}) == "decoupled: true"


def test_value_containing_dollar_is_not_a_leftover():
    assert fill("p: ${x}", {"x": "/data/$HOME"}) == "p: /data/$HOME"
