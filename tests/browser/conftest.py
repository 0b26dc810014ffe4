"""Browser fixtures shared by the chat-panel tests: the app's page at a desktop width and at 400 px."""

from __future__ import annotations

import pytest

from tests.browser.chat_helpers import WIDTHS


@pytest.fixture(params=list(WIDTHS))
def sized_page(request, page):
    """The app's page (a fresh visit), at a desktop width and on a 400 px wide phone screen."""
    page.set_viewport_size(WIDTHS[request.param])
    return page
