"""app/chat/adapter_names.py: the one rule for which adapter a name picks, and every surface that follows it."""

import pytest

from app.api.openai_schema import model_is_base
from app.chat.adapter_names import adapter_named
from app.chat.compare import column_names
from app.web.labels import BUILT_IN_LABEL, adapter_of


@pytest.mark.parametrize("name", [None, "", "  ", "base model", " base model ",
                                  BUILT_IN_LABEL.format(adapter="plora")])
def test_names_of_the_base_model(name):
    assert adapter_named(name) is None
    assert adapter_of(name) is None
    assert column_names([name]) == [None]


def test_any_other_name_is_an_adapter_spaces_ignored():
    assert adapter_named(" pirate ") == "pirate"
    assert adapter_of("pirate") == "pirate"
    assert column_names(["pirate", "base model"]) == ["pirate", None]


def test_v1_also_takes_the_served_models_name_for_the_base():
    assert model_is_base("SmolLM2", "SmolLM2") and model_is_base("base model", "SmolLM2") and model_is_base("", "x")
    assert not model_is_base("pirate", "SmolLM2")
