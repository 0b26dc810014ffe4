"""What the browser saw during one test, for the failure report: HTTP answers of 400 and above, requests that failed,
console errors and warnings, and Gradio's toasts. A wait that runs out on a loaded machine then says whether
the app refused something (a 408 body stall, a cancelled unread job), the browser lost a request, or nothing came."""

from __future__ import annotations

import time

TOAST_PREFIX = "gradio toast: "
# Added to every page of the test browser: each toast Gradio shows is also written to the console, so it is in the
# report even when the test closed its page before failing.
TOASTS_TO_CONSOLE_JS = """document.addEventListener("DOMContentLoaded", () => {
    new MutationObserver(records => records.forEach(r => r.addedNodes.forEach(node => {
        if (!(node instanceof Element)) return;
        const toasts = node.matches(".toast-body") ? [node] : [...node.querySelectorAll(".toast-body")];
        toasts.forEach(t => setTimeout(() => console.warn("%s" + t.innerText.trim()), 0));
    }))).observe(document.body, {childList: true, subtree: true});
});""".replace("%s", TOAST_PREFIX)


class PageEvidence:
    """Listens on a browser context from `start()` until `stop()`; `report()` is the text for a failed test."""

    def __init__(self, context) -> None:
        self.context = context
        self.started = time.monotonic()
        self.lines: list[str] = []

    def _at(self) -> str:
        return f"{time.monotonic() - self.started:6.1f} s"

    def _response(self, response) -> None:
        if response.status >= 400:
            self.lines.append(f"{self._at()} HTTP {response.status} {response.request.method} {response.url}")

    def _failed(self, request) -> None:
        self.lines.append(f"{self._at()} request failed ({request.failure}) {request.method} {request.url}")

    def _console(self, message) -> None:
        if message.type in ("error", "warning"):  # toasts come as warnings (TOASTS_TO_CONSOLE_JS)
            self.lines.append(f"{self._at()} console {message.type}: {message.text[:300]}")

    def start(self) -> PageEvidence:
        self.context.on("response", self._response)
        self.context.on("requestfailed", self._failed)
        self.context.on("console", self._console)
        return self

    def stop(self) -> None:
        self.context.remove_listener("response", self._response)
        self.context.remove_listener("requestfailed", self._failed)
        self.context.remove_listener("console", self._console)

    def report(self) -> str:
        return "\n".join(self.lines) or "nothing: no HTTP error, failed request, console error or toast"
