"""The Arena tab in Chromium on the CPU demo: two battles (the second with a picture), votes A and tie; the names
are in neither the battle's part of the page nor any network message before the vote (every fetch and EventSource
message the page receives is recorded), and are shown after it; the leaderboard counts both contestants; the app
restarted on the same database shows the same leaderboard. Then a prompt set of 5 prompts is walked through and
resumed after a reload. One app of this module's own (its database in a scratch folder), answers of a few tokens."""

from __future__ import annotations

import json

import pytest

from tests.arena_app import launch_app
from tests.browser.chat_helpers import files_listed, open_accordion, set_number, toasts, wait_until
from tests.browser_tabs import app_tab
from tests.pictures import shape_picture

CONTESTANTS = ("base model", "french")  # words the demo's answers to these prompts do not use
RECORD_NETWORK_JS = """(() => {
    window.__received = [];
    const fetched = window.fetch;
    window.fetch = async (...args) => {
        const response = await fetched(...args);
        try {
            const reader = response.clone().body.getReader();
            const decoder = new TextDecoder();
            (async () => { for (;;) { const {done, value} = await reader.read(); if (done) break;
                                      window.__received.push(decoder.decode(value)); } })();
        } catch (e) { window.__received.push("unreadable: " + e); }
        return response;
    };
    const Source = window.EventSource;
    if (Source) window.EventSource = function (url, options) {
        const source = new Source(url, options);
        source.addEventListener("message", event => window.__received.push(event.data));
        return source;
    };
})();"""


@pytest.fixture(scope="module")
def arena_db(tmp_path_factory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('arena-browser') / 'arena.sqlite3'}"


def open_arena(browser_context, served):
    tab = app_tab(browser_context, served)
    page = tab.__enter__()
    page.get_by_role("tab", name="Arena").click()
    page.wait_for_selector("#arena-start")
    return tab, page


def battle_area(page) -> str:
    return " ".join(page.locator(f"#{part}").inner_text() for part in ("arena-a", "arena-b", "arena-result"))


def answers_of(page) -> list[str]:
    return [page.locator(f"#arena-{side} .message.bot").last.inner_text() if page.locator(
        f"#arena-{side} .message.bot").count() else "" for side in ("a", "b")]


def fight(page, prompt: str, picture=None) -> str:
    """Start a battle and wait until it can be voted on; what Model A answered. Checks that no contestant's name
    is in the battle's part of the page or in anything the page received since the start."""
    if picture is not None:
        page.set_input_files("#arena-image input[type=file]", [str(picture)])
        wait_until(lambda: page.locator("#arena-image .thumbnail-item img").count() == 1, what="the thumbnail")
    page.fill("#arena-prompt textarea", prompt)
    page.evaluate("window.__received.length = 0")
    page.click("#arena-start")

    def votable():
        if toasts(page):
            raise AssertionError(f"the battle was refused: {toasts(page)}")
        return page.locator("#arena-vote-a").is_enabled()
    wait_until(votable, timeout=240, step=0.2, what="the two answers to end")
    answer_a = wait_until(lambda: answers_of(page)[0], what="Model A's answer")
    received = page.evaluate("window.__received.join('\\n')")
    assert answer_a.split()[0] in received  # the recording sees the streamed messages
    for name in CONTESTANTS:
        assert name not in battle_area(page).lower(), f"{name!r} shown before the vote"
        assert name not in received.lower(), f"{name!r} sent to the browser before the vote"
    return answer_a


def vote(page, button: str) -> str:
    page.click(f"#arena-vote-{button}")
    return wait_until(lambda: "Model A was" in (text := page.locator("#arena-result").inner_text()) and text,
                      what="the names after the vote")


def board_rows(page) -> dict[str, dict[str, int]]:
    """The leaderboard's counts by contestant, once it shows rows."""
    wait_until(lambda: page.locator("#arena-board tr[data-contestant]").count(), what="the leaderboard's rows")
    return json.loads(page.evaluate("""JSON.stringify(Object.fromEntries([...document.querySelectorAll(
        '#arena-board tr[data-contestant]')].map(row => [row.dataset.contestant, Object.fromEntries(
        ['battles', 'wins', 'ties', 'losses', 'both-bad'].map(k => [k, +row.querySelector('.' + k).innerText]))])))"""))


def test_two_blind_battles_votes_names_after_the_vote_and_the_board_after_a_restart(browser_context, triton,
                                                                                     arena_db, tmp_path):
    ctx, blocks, url = launch_app(triton, arena_db)
    browser_context.add_init_script(RECORD_NETWORK_JS)
    try:
        tab, page = open_arena(browser_context, (ctx, url))
        try:
            page.locator("#arena-contestants label", has_text="pirate").click()  # leaves the base model and french
            open_accordion(page, "arena-settings")
            set_number(page, "arena-max-tokens", 8)
            fight(page, "What is the capital of Italy?")
            first = vote(page, "a")
            assert all(name in first for name in CONTESTANTS) and "A is better" in first
            # the vote's leaderboard refresh (every contestant's name, by design) ends before the next battle's
            # messages are recorded: under load it arrived after the second start and was taken for a leak
            wait_until(lambda: sum(v["battles"] for v in board_rows(page).values()) == 2,
                       what="the leaderboard after the first vote")
            fight(page, "What shape is in the picture?", shape_picture(tmp_path / "circle.png"))
            second = vote(page, "tie")
            assert all(name in second for name in CONTESTANTS) and "a tie" in second
            rows = wait_until(lambda: len(r := board_rows(page)) == 2 and all(v["battles"] == 2 for v in r.values())
                              and r, what="both contestants with two battles")
            assert set(rows) == set(CONTESTANTS)
            assert sum(v["wins"] for v in rows.values()) == 1 and all(v["ties"] == 1 for v in rows.values())
            shown = page.locator("#arena-board").inner_text()
            page.locator("#arena-filter-pictures label", has_text="With pictures").click()
            wait_until(lambda: all(v["battles"] == 1 for v in board_rows(page).values()), what="the pictures filter")
        finally:
            tab.__exit__(None, None, None)
    finally:
        blocks.close()
    ctx, blocks, url = launch_app(triton, arena_db)  # the app again, on the same database
    try:
        tab, page = open_arena(browser_context, (ctx, url))
        try:
            wait_until(lambda: page.locator("#arena-board").inner_text() == shown, what="the same leaderboard")
        finally:
            tab.__exit__(None, None, None)
    finally:
        blocks.close()


def walk(page, expected_number: int) -> None:
    """Start the set's next battle, check the progress names prompt `expected_number` of 5, vote B."""
    page.click("#arena-set-next")
    wait_until(lambda: f"prompt {expected_number} of 5" in page.locator("#arena-progress").inner_text(),
               what=f"prompt {expected_number} of 5")
    wait_until(lambda: page.locator("#arena-vote-b").is_enabled(), timeout=240, step=0.2, what="both answers")
    page.click("#arena-vote-b")
    wait_until(lambda: f"{expected_number} of 5 voted" in page.locator("#arena-progress").inner_text(),
               what=f"{expected_number} of 5 voted")


def test_a_prompt_set_of_five_is_walked_in_order_and_resumed_after_a_reload(browser_context, triton, tmp_path):
    import zipfile

    lines = [{"prompt": f"Say the number {n}."} for n in range(1, 5)]
    lines.insert(2, {"prompt": "What shape is this?", "images": ["circle.png"]})
    jsonl = tmp_path / "five.jsonl"
    jsonl.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    with zipfile.ZipFile(tmp_path / "pictures.zip", "w") as archive:
        archive.write(shape_picture(tmp_path / "circle.png"), "circle.png")
    ctx, blocks, url = launch_app(triton, f"sqlite:///{tmp_path / 'sets.sqlite3'}")
    try:
        tab, page = open_arena(browser_context, (ctx, url))
        try:
            open_accordion(page, "arena-settings")
            set_number(page, "arena-max-tokens", 4)
            open_accordion(page, "arena-sets")
            page.set_input_files("#arena-set-file input[type=file]", str(jsonl))
            page.set_input_files("#arena-set-zip input[type=file]", str(tmp_path / "pictures.zip"))
            # the finished uploads (the box's text shows a whole name only while uploading: CI once missed it)
            wait_until(lambda: files_listed(page, "#arena-set-file", ["five.jsonl"])
                       and files_listed(page, "#arena-set-zip", ["pictures.zip"]), what="both files uploaded",
                       explain=lambda: f"the prompts box shows {page.locator('#arena-set-file').inner_text()!r}, "
                                       f"the pictures box {page.locator('#arena-set-zip').inner_text()!r}")
            page.fill("#arena-set-name textarea", "five")
            page.click("#arena-set-upload")
            wait_until(lambda: page.locator("#arena-set input").input_value() == "five", what="the set picked")
            walk(page, 1)
            walk(page, 2)
            page.reload()
            page.get_by_role("tab", name="Arena").click()
            open_accordion(page, "arena-settings")
            set_number(page, "arena-max-tokens", 4)
            open_accordion(page, "arena-sets")
            page.click("#arena-set input")
            page.locator('li[role=option][aria-label="five"]:visible').first.click()
            walk(page, 3)  # resumed after the two voted before the reload: the prompt with the picture
            assert page.locator("#arena-prompt textarea").input_value() == "What shape is this?"
            assert page.locator("#arena-image .thumbnail-item img").count() == 1
            walk(page, 4)
            walk(page, 5)
            page.click("#arena-set-next")
            wait_until(lambda: any("every prompt of five (5 of 5)" in t for t in toasts(page)), what="the end")
            page.locator("#arena-filter-set input").click()
            page.locator('li[role=option][aria-label="five"]:visible').first.click()
            wait_until(lambda: sum(v["battles"] for v in board_rows(page).values()) == 10, what="the set's board")
        finally:
            tab.__exit__(None, None, None)
    finally:
        blocks.close()
