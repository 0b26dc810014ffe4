"""The Gradio API: the chat panel's job scripted with gradio_client."""

import pytest
from gradio_client import Client

pytestmark = pytest.mark.integration


def test_generate_streams_growing_reply(app_url):
    client = Client(app_url, verbose=False)
    job = client.submit(text="What is the capital of France?", max_tokens=32, api_name="/generate")
    updates = list(job)
    assert len(updates) >= 3
    assert all(updates[i + 1].startswith(updates[i]) for i in range(len(updates) - 1))
    assert "Paris" in updates[-1]


@pytest.mark.parametrize("kwargs, message", [
    ({"text": ""}, "Type a message first."),
    ({"text": "hi", "temperature": 0}, "temperature must be between"),
    ({"text": "hi", "max_tokens": 0}, "max tokens must be between"),
])
def test_bad_input_gets_its_message(app_url, kwargs, message):
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match=message):
        client.predict(**kwargs, api_name="/generate")
