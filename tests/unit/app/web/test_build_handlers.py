"""The Build page's handlers called without the layout (app/web/pages/build_handlers.py): a model id in the form
becomes a plan that downloads first, folders named under the workspace, and the token goes to the job's
environment only; a family picked twice applies its defaults once; a deployed build brings its tokenizer."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from app.build import engine as logic
from app.context import AppConfig, AppContext
from app.web.pages.build_form import FORM_FIELDS, start_values
from app.web.pages.build_handlers import BuildHandlers, built_tokenizer, on_family, on_family_once, token_env
from setup.jobs.store import JobError
from setup.plan.config import PlanConfig
from tests.unit.app.web.test_build_page import service

TOKEN = "hf_handlerTOKEN31"


def _request() -> gr.Request:
    return gr.Request(username="admin", headers={}, cookies={})


def _handlers(tmp_path) -> BuildHandlers:
    ctx = AppContext(AppConfig(auth=(("admin", "pw"),), workspace=(str(tmp_path),)))
    return BuildHandlers(ctx, service(tmp_path))


def _values(tmp_path, **fields) -> list:
    form = {**start_values("llava-1.5"), "trtllm_root": str(tmp_path / "TensorRT-LLM"), **fields}
    return [form.get(name) for name in FORM_FIELDS] + [None] * len(logic.TRITON_FIELDS)


def test_a_family_fills_in_its_example_model_id_or_says_why_it_has_none():
    filled = on_family("llava-1.5", "0.19")[0]
    assert (filled.value, filled.placeholder) == ("llava-hf/llava-1.5-7b-hf", "")
    for family, example in (("neva", "a NeVA .nemo checkpoint"), ("video-neva", "a Nemotron .nemo checkpoint")):
        empty = on_family(family, "0.19")[0]  # its example is a .nemo file named in words
        assert empty.value == "" and "No hub id" in empty.placeholder and example in empty.placeholder


def test_the_same_pick_twice_applies_the_familys_defaults_once():
    """Gradio's dropdown sends one pick's input event twice; the second must not put the example model id back over
    one typed meanwhile (issue 48's flake: the build downloaded the family's example model)."""
    outputs = len(on_family("llava-1.5", "0.19")) + 1
    first = on_family_once("llava-1.5", "0.19", None, outputs)
    assert first[0].value == "llava-hf/llava-1.5-7b-hf" and first[-1] == "llava-1.5" and len(first) == outputs
    again = on_family_once("llava-1.5", "0.19", first[-1], outputs)
    assert again == (gr.skip(),) * outputs  # nothing changes: a typed model id stays
    other = on_family_once("qwen2-vl", "0.19", first[-1], outputs)
    assert other[-1] == "qwen2-vl" and other[0].value != first[0].value  # another family: its own defaults


def test_a_built_model_brings_its_own_tokenizer(tmp_path):
    """A Build deployment's chat (and a training in that session) uses the built model's tokenizer: the plan's
    tokenizer folder, else its checkpoint, when that folder holds tokenizer files."""
    checkpoint, tokenizer = tmp_path / "ckpt", tmp_path / "tok"
    checkpoint.mkdir()
    tokenizer.mkdir()
    config = PlanConfig(family="llava", checkpoint=str(checkpoint), out=str(tmp_path / "out"))
    assert built_tokenizer(config) is None  # no tokenizer files: the app keeps its own
    (checkpoint / "tokenizer_config.json").write_text("{}")
    assert built_tokenizer(config) == str(checkpoint)
    (tokenizer / "tokenizer.json").write_text("{}")
    config = PlanConfig(family="llava", checkpoint=str(checkpoint), out=str(tmp_path / "out"),
                        tokenizer_dir=str(tokenizer))
    assert built_tokenizer(config) == str(tokenizer)  # the plan's tokenizer folder first
    nemo = tmp_path / "model.nemo"
    nemo.write_bytes(b"x")
    assert built_tokenizer(PlanConfig(family="llava", checkpoint=str(nemo), out=str(tmp_path / "o"))) is None


def test_every_familys_plan_at_the_pages_first_release_goes_on_to_the_repository():
    """The page opens on FIRST_VERSION for every family: each family's plan there serves it on Triton (no "stops
    after the engines", no "needs a later release")."""
    from setup.catalog.builds import families, resolve_version
    from setup.plan.planner import triton_support

    for family_id, family in families().items():
        version = resolve_version(start_values(family_id)["trtllm_version"])
        assert family.triton_served(version), (family_id, triton_support(family, version))


def test_show_plan_names_the_folders_from_the_model_id_under_the_workspace(tmp_path):
    request = _request()
    summary, shell, _, _ = _handlers(tmp_path).on_show(request, *_values(tmp_path))
    folder = tmp_path / "models" / "llava-hf--llava-1.5-7b-hf"
    assert f"-m setup download --model-id llava-hf/llava-1.5-7b-hf --revision main --dest {folder}" in shell
    assert f"--output_dir {tmp_path}/builds/llava-1.5--llava-hf--llava-1.5-7b-hf/checkpoint" in shell
    assert "first step downloads llava-hf/llava-1.5-7b-hf" in summary


def test_a_folder_of_ones_own_wins_over_the_model_id(tmp_path):
    own = tmp_path / "mine"
    own.mkdir()
    (own / "config.json").write_text(json.dumps({"num_attention_heads": 32, "hidden_size": 4096}))
    _, shell, _, _ = _handlers(tmp_path).on_show(_request(),
                                                 *_values(tmp_path, checkpoint=str(own), out=str(tmp_path / "o")))
    assert "setup download" not in shell and f"--model_dir {own} " in shell


def test_run_gives_the_token_to_the_jobs_environment_only(tmp_path, monkeypatch):
    handlers = _handlers(tmp_path)
    submitted = {}

    def submit(plan, steps=None, env=None):
        submitted.update(plan=plan, env=env)
        raise JobError(f"busy {TOKEN}")  # a message that happened to carry the token

    monkeypatch.setattr(handlers.service.store, "submit", submit)
    with pytest.raises(gr.Error) as refused:
        handlers.on_run(_request(), *_values(tmp_path), TOKEN)
    assert submitted["env"]["HF_TOKEN"] == TOKEN and TOKEN not in str(refused.value)
    assert TOKEN not in submitted["plan"].to_shell() and TOKEN not in json.dumps(submitted["plan"].to_dict())
    assert token_env("  ") is None  # no token typed: the app's own environment (its HF_TOKEN, if any)
