"""The Adapters tab in Debian's Chromium: nothing preselected, the Remove list follows an add, removing asks first."""

from __future__ import annotations

import shutil

import pytest

from app.context import AppConfig, AppContext
from setup.paths import PROJECT_ROOT
from tests.browser_tabs import served_page
from tests.servers import free_port


@pytest.fixture
def adapters_page(tmp_path, browser_context):
    """The Adapters tab alone, on a copy of the pirate adapter; a second PEFT folder waits in the workspace."""
    from app.web.pages import adapters

    folder = tmp_path / "adapters"
    shutil.copytree(PROJECT_ROOT / "adapters" / "pirate", folder / "pirate")
    shutil.copytree(PROJECT_ROOT / "adapters" / "french", tmp_path / "work" / "mine")
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=f"127.0.0.1:{free_port()}", port=port, adapters_dir=str(folder),
                               workspace=(str(tmp_path / "work"),)))
    with served_page(browser_context, ctx, port, lambda: adapters.build(ctx)) as page:
        page.wait_for_selector("#adapter-table")
        yield page, folder, tmp_path / "work" / "mine"


def _options(page, element_id: str) -> list[str]:
    page.click(f"#{element_id} input")
    options = page.locator("li[role=option]:visible")
    options.first.wait_for()
    names = [o.get_attribute("aria-label") for o in options.all()]
    page.keyboard.press("Escape")
    return names


def test_remove_list_follows_an_add_and_removing_asks_first(adapters_page):
    page, folder, mine = adapters_page
    assert page.input_value("#remove-adapter-name input") == ""  # nothing preselected for removal
    assert page.input_value("#check-adapter-name input") == ""
    page.get_by_label("Add from a folder on the server").fill(str(mine))
    page.click("#add-adapter-folder")
    page.wait_for_selector("#adapter-message:has-text('Added mine')")
    assert "mine" in page.inner_text("#adapter-table")
    assert _options(page, "remove-adapter-name") == ["mine", "pirate"]  # no Refresh needed
    assert page.input_value("#remove-adapter-name input") == ""

    page.click("#remove-adapter")  # nothing chosen: says so, asks nothing
    page.wait_for_selector("#adapter-message:has-text('Pick an adapter to remove')")
    assert not page.locator("#remove-adapter-yes").is_visible()

    page.click("#remove-adapter-name input")
    page.locator('li[role=option][aria-label="mine"]:visible').click()
    page.click("#remove-adapter")
    page.wait_for_selector("#remove-adapter-question:has-text('Remove mine?')")
    assert (folder / "mine").is_dir()  # asking deletes nothing
    page.click("#remove-adapter-keep")
    page.wait_for_selector("#adapter-message:has-text('Nothing removed')")
    assert not page.locator("#remove-adapter-yes").is_visible() and (folder / "mine").is_dir()

    page.click("#remove-adapter")
    page.click("#remove-adapter-yes")
    page.wait_for_selector("#adapter-message:has-text('Removed mine')")
    assert not (folder / "mine").exists() and "mine" not in page.inner_text("#adapter-table")
    # the question closes in the event that follows the removal (the remove_adapter API returns the list only)
    page.wait_for_selector("#remove-adapter-yes", state="hidden")
    assert _options(page, "remove-adapter-name") == ["pirate"]
