"""The family's answer cue: the CPU LLM answers after its own chat template's cue, so the stand-in gives it the
family's prompt up to the family's own assistant marker (the question kept); the figures still show the whole
family format."""

from __future__ import annotations

import json

from cpu_runtime.runner_standin.formats import read_format
from setup.catalog.family_data import family_files

CUED = ("neva", "video-neva", "phi-3-vision", "llava-next", "cogvlm")


def write_format(folder, family: str) -> None:
    raw = family_files()[family]
    config = {"builder_config": {"model_type": family}, "runner_format": {"family": family, **raw["runner_format"]}}
    (folder / "config.json").write_text(json.dumps(config))


def test_each_cued_family_keeps_its_question_and_drops_its_own_assistant_turn(tmp_path):
    for family in CUED:
        write_format(tmp_path, family)
        fmt = read_format(tmp_path)
        assert fmt.answer_cue, family
        # a family whose runner takes the text verbatim (cogvlm) is sent the question in the app's runner_prompt
        prompt = (family_files()[family].get("runner_prompt") or {}).get("template", "{question}")
        before, after = fmt.parts(prompt.replace("{question}", "What colour is its fur?"))
        given = fmt.before_answer_cue(before) + "<rows>" + fmt.before_answer_cue(after)
        assert "What colour is its fur?" in given and fmt.answer_cue not in given, (family, given)
        assert given.endswith(("What colour is its fur?", "What colour is its fur?\n")), (family, given)
        if prompt == "{question}":  # the figures show the family's whole format (the app's note shows cogvlm's)
            assert fmt.answer_cue.strip() in fmt.describe(0), family


def test_video_nevas_cue_drops_the_steerlm_attributes_but_keeps_the_system_text(tmp_path):
    write_format(tmp_path, "video-neva")
    fmt = read_format(tmp_path)
    before, after = fmt.parts("What happens?")
    assert before.startswith("<extra_id_0>System\nA chat between a curious user") and before.endswith("<extra_id_1>User")
    assert fmt.before_answer_cue(after) == "\nWhat happens?\n"
    assert "quality:4" in after  # what the runner builds; only the CPU LLM is not given it


def test_a_family_without_a_cue_gives_its_whole_prompt(tmp_path):
    write_format(tmp_path, "fuyu")
    fmt = read_format(tmp_path)
    assert fmt.answer_cue == "" and fmt.before_answer_cue("What is it?\\n") == "What is it?\\n"
    assert fmt.before_answer_cue(None) == ""


def test_the_family_files_say_the_cue_inside_their_prompt():
    files = family_files()
    for family in CUED:
        raw = files[family]["runner_format"]
        # a verbatim family's (cogvlm's) prompt is the app's runner_prompt, which the runner is sent as it is
        prompt = (files[family].get("runner_prompt") or {}).get("template") or raw["prompt"]
        assert raw["answer_cue"] in prompt.split("{question}", 1)[1], family
