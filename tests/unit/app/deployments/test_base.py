"""The one adapter-name rule every caller uses (chat, benchmark, each deployment kind)."""

import pytest

from app.core.errors import InvalidRequest
from app.deployments.base import check_adapter_name


def test_no_adapter_is_the_base_model():
    assert check_adapter_name(None, ["pirate"]) is None
    assert check_adapter_name("", ["pirate"]) is None


def test_a_known_adapter_is_itself():
    assert check_adapter_name("pirate", ["french", "pirate"]) == "pirate"


@pytest.mark.parametrize(("known", "listed"), [(["pirate", "french"], "pirate, french"), ([], "none")])
def test_an_unknown_adapter_is_refused_naming_the_known_ones(known, listed):
    with pytest.raises(InvalidRequest) as caught:
        check_adapter_name("klingon", known)
    assert str(caught.value) == f"There is no adapter named 'klingon'. Known: {listed}."
