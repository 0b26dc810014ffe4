"""The Compare tab around a run: each column's state follows its picker before a run (and after one), attached
pictures show as thumbnails, a column whose reply stopped at the max-new-tokens limit says so, and Continue goes on
with it."""

from PIL import Image

from tests.browser.chat_helpers import set_number, wait_until
from tests.browser.compare_helpers import (
    attach_pictures,
    column_states,
    column_texts,
    run_compare,
    thumbnails,
)
from tests.browser.test_adapters import pick

UNUSED = "not used: pick a model or adapter above"


def states_become(page, expected: list[str]) -> list[str]:
    """Wait until the column states read `expected`; a state ending in "…" only has to start with the rest."""
    def matches(states: list[str]) -> bool:
        return all(s.startswith(e[:-1]) if e.endswith("…") else s == e for s, e in zip(states, expected, strict=True))
    return wait_until(lambda: matches(states := column_states(page)) and states,
                      what=f"column states {expected} (they read {column_states(page)})")


def test_each_columns_state_follows_its_picker_before_and_after_a_run(page):
    page.get_by_role("tab", name="Compare").click()
    # The demo starts with the base model and its two adapters picked, the fourth column free.
    second, third = (page.locator(f"#compare-adapter-{i} input").input_value() for i in (1, 2))
    assert {second, third} == {"pirate", "french"}
    states_become(page, ["ready: base model", f"ready: adapter {second}", f"ready: adapter {third}", UNUSED])
    pick(page, "compare-adapter-1", "pirate")
    pick(page, "compare-adapter-2", "(none)")
    pick(page, "compare-adapter-3", "pirate")
    states_become(page, ["ready: base model", "ready: adapter pirate", UNUSED, "ready: adapter pirate"])
    pick(page, "compare-adapter-3", "(none)")
    states_become(page, ["ready: base model", "ready: adapter pirate", UNUSED, UNUSED])

    texts = run_compare(page, "What is the capital of France?", max_tokens=4, timeout=120)
    states_become(page, ["done · …", "done · …", UNUSED, UNUSED])
    assert texts[0] and texts[1] and not texts[2] and not texts[3]
    pick(page, "compare-adapter-1", "french")  # the new pick's column forgets pirate's reply, the others keep theirs
    states_become(page, ["done · …", "ready: adapter french", UNUSED, UNUSED])
    assert column_texts(page) == [texts[0], "", "", ""]


def test_attached_pictures_show_as_thumbnails(page, tmp_path):
    pictures = []
    for name, colour in (("red.png", "red"), ("blue.png", "blue")):
        Image.new("RGB", (120, 80), colour).save(tmp_path / name)
        pictures.append(tmp_path / name)
    page.get_by_role("tab", name="Compare").click()
    attach_pictures(page, pictures[:1])
    attach_pictures(page, pictures[1:])  # a second picture joins the first
    assert thumbnails(page) == [120, 120]  # each drawn from its own pixels


def test_a_reply_cut_by_the_token_limit_says_so(page):
    page.get_by_role("tab", name="Compare").click()
    pick(page, "compare-adapter-2", "(none)")
    run_compare(page, "Tell me a long story about a dragon and a knight.", max_tokens=8, timeout=120)
    states = column_states(page)
    assert all(state.startswith("done · cut at the 8-token limit · 8 tokens") for state in states[:2]), states


def test_continue_goes_on_with_a_cut_column_until_its_reply_ends(page):
    page.get_by_role("tab", name="Compare").click()
    pick(page, "compare-adapter-1", "(none)")
    pick(page, "compare-adapter-2", "(none)")  # the base model alone
    assert not page.locator("#compare-continue").is_enabled()  # nothing was cut yet
    cut = run_compare(page, "What is the capital of France?", max_tokens=6, timeout=120)[0]
    assert column_states(page)[0].startswith("done · cut at the 6-token limit · 6 tokens"), column_states(page)
    wait_until(lambda: page.locator("#compare-continue").is_enabled(), what="Continue to be offered")
    set_number(page, "compare-max-tokens", 120)
    page.click("#compare-continue")
    grown = wait_until(lambda: len(text := column_texts(page)[0]) > len(cut) and text, what="the column to grow")
    assert grown.startswith(cut), (cut, grown)
    whole = wait_until(lambda: page.locator("#compare-run").is_enabled()
                       and "-token limit" not in (state := column_states(page)[0]) and state.startswith("done · ")
                       and column_texts(page)[0], what="the continued column to end by itself")
    assert whole.startswith(grown.rstrip()) and "Paris" in whole, (cut, whole)
    assert not page.locator("#compare-continue").is_enabled()  # nothing is cut any more


def test_stop_ends_a_continue_and_keeps_what_the_column_had(page):
    page.get_by_role("tab", name="Compare").click()
    pick(page, "compare-adapter-1", "(none)")
    pick(page, "compare-adapter-2", "(none)")
    cut = run_compare(page, "Tell me a long story about a dragon and a knight.", max_tokens=6, timeout=120)[0]
    wait_until(lambda: page.locator("#compare-continue").is_enabled(), what="Continue to be offered")
    set_number(page, "compare-max-tokens", 512)
    page.click("#compare-continue")
    wait_until(lambda: len(column_texts(page)[0]) > len(cut) + 20, what="the column to grow")
    assert not page.locator("#compare-run").is_enabled() and not page.locator("#compare-adapter-0 input").is_enabled()
    page.click("#compare-stop")
    states_become(page, ["stopped · …", UNUSED, UNUSED, UNUSED])
    text = column_texts(page)[0]
    assert text.startswith(cut) and text.endswith("(stopped)"), (cut, text)
    wait_until(lambda: page.locator("#compare-run").is_enabled(), what="Compare to be offered again")
    assert not page.locator("#compare-continue").is_enabled()  # a stopped column was not cut
