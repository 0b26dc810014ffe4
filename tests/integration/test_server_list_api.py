"""Servers as a per-session choice, through the APIs: the Gradio API lists servers, adds one (behind the launch
token) and takes a `deployment` id on generate and compare; `/v1/models` lists the other servers' models under
their id's prefix, and a chat completion with such a name goes to that server and names it back."""

from __future__ import annotations

import httpx
import pytest
from gradio_client import Client

from app.context import AppConfig, AppContext
from app.web.ui import launch
from tests.servers import free_port


@pytest.fixture
def two_server_app(triton):
    """An app on the demo server whose list also holds that server added by its address (a second entry)."""
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, demo=True))
    blocks = launch(ctx, prevent_thread_lock=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def test_servers_are_listed_added_behind_the_token_and_picked_per_call(two_server_app, triton):
    ctx, url = two_server_app
    client = Client(url, verbose=False)
    (own,) = client.predict(api_name="/list_servers")
    assert own["id"] == "app" and own["origin"] == "app" and own["usable"]
    with pytest.raises(Exception, match="launch token"):  # the app would connect to the address: not for anyone
        client.predict(address=triton.grpc_url, api_name="/add_server")
    with pytest.raises(Exception, match="There is no server 'added-9'"):
        client.predict(text="hi", deployment="added-9", api_name="/generate")

    trusted = Client(url, verbose=False, headers={"X-Launch-Token": ctx.access.token})
    with pytest.raises(Exception, match="Nothing answers at"):
        trusted.predict(address=f"127.0.0.1:{free_port()}", api_name="/add_server")
    added = trusted.predict(address=triton.grpc_url, api_name="/add_server")
    assert added["id"].startswith("added-") and added["url"] == triton.grpc_url and added["usable"]
    assert [s["id"] for s in client.predict(api_name="/list_servers")] == ["app", added["id"]]
    reply = client.predict(text="What is the capital of France?", max_tokens=24, deployment=added["id"],
                           api_name="/generate")
    assert "Paris" in reply
    columns = client.predict(prompt="What is the capital of France?", max_tokens=16, deployment=added["id"],
                             api_name="/compare")
    assert columns[-1]["state"] == "done" and "Paris" in columns[-1]["text"]

    models = [m["id"] for m in httpx.get(url + "v1/models", timeout=10).json()["data"]]
    model = ctx.deployment.model
    assert models[0] == model and f"{added['id']}/{model}" in models
    assert f"{added['id']}/pirate" in models  # its adapters too, under the same prefix
    body = {"model": f"{added['id']}/{model}", "max_tokens": 24, "temperature": 0,
            "messages": [{"role": "user", "content": "What is the capital of France?"}]}
    answer = httpx.post(url + "v1/chat/completions", json=body, timeout=240).json()
    assert answer["model"] == f"{added['id']}/{model}" and "Paris" in answer["choices"][0]["message"]["content"]
    ctx.servers.mark_unreachable(added["id"])
    gone = httpx.post(url + "v1/chat/completions", json=body, timeout=60)
    assert gone.status_code == 400 and "cannot be used now" in gone.json()["error"]["message"]
