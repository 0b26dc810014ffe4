"""`python -m app compare --app URL` when nothing answers there: one sentence naming the address."""

from __future__ import annotations

import pytest

from app.cli.app_client import compare_through_app
from app.core.errors import ChatError
from tests.servers import free_port


def test_an_app_that_is_not_there_is_one_sentence():
    url = f"http://127.0.0.1:{free_port()}/"
    with pytest.raises(ChatError, match=f"The app at {url} cannot be reached"):
        compare_through_app(url, "Hi", [None], 8)
