"""The Adapters tab's API endpoints (gradio_client) against the real CPU demo: an adapter added while the app runs
(from a folder or a zip) can be checked, used and removed by any client, and a name the app does not know gets a
sentence that names it, whatever the dropdowns listed when the app started."""

from __future__ import annotations

import shutil

import pytest

from setup.paths import PROJECT_ROOT
from tests.lora_training_helpers import app_on_own_adapters

FRENCH = PROJECT_ROOT / "adapters" / "french"


@pytest.fixture
def served(tmp_path, triton, cpu_model_dir):
    """The whole app against the session's tritonserver, on an adapters folder of its own (a copy of pirate)."""
    with app_on_own_adapters(tmp_path, triton) as served_app:
        yield served_app


def owner(ctx, url: str):
    """A new gradio_client session with the launch token: it has seen none of the app's dropdown updates."""
    from gradio_client import Client

    return Client(url, verbose=False, headers={"X-Launch-Token": ctx.access.token})


def check_and_remove(ctx, url: str, folder, name: str) -> None:
    """Check `name` and remove it, each from a fresh client, and see the folder go."""
    checked = owner(ctx, url).predict(name, api_name="/check_adapter")
    assert f"Adapter '{name}' is applied" in checked, checked
    _table, message, _choices = owner(ctx, url).predict(name, api_name="/remove_adapter")
    assert message == f"Removed **{name}**.", message
    assert not (folder / name).exists() and name not in ctx.deployment.adapter_names()


def test_an_adapter_added_from_a_folder_is_checked_used_and_removed(served, tmp_path):
    ctx, url, folder = served
    shutil.copytree(FRENCH, tmp_path / "work" / "mine")
    _table, message, _choices = owner(ctx, url).predict(str(tmp_path / "work" / "mine"), "",
                                                        api_name="/add_adapter_folder")
    assert "Added **mine**" in message, message
    reply = owner(ctx, url).predict("Hello", max_tokens=4, adapter="mine", api_name="/generate")
    assert reply.strip(), reply  # the chat's endpoint takes it too
    columns = owner(ctx, url).predict("Hello", ["mine"], 4, api_name="/compare")
    assert [c["state"] for c in columns] == ["done"] and columns[0]["text"].strip(), columns
    check_and_remove(ctx, url, folder, "mine")


def test_an_adapter_added_from_a_zip_is_checked_and_removed(served, tmp_path):
    from gradio_client import handle_file

    ctx, url, folder = served
    archive = shutil.make_archive(str(tmp_path / "zipped"), "zip", FRENCH)
    _table, message, _choices = owner(ctx, url).predict(handle_file(archive), "zipped",
                                                        api_name="/add_adapter_zip")
    assert "Added **zipped**" in message, message
    check_and_remove(ctx, url, folder, "zipped")


def test_unknown_names_get_a_sentence_and_nothing_is_removed(served):
    ctx, url, folder = served
    client = owner(ctx, url)
    checked = client.predict("nope", api_name="/check_adapter")
    assert checked == "⚠️ There is no adapter named 'nope' to check; the adapters are: pirate.", checked
    _table, message, _choices = client.predict("nope", api_name="/remove_adapter")
    assert message == "⚠️ There is no adapter named 'nope' to remove; the adapters are: pirate.", message
    _table, message, _choices = client.predict("../pirate", api_name="/remove_adapter")
    assert "'../pirate'" in message and message.startswith("⚠️"), message
    assert sorted(p.name for p in folder.iterdir()) == ["pirate"]
