"""What the browser tests do and read in the Compare tab, shared by the test files."""

from __future__ import annotations

from tests.browser.chat_helpers import set_number, toasts, wait_until

COLUMNS = 4
FINISHED = ("done", "stopped", "failed")


def column_states(page) -> list[str]:
    """Each column's state line (its state and figures, or "not used ...")."""
    return [page.locator(f"#compare-state-{i}").inner_text().strip() for i in range(COLUMNS)]


def column_texts(page) -> list[str]:
    return [page.locator(f"#compare-out-{i} textarea").input_value() for i in range(COLUMNS)]


def thumbnails(page) -> list[int]:
    """The pixel width of each picture Compare's image box shows (0 for one not drawn, or not yet)."""
    return page.evaluate("""() => [...document.querySelectorAll('#compare-image .thumbnail-item img')]
        .map(img => img.complete ? img.naturalWidth : 0)""")


def attach_pictures(page, pictures: list) -> None:
    """Add pictures to Compare's image box and wait until it shows a thumbnail of each (and of those before)."""
    count = len(thumbnails(page)) + len(pictures)
    page.set_input_files("#compare-image input[type=file]", [str(picture) for picture in pictures])
    wait_until(lambda: len(shown := thumbnails(page)) == count and all(shown),
               what=f"thumbnails of {', '.join(picture.name for picture in pictures)}")


def run_compare(page, prompt: str, picture=None, max_tokens: int | None = None, timeout: float = 240) -> list[str]:
    """Open Compare, attach `picture` (a path or a list of them; none when None), type `prompt`, run; the column
    texts once every used column has finished (a refusal's toast fails at once)."""
    page.get_by_role("tab", name="Compare").click()
    if picture is not None:
        attach_pictures(page, picture if isinstance(picture, list) else [picture])
    page.fill("#compare-prompt textarea", prompt)
    if max_tokens is not None:
        set_number(page, "compare-max-tokens", max_tokens)
    page.click("#compare-run")

    def finished():
        if toasts(page):
            raise AssertionError(f"Compare was refused: {toasts(page)}")
        states = column_states(page)
        used = [s for s in states if not s.startswith("not used")]
        return used and all(s.startswith(FINISHED) for s in used) and page.locator("#compare-run").is_enabled()
    wait_until(finished, timeout=timeout, step=0.2, what="every used column to finish")
    return column_texts(page)
