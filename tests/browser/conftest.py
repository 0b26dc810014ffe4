"""Browser fixtures shared by the chat-panel tests: the app's page at a desktop width and at 400 px."""

from __future__ import annotations

import pytest

from tests.browser.chat_helpers import WIDTHS
from tests.browser.page_evidence import PageEvidence


@pytest.fixture(params=list(WIDTHS))
def sized_page(request, page):
    """The app's page (a fresh visit), at a desktop width and on a 400 px wide phone screen."""
    page.set_viewport_size(WIDTHS[request.param])
    return page


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report says what the browser saw (while its pages are still open)."""
    outcome = yield
    report, evidence = outcome.get_result(), getattr(item, "page_evidence", None)
    if report.failed and evidence is not None and call.when == "call":
        report.sections.append(("what the browser saw", evidence.report()))
        item.failed_with_pages = True  # its pages are closed without a second failure for them


@pytest.fixture(autouse=True)
def _closes_its_pages(request):
    """Fails a test that leaves a page of the shared browser open: the pages of one worker share a profile, and an
    open page keeps its connections (and timers) to an app other tests may use. A failed test's report gets what the
    browser saw meanwhile (tests/browser/page_evidence.py)."""
    if "browser_context" not in request.fixturenames:
        yield
        return
    context = request.getfixturevalue("browser_context")
    before = set(context.pages)
    request.node.page_evidence = PageEvidence(context).start()
    yield
    request.node.page_evidence.stop()
    left = [page.url for page in context.pages if page not in before]
    for page in context.pages:
        if page not in before:
            page.close()
    if left and not getattr(request.node, "failed_with_pages", False):
        pytest.fail(f"This test left {len(left)} page(s) open: {', '.join(left)}.", pytrace=False)
