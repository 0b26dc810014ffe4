"""The engine-free plans as the Build page shows them: a summary list and the text, or the problems first."""

from __future__ import annotations

from types import SimpleNamespace

from app.build.plan_view import plan_view, problems_view


def test_problems_are_listed_escaped_and_kept():
    view = problems_view(["tp must divide 32 heads", "<b>bold</b> is shown as text"])
    assert view.plan is None and view.text == "" and view.problems[0] == "tp must divide 32 heads"
    assert view.summary.startswith("**Fix these first:**") and "&lt;b&gt;bold&lt;/b&gt;" in view.summary


def test_a_plan_shows_its_lines_then_its_notes():
    plan = SimpleNamespace(summary_lines=lambda: ["Family: llama", "TP 2"], notes=["Writes OUT/llmapi_repo"])
    view = plan_view(plan, "trtllm-serve ...")
    assert view.summary == "- Family: llama\n- TP 2\n- Writes OUT/llmapi_repo" and view.text == "trtllm-serve ..."
    assert view.plan is plan and view.problems == []


def test_form_numbers_are_typed_and_a_field_that_is_not_one_is_named():
    import pytest

    from app.build.plan_view import typed_form
    from setup.plan.types import PlanError

    assert typed_form({"tp": "2", "max_seq_len": None, "out": "", "kv_cache_fraction": "0.5", "family": "llama"},
                      ints=("tp", "max_seq_len")) == {"tp": 2, "kv_cache_fraction": 0.5, "family": "llama"}
    with pytest.raises(PlanError) as caught:
        typed_form({"tp": "two", "kv_cache_fraction": "most"}, ints=("tp",))
    assert caught.value.problems == ["tp must be a number, not “two”.", "kv_cache_fraction must be a number, not “most”."]


def test_the_llmapi_plan_names_a_number_field_typed_as_words_instead_of_failing():
    from app.build.llmapi import llmapi_view

    view = llmapi_view({"family": "llama", "max_batch_size": "lots"})
    assert view.plan is None and view.problems == ["max_batch_size must be a number, not “lots”."]
