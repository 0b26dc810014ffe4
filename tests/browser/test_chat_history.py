"""Conversations kept in the browser: they survive a reload, a list switches between them, export as JSON
and Markdown downloads them, import brings one back. At a desktop width and at 400 px."""

import json
import re

from tests.browser.chat_helpers import (
    ask,
    ask_about_image,
    bot_texts,
    open_accordion,
    open_sampling,
    reply_body,
    set_number,
    settled_reply,
    toasts,
    user_texts,
    wait_until,
)

ENTRIES = "#conversation-list label"


def listed(page) -> str:
    """The conversation list's marked entry (the conversation shown) as it reads; "" when none is marked."""
    # read in one step: the list is drawn again when it changes, and an entry counted first could be gone when read
    return page.evaluate(f"() => document.querySelector('{ENTRIES}.selected')?.innerText.trim() ?? ''")


def entry(page, title_start: str):
    return page.locator(ENTRIES, has_text=title_start).first


def pick_conversation(page, title_start: str) -> None:
    """One click on the conversation's entry (the list is always open)."""
    entry(page, title_start).click()


def short_reply(page, question: str) -> str:
    open_sampling(page)
    set_number(page, "max-tokens", 12)
    ask(page, question)
    return settled_reply(page)


def test_conversations_survive_a_reload_and_switch(sized_page):
    page = sized_page
    first = short_reply(page, "What is the capital of France?")
    wait_until(lambda: listed(page).startswith("What is the capital of France? · 1 turn"),
               what="the list to show the conversation")
    page.reload()
    wait_until(lambda: bot_texts(page), what="the conversation to come back")
    assert user_texts(page) == ["What is the capital of France?"]
    assert reply_body(bot_texts(page)[0]) == reply_body(first)

    page.click("#new-chat")
    wait_until(lambda: page.locator("#chatbot .message").count() == 0, what="an empty chat")
    short_reply(page, "Name a colour.")
    pick_conversation(page, "What is the capital of France?")
    wait_until(lambda: user_texts(page) == ["What is the capital of France?"], what="the switch")
    pick_conversation(page, "Name a colour.")
    wait_until(lambda: user_texts(page) == ["Name a colour."], what="the switch back")
    page.click("#delete-chat")  # asks first, names the conversation
    page.wait_for_selector("#chat-confirm-question:has-text('Delete “Name a colour.”')")
    page.click("#chat-confirm-yes")
    wait_until(lambda: user_texts(page) == ["What is the capital of France?"], what="the deletion")
    page.click("#chat-undo")  # undone: the deleted conversation is back and shown
    wait_until(lambda: user_texts(page) == ["Name a colour."], what="the undo")
    assert listed(page).startswith("Name a colour.")


def download(page, button: str) -> tuple[str, str]:
    with page.expect_download() as info:
        page.click(button)
    done = info.value
    return done.suggested_filename, open(done.path(), encoding="utf-8").read()


def test_export_json_and_markdown_then_import(sized_page, tmp_path):
    page = sized_page
    reply = short_reply(page, "What is the capital of France?")
    open_accordion(page, "export-import")
    name, text = download(page, "#export-json")
    data = json.loads(text)
    assert name == "what-is-the-capital-of-france.json"
    assert data["version"] == 2 and [t["role"] for t in data["turns"]] == ["user", "assistant"]
    assert data["turns"][0]["text"] == "What is the capital of France?"
    words = data["turns"][1]["versions"][0]["text"]
    assert words and reply_body(reply).startswith(words)
    name, markdown = download(page, "#export-markdown")
    assert name.endswith(".md") and "## You\n\nWhat is the capital of France?" in markdown

    page.click("#new-chat")
    wait_until(lambda: page.locator("#chatbot .message").count() == 0, what="an empty chat")
    exported = tmp_path / "exported.json"
    exported.write_text(text, encoding="utf-8")
    page.set_input_files("#export-import input[type=file]", str(exported))
    wait_until(lambda: user_texts(page) == ["What is the capital of France?"], what="the import")
    assert listed(page).startswith("What is the capital of France?")

    broken = tmp_path / "broken.json"
    broken.write_text('{"messages": "none"}', encoding="utf-8")
    page.set_input_files("#export-import input[type=file]", str(broken))
    wait_until(lambda: any("broken.json is not a conversation file" in t for t in toasts(page)),
               what="the refusal")
    assert user_texts(page) == ["What is the capital of France?"]  # the conversation shown is untouched


def asked_about_a_circle(page, tmp_path):
    """A short conversation about a picture of a circle, with the export buttons in view; the picture's path."""
    from tests.pictures import shape_picture

    picture = shape_picture(tmp_path / "circle.png")
    open_sampling(page)
    set_number(page, "max-tokens", 12)
    ask_about_image(page, picture, "What shape is this?")
    open_accordion(page, "export-import")
    return picture


def test_markdown_export_is_clean_and_embeds_the_picture(page, tmp_path):
    """No HTML in the file: the figures in italics, what the model saw as a list, the upload as a data URL."""
    import base64

    picture = asked_about_a_circle(page, tmp_path)
    _, markdown = download(page, "#export-markdown")
    assert "<" not in markdown and "[image circle.png]" not in markdown
    embedded = "![circle.png](data:image/png;base64,"
    assert embedded in markdown
    data = markdown.split(embedded, 1)[1].split(")", 1)[0]
    assert base64.b64decode(data) == picture.read_bytes()
    assert "What the model saw:\n\n- " in markdown and re.search(r"\n\*\d+ tokens? · .*\*\n", markdown)


def test_400px_the_list_shows_a_long_titles_count_of_turns(page, tmp_path):
    """A conversation with a long first question: on a phone the list's box still shows how many turns it holds."""
    from tests.browser.chat_helpers import NARROW

    page.set_viewport_size(NARROW)
    question = "Please describe everything you can see in this photograph of a busy harbour at dawn"
    messages = []
    for number in range(12):
        messages += [{"role": "user", "content": question if number == 0 else f"And then {number}?"},
                     {"role": "assistant", "content": f"Answer {number}."}]
    saved = tmp_path / "long.json"
    saved.write_text(json.dumps({"format": "triton-vlm-lora-demo conversation", "version": 1, "title": question,
                                 "messages": messages}), encoding="utf-8")
    open_accordion(page, "export-import")
    page.set_input_files("#export-import input[type=file]", str(saved))
    wait_until(lambda: listed(page).endswith("· 12 turns"), what="the imported conversation in the list")
    assert listed(page).startswith("Please describe")
    fits = page.evaluate("""() => { const shown = document.querySelector('#conversation-list label.selected');
        const line = document.querySelector('#conversation-list .wrap');
        return shown.getBoundingClientRect().right <= line.getBoundingClientRect().right
            && shown.scrollWidth <= shown.clientWidth; }""")
    assert fits, listed(page)  # nothing of the entry hidden past the list's edge


def test_a_json_export_brings_its_picture_into_a_fresh_browser(page, browser_context, app_served, tmp_path):
    """Export a conversation with a picture as JSON, import it where nothing is kept (a first visit: empty storage)
    and see the picture, stored from the file (it came back as "[image circle.png: not kept]")."""
    from tests.browser_tabs import app_tab

    asked_about_a_circle(page, tmp_path)
    _, text = download(page, "#export-json")
    assert json.loads(text)["turns"][0]["media"][0]["data"].startswith("data:image/png;base64,")
    exported = tmp_path / "circle.json"
    exported.write_text(text, encoding="utf-8")
    with app_tab(browser_context, app_served) as fresh:
        assert fresh.locator("#chatbot .message").count() == 0
        open_accordion(fresh, "export-import")
        fresh.set_input_files("#export-import input[type=file]", str(exported))
        wait_until(lambda: user_texts(fresh) == ["What shape is this?"], what="the import")
        shown = wait_until(lambda: fresh.evaluate(
            "[...document.querySelectorAll('#chatbot .message.user img')].map(i => i.src)"), what="the picture")
        assert "/imported/" in shown[0] and "not kept" not in fresh.inner_text("#chatbot")
        again = tmp_path / "circle-again.json"  # the same conversation again (a new name: the input sees a change)
        again.write_text(text, encoding="utf-8")
        fresh.set_input_files("#export-import input[type=file]", str(again))
        wait_until(lambda: any("not added twice" in t for t in toasts(fresh)), what="the second import's note")
        entries = fresh.locator(ENTRIES)
        entries.first.wait_for()
        assert entries.count() == 1  # one conversation: no duplicate, no empty "New chat"


def test_rename_a_conversation(page):
    open_sampling(page)
    set_number(page, "max-tokens", 3)
    ask(page, "Name a fruit.")
    settled_reply(page)
    page.click("#rename-chat")
    title = page.locator("#chat-title").get_by_role("textbox")
    wait_until(lambda: title.input_value() == "Name a fruit.", what="the title box with the title")
    title.fill("Groceries")
    title.press("Enter")
    wait_until(lambda: listed(page).startswith("Groceries · 1 turn"), what="the new name in the list")
    page.reload()  # the name is kept with the conversation
    wait_until(lambda: listed(page).startswith("Groceries · 1 turn"), what="the name after a reload")


def offered(page) -> list[str]:
    """The titles the conversation list offers."""
    # one step, as in listed(): counted first and read one by one, an entry can be gone when read (a loaded run
    # waited 90 s on entry 2 of a list the search had just narrowed to one)
    texts = page.evaluate(f"() => [...document.querySelectorAll('{ENTRIES}')].map(e => e.innerText.trim())")
    return [text.split(" · ")[0] for text in texts]


def search_box(page):
    return page.locator("#chat-search").get_by_role("textbox")


def search(page, query: str) -> None:
    search_box(page).fill(query)


def shown_after_switch(page, question: str) -> None:
    """Wait for the conversation asking `question` to be shown and the search box emptied (a switch lists every
    conversation again and empties the box in the same update)."""
    wait_until(lambda: user_texts(page) == [question], what=f"{question!r} shown")
    wait_until(lambda: search_box(page).input_value() == "", what="the search box emptied with the switch")


def stored_texts(page) -> list[str]:
    """Every text the shown conversation keeps (its JSON export: the messages and each reply version)."""
    _, text = download(page, "#export-json")
    return [t["text"] for t in json.loads(text)["turns"] if "text" in t] + [
        v["text"] for t in json.loads(text)["turns"] for v in t.get("versions", [])]


def test_search_finds_a_conversation_by_a_word_of_its_reply_and_opens_it(page):
    """The search box narrows the list to the conversations that mention a word (of a reply, of a question);
    picking one shows it as the full list does; a word no conversation has gives an empty list and a note."""
    open_sampling(page)
    set_number(page, "max-tokens", 3)
    open_accordion(page, "export-import")
    ask(page, "What is the capital of France?")
    first = reply_body(settled_reply(page))
    france = stored_texts(page)
    page.click("#new-chat")
    wait_until(lambda: page.locator("#chatbot .message").count() == 0, what="an empty chat")
    ask(page, "Name a colour.")
    settled_reply(page)
    colour = stored_texts(page)
    wait_until(lambda: listed(page).startswith("Name a colour. · 1 turn"), what="the second conversation listed")

    search(page, "capital")  # a word of the first question only
    # the shown conversation is not found: nothing is chosen in the narrowed list until the person picks
    wait_until(lambda: listed(page) == "", what="the list narrowed, nothing chosen")
    assert offered(page) == ["What is the capital of France?"]
    pick_conversation(page, "What is the capital of France?")
    shown_after_switch(page, "What is the capital of France?")
    assert reply_body(bot_texts(page)[0]) == first

    # a word of the first reply (as the conversation keeps it; 3 tokens may hold none): the list offers exactly the
    # conversations that hold it, the first among them, and picking it from there shows it too
    replied = [w.lower() for w in re.findall(r"[A-Za-z]{2,}", " ".join(france[1:]))]
    if replied:
        word = replied[0]
        holding = [title for title, texts in (("What is the capital of France?", france), ("Name a colour.", colour))
                   if any(word in text.lower() for text in texts)]
        pick_conversation(page, "Name a colour.")
        shown_after_switch(page, "Name a colour.")
        search(page, word)
        wait_until(lambda: sorted(offered(page)) == sorted(holding),
                   what=f"the list narrowed to the conversations that say {word!r}",
                   explain=lambda: f"offered {offered(page)}, expected {holding}")
        pick_conversation(page, "What is the capital of France?")
        shown_after_switch(page, "What is the capital of France?")

    search(page, "zebraquux")  # in no conversation
    page.wait_for_selector("#chat-search-note:has-text(\"No conversation mentions 'zebraquux'.\")")
    assert offered(page) == []
    assert user_texts(page) == ["What is the capital of France?"]  # what is shown stays
    search(page, "")  # every conversation again
    wait_until(lambda: len(offered(page)) == 2, what="the whole list again")
    assert not page.locator("#chat-search-note").is_visible()


def test_400px_the_search_button_shows_the_search_and_it_finds_a_conversation(page):
    """On a phone the search box waits behind the search button beside New, Delete and Rename (a line of its own would
    push the message box off the first screen); pressed, it shows the box, ready to type in, and the list narrows and
    switches as on a wide screen; pressed again, the box goes and the whole list is back."""
    from tests.browser.chat_helpers import NARROW

    page.set_viewport_size(NARROW)
    open_sampling(page)
    set_number(page, "max-tokens", 3)
    ask(page, "What is the capital of France?")
    settled_reply(page)
    page.click("#new-chat")
    wait_until(lambda: page.locator("#chatbot .message").count() == 0, what="an empty chat")
    ask(page, "Name a colour.")
    settled_reply(page)
    wait_until(lambda: listed(page).startswith("Name a colour. · 1 turn"), what="the second conversation listed")

    button, new = page.locator("#chat-search-toggle"), page.locator("#new-chat")
    assert not search_box(page).is_visible() and button.is_visible()
    assert abs(button.bounding_box()["y"] - new.bounding_box()["y"]) < 2  # on the line of New, Delete, Rename
    button.click()
    search_box(page).wait_for(state="visible")
    wait_until(lambda: page.evaluate("document.activeElement?.closest('#chat-search') !== null"),
               what="the search box ready to type in")
    search(page, "capital")
    wait_until(lambda: listed(page) == "", what="the list narrowed, nothing chosen")
    assert offered(page) == ["What is the capital of France?"]
    pick_conversation(page, "What is the capital of France?")
    shown_after_switch(page, "What is the capital of France?")

    search(page, "colour")
    wait_until(lambda: offered(page) == ["Name a colour."], what="the list narrowed to the colour question")
    page.keyboard.press("Escape")  # the list closed, as a person would leave it
    button.click()  # hidden again: the query goes with it, and the list holds every conversation
    search_box(page).wait_for(state="hidden")
    wait_until(lambda: len(offered(page)) == 2, what="the whole list again")
    assert user_texts(page) == ["What is the capital of France?"]
