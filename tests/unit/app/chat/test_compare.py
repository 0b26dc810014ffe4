"""Compare with an image: checked once as the chat checks a message's images, then sent to every column; on an
InternLM-XComposer2 deployment the base column keeps the model's own Partial LoRA on and another adapter is refused in
a sentence unless the deployment combines adapters."""

from __future__ import annotations

import pytest
from PIL import Image

from app.chat.compare import CUT, DONE, STOPPED, CompareRun, column_entries, column_names, continue_cut
from app.context import AppConfig, AppContext
from app.core.conversation import Conversation
from app.core.errors import InvalidImage, InvalidRequest
from app.core.sampling import SamplingParams
from app.deployments import messages as M
from app.deployments.messages import MSG_OWN_ADAPTER_ONLY
from app.deployments.triton_engine.deployment import TritonEngineDeployment
from tests.compare_fakes import RecordingDeployment
from tests.xcomposer2_fakes import FakeClient, xc2_registry

PARAMS = SamplingParams(max_tokens=8)


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "red.png"
    Image.new("RGB", (64, 48), (255, 0, 0)).save(path)
    return str(path)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_DEMO_CACHE", str(tmp_path / "cache"))  # task ids files inside tmp_path


@pytest.fixture
def xc2_adapters(tmp_path):
    return xc2_registry(tmp_path / "xc2-adapters")


def finish(run: CompareRun):
    return list(run.view_updates())[-1]


def context(tmp_path, deployment) -> AppContext:
    return AppContext(AppConfig(adapters_dir=str(tmp_path / "adapters")), deployment=deployment)


def test_the_image_goes_to_every_column_after_one_check(tmp_path, picture):
    deployment = RecordingDeployment()
    views = finish(CompareRun(context(tmp_path, deployment), "What is it?", [None, "pirate"], PARAMS, images=[picture]))
    assert deployment.checked == [[picture]]
    assert [r.adapter for r in deployment.requests] == [None, "pirate"]
    for request in deployment.requests:
        assert request.conversation.current_images() == (picture,)
        assert request.conversation.turns[-1].text == "What is it?"
    assert [v.state for v in views] == [DONE, DONE] and views[1].text.startswith("reply from pirate")


def test_without_an_image_the_columns_get_text_alone(tmp_path):
    deployment = RecordingDeployment()
    finish(CompareRun(context(tmp_path, deployment), "Hi", [None], PARAMS))
    assert deployment.checked == [] and deployment.requests[0].conversation == Conversation.asking("Hi")


def test_a_bad_image_is_refused_before_any_column_opens(tmp_path):
    deployment = RecordingDeployment()
    with pytest.raises(InvalidImage, match="broken.png"):
        CompareRun(context(tmp_path, deployment), "What is it?", [None, "pirate"], PARAMS, images=["/x/broken.png"])
    assert deployment.requests == []


def xcomposer2(adapters, **parameters) -> tuple[TritonEngineDeployment, FakeClient]:
    client = FakeClient(**parameters)
    return TritonEngineDeployment(client, adapters, template="internlm2", model_adapter="xc2-partial"), client


def test_xcomposer2_compares_on_a_picture_with_its_own_adapter_on(tmp_path, xc2_adapters, picture):
    deployment, client = xcomposer2(xc2_adapters)
    views = finish(CompareRun(context(tmp_path, deployment), "What is in it?", [None], PARAMS, images=[picture]))
    (prompt, extra), = client.sent
    assert prompt.count("<ImageHere>") == 1 and extra["image_input"].shape == (1, 3, 490, 490)
    assert extra["lora_task_id"] == xc2_adapters.task_id("xc2-partial")
    assert views[0].text.startswith("In the picture")


def test_xcomposer2_refuses_in_a_sentence_what_it_cannot_compare(tmp_path, xc2_adapters, picture):
    deployment, client = xcomposer2(xc2_adapters)
    ctx = context(tmp_path, deployment)
    with pytest.raises(InvalidRequest) as caught:
        CompareRun(ctx, "What is in it?", [None], PARAMS)  # what Compare did before it took an image
    assert str(caught.value) == M.MSG_IMAGE_REQUIRED.format(family="InternLM-XComposer2")
    with pytest.raises(InvalidRequest) as caught:
        CompareRun(ctx, "What is in it?", [None, "pirate"], PARAMS, images=[picture])
    assert str(caught.value) == MSG_OWN_ADAPTER_ONLY.format(family="InternLM-XComposer2", own="'xc2-partial'",
                                                            adapter="pirate")
    assert not deployment.combines_adapters()


def test_xcomposer2_that_combines_runs_another_adapter_beside_its_own(tmp_path, xc2_adapters, picture):
    deployment, client = xcomposer2(xc2_adapters, combines_adapters="true")
    assert deployment.combines_adapters()
    finish(CompareRun(context(tmp_path, deployment), "What is in it?", [None, "pirate"], PARAMS, images=[picture]))
    tasks = sorted(extra["lora_task_id"] for _, extra in client.sent)
    assert tasks == sorted([xc2_adapters.task_id("xc2-partial"), xc2_adapters.task_id("pirate")])
    assert all(extra["image_input"].shape == (1, 3, 490, 490) for _, extra in client.sent)


@pytest.mark.parametrize("given, columns", [
    (None, [None]),
    (["", "pirate"], [None, "pirate"]),
    ([None, "base model", " french "], [None, None, "french"]),
    ([], []),
])
def test_callers_name_columns_as_the_tab_does(given, columns):
    assert column_names(given) == columns


@pytest.mark.parametrize("given", ["pirate", [1, "pirate"], {"a": 1}, [["pirate"]]])
def test_a_column_list_that_is_not_names_is_refused_in_a_sentence(given):
    with pytest.raises(InvalidRequest, match="adapters must be a list of adapter names"):
        column_names(given)


def test_entries_change_with_the_columns_and_end_with_every_column_done(tmp_path):
    entries = list(CompareRun(context(tmp_path, RecordingDeployment()), "Hi", [None, "pirate"], PARAMS).entry_updates())
    assert all(a != b for a, b in zip(entries, entries[1:], strict=False))  # no update repeats the one before
    last = entries[-1]
    assert [e["column"] for e in last] == ["base model", "pirate"] and [e["state"] for e in last] == [DONE, DONE]
    assert last[1]["text"].startswith("reply from pirate") and "tokens" in last[1]["figures"]


def test_a_reader_that_stops_early_cancels_every_column(tmp_path):
    deployment = RecordingDeployment(endless=True)
    updates = CompareRun(context(tmp_path, deployment), "Hi", [None, "pirate"], PARAMS).entry_updates()
    next(updates)
    updates.close()  # what Gradio does when the caller goes away
    assert len(deployment.opened) == 2 and all(stream.cancelled for stream in deployment.opened)


def test_an_unknown_adapter_is_refused_and_the_columns_opened_before_it_are_cancelled(tmp_path):
    deployment = RecordingDeployment(endless=True)
    with pytest.raises(InvalidRequest, match="There is no adapter named 'nobody'"):
        CompareRun(context(tmp_path, deployment), "Hi", [None, "nobody"], PARAMS)
    assert [stream.cancelled for stream in deployment.opened] == [True]


@pytest.mark.parametrize(("max_tokens", "reason"), [(2, CUT), (3, "stop"), (8, "stop")])
def test_each_done_column_says_whether_its_reply_was_cut_at_max_tokens(tmp_path, max_tokens, reason):
    run = CompareRun(context(tmp_path, RecordingDeployment()), "Hi", [None, "pirate"],
                     SamplingParams(max_tokens=max_tokens))
    views = finish(run)  # each fake reply is three words, one token each
    assert [(v.state, v.finish_reason) for v in views] == [(DONE, reason), (DONE, reason)]
    assert [e["finish_reason"] for e in column_entries(run.columns, views)] == [reason, reason]


def test_a_stopped_column_has_no_finish_reason(tmp_path):
    run = CompareRun(context(tmp_path, RecordingDeployment(endless=True)), "Hi", [None], PARAMS)
    updates = run.view_updates()
    next(updates)
    run.cancel()
    assert [(v.state, v.finish_reason) for v in list(updates)[-1]] == [(STOPPED, None)]


def test_continue_goes_on_with_each_cut_column_alone_from_its_text(tmp_path, picture):
    deployment = RecordingDeployment(known=("pirate", "old sea dog"))
    ctx = context(tmp_path, deployment)
    first = CompareRun(ctx, "What is it?", [None, "old sea dog"], SamplingParams(max_tokens=3), images=[picture])
    views = finish(first)  # "reply from base" ends by itself; "reply from old sea dog" is cut after three words
    assert [(v.text, v.finish_reason) for v in views] == [("reply from base", "stop"), ("reply from old", CUT)]
    more = continue_cut(ctx, "What is it?", first.columns, views, SamplingParams(max_tokens=8), images=[picture])
    assert more.columns == ["old sea dog"] and len(deployment.requests) == 3
    request = deployment.requests[-1]
    assert (request.adapter, request.continues, request.sampling.max_tokens) == ("old sea dog", "reply from old", 8)
    assert request.conversation.turns[-1].text == "What is it?"
    assert request.conversation.current_images() == (picture,)
    (view,) = finish(more)
    assert (view.text, view.state, view.finish_reason) == ("reply from old sea dog", DONE, "stop")
    assert view.figures.startswith("2 tokens")  # what the continuation added


def test_a_column_cut_again_can_be_continued_again(tmp_path):
    deployment = RecordingDeployment()
    ctx = context(tmp_path, deployment)
    run = CompareRun(ctx, "Hi", [None], SamplingParams(max_tokens=1))
    views = finish(run)
    assert [(v.text, v.finish_reason) for v in views] == [("reply", CUT)]
    run = continue_cut(ctx, "Hi", run.columns, views, SamplingParams(max_tokens=1))
    views = finish(run)
    assert [(v.text, v.finish_reason) for v in views] == [("reply from", CUT)]
    views = finish(continue_cut(ctx, "Hi", run.columns, views, SamplingParams(max_tokens=5)))
    assert [(v.text, v.finish_reason) for v in views] == [("reply from base", "stop")]
    assert [r.continues for r in deployment.requests] == ["", "reply", "reply from"]


def test_without_a_cut_column_there_is_nothing_to_continue(tmp_path):
    deployment = RecordingDeployment()
    ctx = context(tmp_path, deployment)
    run = CompareRun(ctx, "Hi", [None, "pirate"], PARAMS)
    views = finish(run)
    with pytest.raises(InvalidRequest, match="Only a column cut at the token limit can be continued"):
        continue_cut(ctx, "Hi", run.columns, views, PARAMS)
    assert len(deployment.requests) == 2


def test_a_stopped_continuation_keeps_its_start_and_says_stopped(tmp_path):
    deployment = RecordingDeployment(endless=True)
    run = CompareRun(context(tmp_path, deployment), "Hi", [None], PARAMS, continues=["reply"])
    updates = run.view_updates()
    next(updates)
    run.cancel()
    (view,) = list(updates)[-1]
    assert (view.text, view.state, view.finish_reason) == ("reply from (stopped)", STOPPED, None)


@pytest.mark.parametrize("given", ["reply", ["reply"], ["a", 1]])
def test_continues_that_are_not_one_text_per_column_are_refused_in_a_sentence(tmp_path, given):
    deployment = RecordingDeployment()
    with pytest.raises(InvalidRequest, match="continues must list one text per column"):
        CompareRun(context(tmp_path, deployment), "Hi", [None, "pirate"], PARAMS, continues=given)
    assert deployment.requests == []


CHART = "TITLE | Sales <0x0A> Year | Units <0x0A> 2023 | 12 <0x0A> 2024 | 30"
GROUNDED = ("<grounding><phrase> A red square</phrase><object><patch_index_0000><patch_index_1023></object> on "
            "white.")


def test_an_ended_column_is_read_as_the_chat_reads_a_reply_and_the_entries_carry_its_fields(tmp_path, picture):
    deployment = RecordingDeployment(replies={None: CHART, "pirate": GROUNDED})
    run = CompareRun(context(tmp_path, deployment), "Read it.", [None, "pirate", "french"],
                     SamplingParams(max_tokens=64), images=[picture])
    views = finish(run)
    table, grounded, prose = views
    assert table.outputs.table.title == "Sales" and table.outputs.table.rows == (("2023", "12"), ("2024", "30"))
    assert grounded.outputs.grounding.phrases[0].text.strip() == "A red square"
    assert grounded.outputs.picture == picture  # the boxes are drawn on the picture sent
    assert prose.outputs is None
    entries = column_entries(run.columns, views)
    assert entries[0]["table"]["rows"] == [["2023", "12"], ["2024", "30"]] and "2024,30" in entries[0]["table"]["csv"]
    assert entries[1]["grounding"]["phrases"][0]["boxes"] == [[0.0156, 0.0156, 0.9844, 0.9844]]  # patch centres
    assert "table" not in entries[2] and "grounding" not in entries[2]


def test_a_column_still_streaming_is_not_parsed(tmp_path):
    run = CompareRun(context(tmp_path, RecordingDeployment(endless=True, replies={None: CHART})), "Hi", [None], PARAMS)
    updates = run.view_updates()
    first = next(updates)
    run.cancel()
    assert first[0].outputs is None and list(updates)[-1][0].outputs is None  # stopped: shown as it came
