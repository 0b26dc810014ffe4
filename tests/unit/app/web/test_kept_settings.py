"""Settings kept in the browser come back only as values a person could have set."""

import gradio as gr

from app.web.kept_settings import checked, restored


def test_only_values_a_widget_can_hold_come_back():
    assert checked("temperature", 1.3) == 1.3 and checked("temperature", 9.0) is None
    assert checked("max_tokens", True) is None and checked("top_k", "5") is None
    assert checked("decoding", "sample") == "sample" and checked("decoding", "beam") is None
    assert checked("system_prompt", "Be brief.") == "Be brief." and checked("system_prompt", "x" * 10**6) is None
    assert checked("keep_pictures", 1) is None and checked("unknown", 1) is None
    names = ["temperature", "decoding", "context_mode"]
    assert restored({"temperature": 0.2, "decoding": "x"}, names) == [0.2, gr.skip(), gr.skip()]
    assert restored("not a dict", names) == [gr.skip()] * 3


def test_the_setting_kept_under_its_old_name_comes_back():
    """Pages before the rename kept which earlier turns are sent as "history_mode" ("history" is now the saved
    conversations only): a reload after the update finds it all the same."""
    assert restored({"history_mode": "whole conversation"}, ["context_mode"]) == ["whole conversation"]
    assert restored({"history_mode": "whole conversation", "context_mode": "same adapter"}, ["context_mode"]) == [
        "same adapter"]


def test_a_restore_with_no_kept_decoding_leaves_the_sample_controls_alone():
    """The page's load can end after the person picked Sample (a busy server): with no decoding kept, the restore
    must not turn temperature, top-k, top-p and seed off again."""
    from app.web.kept_settings import sample_only_state

    assert sample_only_state({}, 4) == [gr.skip()] * 4 and sample_only_state("not a dict", 2) == [gr.skip()] * 2
    assert sample_only_state({"decoding": "sample"}, 1) == [gr.update(interactive=True)]
    assert sample_only_state({"decoding": "greedy"}, 1) == [gr.update(interactive=False)]
