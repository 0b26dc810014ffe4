"""The layout a person meets: at 400 px the message box is full width with the adapter dropdown under it,
the demo notes are folded and the box is in view; from 1000 px the conversation list is a column left of the chat;
the title's bold capitals render as bold capitals."""

from tests.browser.chat_helpers import NARROW

# Gradio's semibold Source Sans Pro file is a subset that draws "A" and "B" as small capitals (the "LoRA" in
# the title); the app's style points bold text at the complete bold file.
BROKEN_FONT, BOLD_FONT = "SourceSansPro-SemiBold.woff2", "SourceSansPro-Bold.woff2"
FONT_FILES = """async () => { await document.fonts.ready;
    return performance.getEntriesByType("resource").map(e => e.name).filter(n => n.includes("/fonts/")); }"""


def box(page, selector: str) -> dict:
    return page.locator(selector).bounding_box()


def test_400px_the_box_is_in_view_and_the_adapter_under_it(page):
    shorter = {**NARROW, "height": 800}  # a phone with less height: the box in view there too
    page.set_viewport_size(shorter)
    page.reload()
    page.wait_for_selector("#chat-input textarea")
    message = box(page, "#chat-input")
    assert message["y"] + message["height"] <= shorter["height"], message
    page.set_viewport_size(NARROW)
    page.reload()
    page.wait_for_selector("#chat-input textarea")
    message, adapter = box(page, "#chat-input"), box(page, "#adapter")
    assert message["y"] + message["height"] <= NARROW["height"]  # no scrolling to find where to type
    chat = box(page, "#chatbot")
    assert chat["height"] >= 250, chat  # and the conversation still has room
    assert message["width"] > 0.8 * NARROW["width"]
    assert adapter["y"] >= message["y"] + message["height"]  # under the box, not squeezing it
    placeholder = page.evaluate("""() => { const area = document.querySelector('#chat-input textarea');
        return [area.getBoundingClientRect().height, parseFloat(getComputedStyle(area).lineHeight)]; }""")
    assert placeholder[0] < 2 * placeholder[1]  # the placeholder fits on one line
    assert not page.get_by_text("CPU demo: a real Triton server").is_visible()  # the notes are folded
    page.get_by_text("About this demo").click()
    page.get_by_text("CPU demo: a real Triton server").wait_for(state="visible")  # one click away


def test_a_1280x900_first_screen_shows_the_message_box(page):
    """The first screen of a laptop shows where to type (it once showed an empty conversation pane to the fold)."""
    screen = {"width": 1280, "height": 900}
    page.set_viewport_size(screen)
    page.reload()
    page.wait_for_selector("#chat-input textarea")
    message, chat = box(page, "#chat-input"), box(page, "#chatbot")
    assert message["y"] + message["height"] <= screen["height"], message
    assert chat["height"] >= 250  # and the conversation still has room


def test_from_1000px_the_conversations_are_a_column_left_of_the_chat(page):
    """Like Open WebUI's sidebar: at 1000 px and wider the list, its search box, New, Delete and Rename stand in a
    column at the left of the conversation, and the message box is still on the first screen; narrower, the list is
    above the conversation as before."""
    for width in (1280, 1000):
        screen = {"width": width, "height": 900}
        page.set_viewport_size(screen)
        page.reload()
        page.wait_for_selector("#chat-input textarea")
        side, chat, message = box(page, "#chat-sidebar"), box(page, "#chatbot"), box(page, "#chat-input")
        assert side["x"] + side["width"] <= chat["x"] and side["y"] <= chat["y"], (width, side, chat)
        for part in ("#conversation-list", "#chat-search", "#new-chat", "#delete-chat", "#rename-chat"):
            shown = box(page, part)
            assert shown and side["x"] <= shown["x"] and shown["x"] + shown["width"] <= side["x"] + side["width"], (
                width, part, shown)
        assert message["y"] + message["height"] <= screen["height"], (width, message)
        assert chat["height"] >= 400, (width, chat)  # the room the list's row took above it
    page.set_viewport_size({"width": 999, "height": 900})
    page.reload()
    page.wait_for_selector("#chat-input textarea")
    side, chat = box(page, "#chat-sidebar"), box(page, "#chatbot")
    assert side["y"] + side["height"] <= chat["y"] and side["width"] >= chat["width"] - 1, (side, chat)


TAB_TITLES = ["Chat", "Compare", "Arena", "Adapters", "Build", "Benchmark", "Server"]


def test_400px_every_tab_is_in_view_without_a_menu(page):
    page.set_viewport_size(NARROW)
    page.reload()
    page.wait_for_selector("#chat-input textarea")
    tabs = page.get_by_role("tab")
    page.wait_for_function("n => document.querySelectorAll('[role=tab]').length === n", arg=len(TAB_TITLES))
    assert [t.strip() for t in tabs.all_inner_texts()] == TAB_TITLES
    for title in TAB_TITLES:
        tab = page.get_by_role("tab", name=title)
        bounds = tab.bounding_box()
        assert bounds and bounds["x"] >= 0 and bounds["x"] + bounds["width"] <= NARROW["width"], (title, bounds)
    assert not page.get_by_role("button", name="More tabs").is_visible()
    page.get_by_role("tab", name="Server").click()  # one tap away, like the others
    page.wait_for_selector("[role=tab][aria-selected=true]:has-text('Server')")


def test_the_titles_bold_capitals_come_from_the_complete_bold_font(page):
    assert page.locator("#app-title").inner_text() == "Triton VLM + LoRA demo"
    assert float(page.evaluate("getComputedStyle(document.querySelector('#app-title')).fontWeight")) >= 600
    files = page.evaluate(FONT_FILES)
    assert any(name.endswith(BOLD_FONT) for name in files), files
    assert not any(name.endswith(BROKEN_FONT) for name in files), files


def test_400px_compare_puts_the_pictures_under_the_prompt_at_full_width(page):
    page.set_viewport_size(NARROW)
    page.reload()
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#compare-prompt textarea")
    prompt, pictures = box(page, "#compare-prompt"), page.locator("#compare-inputs > *").nth(1).bounding_box()
    assert pictures["width"] > 0.8 * NARROW["width"]  # room for a row of thumbnails
    assert pictures["y"] >= prompt["y"] + prompt["height"]
