"""README.md is a short front door and docs/*.md hold the rest: every relative link and #anchor in them resolves to
a file and a heading that exist, the README stays within 200 lines and carries exactly the two set-up commands, and
CI (.ci/run) runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from setup.paths import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
PAGES = [README, *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 200
SETUP_COMMANDS = ["make demo", "make test"]

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code, where a bracket is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but hyphens and underscores dropped, spaces to
    hyphens (inline code keeps its text)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page, repeated headings numbered -1, -2 as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for _hashes, title in HEADING.findall(FENCE.sub("", page.read_text())):
        base = slug(title)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def broken_links(page: Path) -> list[str]:
    """The relative links of `page` whose file or #anchor does not exist, each as "target: why"."""
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: are not checked here
            continue
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(f"{target}: no file {destination}")
        elif anchor and (destination.suffix != ".md" or anchor not in anchors(destination)):
            broken.append(f"{target}: no heading #{anchor} in {destination.name}")
    return broken


def code_commands(text: str) -> list[str]:
    """The command lines of a Markdown text's fenced code blocks, trailing comments removed."""
    commands = []
    for block in FENCE.findall(text):
        for line in block.splitlines()[1:-1]:
            command = line.split("#", 1)[0].strip()
            if command:
                commands.append(command)
    return commands


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    assert broken_links(page) == []


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in LINK.findall(prose(README.read_text()))}
    assert [p.name for p in PAGES[1:] if p.resolve() not in linked] == []


def test_the_check_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Kept `here`, twice\n\n## Kept `here`, twice\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n[ok](other.md#kept-here-twice-1) [self](#page) `[code](nowhere.md)`\n"
                    "[gone](missing.md) [bad anchor](other.md#not-there) ![pic](pic.png)\n"
                    "```\n[in a block](nowhere.md)\n```\n")
    assert broken_links(page) == [
        f"missing.md: no file {tmp_path / 'missing.md'}",
        "other.md#not-there: no heading #not-there in other.md",
        f"pic.png: no file {tmp_path / 'pic.png'}",
    ]


def test_slug_follows_githubs_rule():
    assert slug("Triton's `llmapi` model") == "tritons-llmapi-model"
    assert slug("In-flight batching against vLLM's CPU build") == "in-flight-batching-against-vllms-cpu-build"
    assert slug("The app's own cost") == "the-apps-own-cost"


def test_readme_is_a_short_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_readme_holds_exactly_the_two_setup_commands():
    assert code_commands(README.read_text()) == SETUP_COMMANDS


def test_ci_runs_the_readmes_test_command():
    ci_lines = [line.strip() for line in (PROJECT_ROOT / ".ci" / "run").read_text().splitlines()]
    ci_commands = [line for line in ci_lines if line and not line.startswith(("#", "set ", "cd "))]
    test_command = next(c for c in code_commands(README.read_text()) if c.endswith(" test"))
    assert ci_commands == [test_command]
