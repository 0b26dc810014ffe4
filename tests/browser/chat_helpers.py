"""What the browser tests do and read in the chat tab, shared by the test files."""

from __future__ import annotations

import re
import time

# the line under a finished reply: its token count (after Continue: of the whole reply, "7 tokens (2 after Continue)"),
# or its time when the server sent the reply whole (the runner)
FIGURES = re.compile(r"^(?:(?P<tokens>\d+) tokens?(?: \(\d+ after Continue\))?|\d+\.\d\d s) · ")
NARROW = {"width": 400, "height": 860}  # a phone held upright
WIDTHS = {"desktop": {"width": 1200, "height": 1000}, "400px": NARROW}


def bot_texts(page) -> list[str]:
    """Texts of the bot messages, read in one go (the list changes while replies stream)."""
    return page.evaluate("[...document.querySelectorAll('#chatbot .message.bot')].map(m => m.innerText)")


def user_texts(page) -> list[str]:
    return page.evaluate("[...document.querySelectorAll('#chatbot .message.user')].map(m => m.innerText)")


def status_line(page) -> str:
    """The chat page's status line as a person reads it. Gradio keeps its progress label ("processing | 0.3s") in the
    status line's element while a refresh of the line is pending, at opacity 0 when the refresh hides its progress:
    the element's whole `inner_text` would include that unseen label, so read the Markdown's own text."""
    return page.locator("#status [data-testid='markdown']").inner_text()


def progress_shown(page, selector: str) -> bool:
    """Whether Gradio's progress label or spinner can be seen over the component `selector` (an event that writes to
    it is waiting or running, and shows its progress)."""
    return page.evaluate("""(selector) => [...document.querySelectorAll(selector + ' [data-testid=status-tracker]')]
        .some(tracker => getComputedStyle(tracker).opacity !== '0' && !tracker.classList.contains('hide'))""", selector)


def ask(page, text: str) -> None:
    page.fill("#chat-input textarea", text)
    page.keyboard.press("Enter")


def ask_about_image(page, path, question: str, timeout: float = 240) -> str:
    """Attach one picture, wait for its thumbnail, ask `question`; the settled reply."""
    page.set_input_files("#chat-input input[type=file]", str(path))
    page.wait_for_selector("#chat-input img")
    ask(page, question)
    return settled_reply(page, timeout=timeout)


def settled_reply(page, quiet: float = 5.0, timeout: float = 240) -> str:
    """The last bot message once it is finished: its figures line is there (a reply that ended normally or was
    stopped) and nothing is pending; a reply without figures (an error said in its place) once it has not
    changed for `quiet` seconds with no reply running (a reply that pauses longer than that between tokens, as on
    a machine short of memory, is still being written)."""
    last, since, deadline = None, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        texts = bot_texts(page)
        current = texts[-1] if texts and texts[-1].strip() not in ("", "Loading content") else None
        if current != last:
            last, since = current, time.monotonic()
        if current and any(FIGURES.match(line.strip()) for line in current.splitlines()) and not replying(page):
            return current
        if current and time.monotonic() - since > quiet and not replying(page):
            return current
        time.sleep(0.1)
    raise AssertionError(f"reply did not settle: {last!r}")


def wait_until(condition, timeout: float = 90, step: float = 0.05, what: str = "condition", explain=None):
    """Poll `condition()` until it returns something truthy; that value, else AssertionError after `timeout`
    (with what `explain()` says, when given: the page's state, to tell a slow reply from a lost one)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    said = f"; {explain()}" if explain is not None else ""
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{said}")


def chat_state(page) -> str:
    """What the chat page shows, for a failure message: the last reply, the buttons' states, the toasts."""
    texts = bot_texts(page)
    buttons = {name: page.locator(f"#{name}").is_enabled() for name in ("stop", "regenerate", "continue")
               if page.locator(f"#{name}").count()}
    return f"last reply {texts[-1] if texts else None!r}, enabled {buttons}, toasts {toasts(page)}"


def open_accordion(page, elem_id: str, tries: int = 4) -> None:
    """Open the accordion `#elem_id` and wait for it to show open. A click that lands while the page is still
    laying out (on a busy machine, right after a resize) can go unhandled: then it is made again, never while the
    accordion already shows open (a second click would close it)."""
    header = page.locator(f"#{elem_id} .label-wrap").first
    for _ in range(tries):
        if "open" in (header.get_attribute("class") or "").split():
            return
        header.click()
        try:
            wait_until(lambda: "open" in (header.get_attribute("class") or "").split(), timeout=10,
                       what=f"#{elem_id} to open")
            return
        except AssertionError:
            continue
    raise AssertionError(f"#{elem_id} did not open after {tries} clicks")


def open_sampling(page) -> None:
    if not page.locator("#max-tokens").is_visible():
        page.get_by_text("Sampling", exact=True).click()


NEXT_FRAMES_JS = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"


def set_number(page, element_id: str, value: float, tries: int = 4) -> None:
    """Type a value into a slider's number box (or a Number) and commit it.

    What holds the committed value (a slider's range input, else the box itself) is read two frames later, and
    the value is typed again while it does not hold it: a box shown a moment ago (its accordion or tab just
    opened) gets its first value a frame after it appears, over what was typed into it (measured: 5 of 30
    fills right after opening the "Server ports" accordion); an update the page applies late, such as its load
    event, can put the default back too."""
    box = page.locator(f"#{element_id} input[type=number]")
    track = page.locator(f"#{element_id} input[type=range]")
    box.wait_for(state="visible")
    holder = track if track.count() else box
    for _ in range(tries):
        box.fill(str(value))
        box.press("Tab")  # leaving the box commits the value (Gradio's slider clamps it and fires "release")
        try:
            wait_until(lambda: page.evaluate(NEXT_FRAMES_JS) and holds(holder, value), timeout=5,
                       what=f"{element_id} to hold {value}")
            return
        except AssertionError:
            continue
    raise AssertionError(f"{element_id} does not hold {value}: it shows {holder.evaluate('e => e.value')}, "
                         f"its box {box.input_value()}")


def holds(number_input, value: float) -> bool:
    shown = number_input.evaluate("e => e.value")
    return shown != "" and float(shown) == float(value)


def replying(page) -> bool:
    """Whether the Stop button is enabled (a reply is running)."""
    return page.locator("#stop").is_enabled()


def toasts(page) -> list[str]:
    return page.evaluate("[...document.querySelectorAll('[data-testid=toast-body]')].map(t => t.innerText)")


def error_overlays(page) -> int:
    """Visible "Error" overlays of Gradio's status tracker (what used to cover the conversation and input)."""
    return page.evaluate("""[...document.querySelectorAll('.wrap .error')]
        .filter(e => e.offsetParent !== null && e.getBoundingClientRect().height > 0).length""")


def figures_line(text: str) -> str:
    """A finished reply's figures line ("" when it has none)."""
    return next((line.strip() for line in text.splitlines() if FIGURES.match(line.strip())), "")


def named_adapter(text: str) -> str:
    """The model or adapter a finished reply's figures line names ("base model" or an adapter)."""
    parts = figures_line(text).split(" · ")
    counts = r"^[\d.]+ tokens?(/s)?( \(\d+ after Continue\))?$|^\d+\.\d\d s$|^first token |^LoRA "
    return next((p for p in parts if not re.match(counts, p)), "")


def reply_body(text: str) -> str:
    """A reply's text without its figures line (tokens/s and the first token's time differ run to run)."""
    return "\n".join(line for line in text.splitlines() if not FIGURES.match(line.strip())).strip()


def files_listed(page, box: str, names: list[str]) -> bool:
    """Whether the file box `box` (a selector) lists each of `names` as an uploaded file. Gradio's box shows a
    name whole only while "Uploading..." and then as stem and extension in cells of their own (its text reads
    "pictures\n.zip"), so the table cell's aria-label is what names a finished upload."""
    return "Uploading" not in page.locator(box).inner_text() and all(
        page.locator(f'{box} td.filename[aria-label="{name}"]').count() == 1 for name in names)


def wait_for_uploads(page, box: str, names: list[str]) -> None:
    """Wait until the file box `box` lists each of `names` as uploaded (files_listed)."""
    wait_until(lambda: files_listed(page, box, names), what=f"{', '.join(names)} to upload",
               explain=lambda: f"the box shows {page.locator(box).inner_text()!r}")
