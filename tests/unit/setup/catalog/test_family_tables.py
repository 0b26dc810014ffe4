"""The family tables say what the catalogue says: one row per family file in the README's table and in
docs/families.md, a plan exactly for the families with an engine build, a repository exactly where the family is
served by our templates, a twin exactly where the app starts one, the same repository and twin cells in both, and nothing claimed as GPU-verified."""

from __future__ import annotations

import re

from setup.catalog.builds import families
from setup.catalog.family_data import family_files
from setup.cpu.twins import cpu_twins
from setup.paths import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
FAMILIES_PAGE = PROJECT_ROOT / "docs" / "families.md"


def rows(text: str, header: str) -> dict[str, list[str]]:
    """The cells after the family id of each row of the table whose header line starts with `header`."""
    table = text[text.index(header):]
    found = {}
    for line in table.splitlines()[2:]:
        match = re.match(r"\| `([\w.-]+)` \|(.*)\|\s*$", line)
        if not match:
            break
        found[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    return found


def check_repository(family_id: str, repository: str) -> None:
    build = families().get(family_id)
    if build is None:
        return
    served = not build.triton.get("refused") and bool(build.triton.get("since"))
    assert repository.startswith("yes") == served, family_id
    if served:
        assert f"`{build.triton.get('template', 'inflight_batcher_llm')}`" in repository, family_id


def test_docs_table_has_one_row_per_family_with_honest_columns():
    table, builds = rows(FAMILIES_PAGE.read_text(), "| Family | Plan"), families()
    assert set(table) == set(family_files())
    twins = cpu_twins()
    for family_id, (plan, repository, twin, verified) in table.items():
        assert verified == "no", family_id
        assert plan.startswith("yes") == (family_id in builds), family_id
        check_repository(family_id, repository)
        assert twin.startswith("yes") == (family_id in twins), family_id  # setup/cpu/twins.py: what the app starts
        if family_id in twins and family_id != "cpu-ocr":
            assert f"--twin {twins[family_id].demo}" in twin, family_id
    assert "--twin xcomposer2" in table["internlm-xcomposer2"][2]  # the CPU twin (setup/cpu/xcomposer2_demo.py)


def test_readme_table_agrees_with_the_catalogue_and_the_docs_table():
    table = rows(README.read_text(), "| Family | Triton repository")
    full = rows(FAMILIES_PAGE.read_text(), "| Family | Plan")
    assert set(table) == set(family_files())
    for family_id, (repository, twin, verified) in table.items():
        assert verified == "no", family_id
        check_repository(family_id, repository)
        assert repository.startswith("yes") == full[family_id][1].startswith("yes"), family_id
        assert twin.startswith("yes") == full[family_id][2].startswith("yes"), family_id
    assert "--twin xcomposer2" in table["internlm-xcomposer2"][1]


def test_readme_says_every_family_but_the_cpu_one_gets_a_plan():
    assert "Every family except `cpu-ocr` gets an engine build plan" in README.read_text()
    assert set(family_files()) - set(families()) == {"cpu-ocr"}
