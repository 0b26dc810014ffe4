"""The figures under each reply and each Compare column (tokens, tokens/s, first token, adapter, kind), and
Compare's column states and "(stopped)". At a desktop width and at 400 px."""

import re

from tests.browser.chat_helpers import (
    FIGURES,
    ask,
    bot_texts,
    open_sampling,
    set_number,
    settled_reply,
    wait_until,
)
from tests.browser.test_adapters import pick

KIND = "Triton engine topology"
COMPARE_FIGURES = re.compile(r"(?P<state>done|stopped) · (?:cut at the \d+-token limit · )?(?P<tokens>\d+) tokens? · "
                             r".*first token \d+\.\d\d s · "
                             r"(?P<model>[\w ]+) · (?:LoRA [\d.]+ (?:B|kB|MB) sent \((?:weights|task id only)\) · )?"
                             + KIND)


def figures_line(reply: str) -> str:
    return next(line.strip() for line in reply.splitlines() if FIGURES.match(line.strip()))


def test_each_reply_shows_its_figures_small_and_quiet(sized_page):
    page = sized_page
    open_sampling(page)
    set_number(page, "max-tokens", 24)
    ask(page, "What is the capital of France?")
    line = figures_line(settled_reply(page))
    tokens = int(FIGURES.match(line).group("tokens"))
    assert 0 < tokens <= 24
    assert re.search(r" · \d+\.\d tokens/s · first token \d+\.\d\d s · base model · " + KIND + "$", line), line
    sizes = page.evaluate("""() => { const bot = [...document.querySelectorAll('#chatbot .message.bot')].pop();
        const small = bot.querySelector('.reply-figures');
        return [parseFloat(getComputedStyle(small).fontSize), parseFloat(getComputedStyle(bot).fontSize)]; }""")
    assert sizes[0] < sizes[1]  # smaller than the reply itself
    pick(page, "adapter", "pirate")
    ask(page, "What is the capital of France?")
    wait_until(lambda: len(bot_texts(page)) == 2, what="the second reply")
    line = figures_line(settled_reply(page))  # with what the request sent of the adapter (weights the first time)
    assert re.search(r" · pirate · LoRA [\d.]+ (?:B|kB|MB) sent \((?:weights|task id only)\) · " + KIND + "$", line), line


def column_states(page) -> list[str]:
    return [page.locator(f"#compare-state-{i}").inner_text().strip() for i in range(4)]


def test_compare_columns_show_state_figures_and_stopped(sized_page):
    page = sized_page
    page.get_by_role("tab", name="Compare").click()
    assert page.locator("#compare-adapter-1 input").input_value()  # column 2 starts with an adapter
    pick(page, "compare-adapter-1", "pirate")
    pick(page, "compare-adapter-2", "(none)")  # columns 3 and 4 unused (the demo has two adapters)
    assert not page.locator("#compare-stop").is_enabled()
    page.fill("#compare-prompt textarea", "What is the capital of France?")
    set_number(page, "compare-max-tokens", 16)
    page.click("#compare-run")
    states = wait_until(lambda: (s := column_states(page)) and all(x.startswith("done") for x in s[:2]) and s,
                        timeout=120, what="both columns to finish")
    base, pirate = (COMPARE_FIGURES.match(state) for state in states[:2])
    assert base and base["model"] == "base model" and pirate and pirate["model"] == "pirate", states
    assert all(state.startswith("not used") for state in states[2:])
    assert not page.locator("#compare-stop").is_enabled() and page.locator("#compare-run").is_enabled()

    set_number(page, "compare-max-tokens", 300)
    page.fill("#compare-prompt textarea", "Tell me a long story about a dragon and a knight.")
    page.click("#compare-run")
    wait_until(lambda: all(s.startswith("streaming") for s in column_states(page)[:2]),
               what="both columns to stream")
    page.click("#compare-stop")
    states = wait_until(lambda: (s := column_states(page)) and all(x.startswith("stopped") for x in s[:2]) and s,
                        what="both columns to stop")
    assert all(COMPARE_FIGURES.match(state) for state in states[:2]), states
    for i in range(2):
        assert page.locator(f"#compare-out-{i} textarea").input_value().endswith("(stopped)")
    wait_until(lambda: not page.locator("#compare-stop").is_enabled(), what="Stop to be disabled")
