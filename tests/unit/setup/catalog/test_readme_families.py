"""The README's table of seed families says what the catalogue says: one row per family file, a repository
exactly where the family is served by our templates, and nothing claimed as GPU-verified."""

from __future__ import annotations

import re

from setup.catalog.builds import families
from setup.catalog.family_data import family_files
from setup.paths import PROJECT_ROOT


def rows() -> dict[str, list[str]]:
    text = (PROJECT_ROOT / "README.md").read_text()
    section = text[text.index("## Model families (the seed catalogue)"):]
    section = section[: section.index("\n## ", 1)]
    found = {}
    for line in section.splitlines():
        match = re.match(r"\| `([\w.-]+)` \|(.*)\|\s*$", line)
        if match:
            found[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    return found


def test_one_row_per_family_with_honest_columns():
    table, builds = rows(), families()
    assert set(table) == set(family_files())
    for family_id, (plan, repository, _twin, verified) in table.items():
        assert verified == "no", family_id
        build = builds.get(family_id)
        assert plan.startswith("yes") == (build is not None), family_id
        if build is not None:
            served = not build.triton.get("refused") and bool(build.triton.get("since"))
            assert repository.startswith("yes") == served, family_id
            if served:
                assert f"`{build.triton.get('template', 'inflight_batcher_llm')}`" in repository, family_id
    assert "--deployment xcomposer2" in table["internlm-xcomposer2"][2]  # the CPU twin (setup/cpu/xcomposer2_demo.py)
