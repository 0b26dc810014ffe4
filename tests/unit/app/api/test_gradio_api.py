"""The Gradio API's `compare` endpoint, called as Gradio calls it: it streams every column's {column, text, state,
figures}, refuses bad input with the Compare tab's own sentence (a gr.Error, no traceback) and stops every column
when the caller goes away."""

from __future__ import annotations

import gradio as gr
import pytest
from PIL import Image

from app.api.gradio_api import register
from app.chat.compare import DONE
from app.chat.messages import MSG_COMPARE_NO_COLUMNS, MSG_COMPARE_TOO_MANY, MSG_EMPTY_PROMPT
from app.context import AppConfig, AppContext
from app.core.constants import MAX_COMPARE_ADAPTERS
from tests.compare_fakes import RecordingDeployment


def endpoint(tmp_path, deployment, name: str = "compare"):
    ctx = AppContext(AppConfig(adapters_dir=str(tmp_path / "adapters")), deployment=deployment)
    with gr.Blocks() as blocks:
        register(ctx)
    (fn,) = [block.fn for block in blocks.fns.values() if block.api_name == name]
    return fn


def refusal(fn, **kwargs) -> str:
    with pytest.raises(gr.Error) as caught:
        list(fn(**kwargs))
    return caught.value.message


def test_compare_streams_every_column_to_its_end(tmp_path):
    deployment = RecordingDeployment()
    updates = list(endpoint(tmp_path, deployment)(prompt="Hi", adapters=["", "pirate"], max_tokens=12))
    assert [entry["column"] for entry in updates[-1]] == ["base model", "pirate"]
    assert [entry["state"] for entry in updates[-1]] == [DONE, DONE]
    assert updates[-1][1]["text"].startswith("reply from pirate") and updates[-1][1]["figures"]
    assert [r.sampling.max_tokens for r in deployment.requests] == [12, 12]
    assert [entry["finish_reason"] for entry in updates[-1]] == ["stop", "stop"]


def test_compare_says_which_columns_were_cut_at_max_tokens(tmp_path):
    updates = list(endpoint(tmp_path, RecordingDeployment())(prompt="Hi", adapters=["", "pirate"], max_tokens=2))
    assert [(entry["state"], entry["finish_reason"]) for entry in updates[-1]] == [(DONE, "length")] * 2


def test_compare_goes_on_with_a_cut_column_as_the_tabs_continue_does(tmp_path):
    deployment = RecordingDeployment()
    compare = endpoint(tmp_path, deployment)
    (cut,) = list(compare(prompt="Hi", adapters=["pirate"], max_tokens=2))[-1]
    assert (cut["text"], cut["finish_reason"]) == ("reply from", "length")
    (whole,) = list(compare(prompt="Hi", adapters=["pirate"], max_tokens=12, continues=[cut["text"]]))[-1]
    assert (whole["text"], whole["state"], whole["finish_reason"]) == ("reply from pirate", DONE, "stop")
    assert [r.continues for r in deployment.requests] == ["", "reply from"]


def test_without_adapters_it_compares_the_base_model_alone(tmp_path):
    deployment = RecordingDeployment()
    updates = list(endpoint(tmp_path, deployment)(prompt="Hi"))
    assert [entry["column"] for entry in updates[-1]] == ["base model"] and deployment.requests[0].adapter is None


@pytest.mark.parametrize("kwargs, sentence", [
    ({"prompt": "   "}, MSG_EMPTY_PROMPT),
    ({"prompt": None}, MSG_EMPTY_PROMPT),
    ({"prompt": "Hi", "adapters": []}, MSG_COMPARE_NO_COLUMNS),
    ({"prompt": "Hi", "adapters": ["", "pirate", "french", "formal", "terse"]},
     MSG_COMPARE_TOO_MANY.format(limit=MAX_COMPARE_ADAPTERS)),
    ({"prompt": "Hi", "adapters": ["", "nobody"]}, "There is no adapter named 'nobody'. Known: pirate, french"),
    ({"prompt": "Hi", "adapters": "pirate"}, "adapters must be a list of adapter names"),
    ({"prompt": "Hi", "max_tokens": 0}, "max tokens must be between"),
    ({"prompt": "Hi", "max_tokens": "many"}, "max tokens must be a number"),
    ({"prompt": "Hi", "images": [{"path": "/etc/passwd"}]}, "Images must be uploaded with the request"),
    ({"prompt": "Hi", "adapters": ["", "pirate"], "continues": ["reply"]}, "continues must list one text per column"),
])
def test_bad_input_gets_the_tabs_sentence(tmp_path, kwargs, sentence):
    deployment = RecordingDeployment()
    assert refusal(endpoint(tmp_path, deployment), **kwargs).startswith(sentence)
    assert all(stream.cancelled for stream in deployment.opened)  # nothing left running


def test_an_uploaded_image_goes_to_every_column_and_a_broken_one_is_refused(tmp_path, uploads):
    picture = uploads / "red.png"
    Image.new("RGB", (32, 32), (255, 0, 0)).save(picture)
    deployment = RecordingDeployment()
    compare = endpoint(tmp_path, deployment)
    list(compare(prompt="What is it?", adapters=["", "pirate"], images=[{"path": str(picture)}]))
    assert deployment.checked == [[str(picture)]]
    assert [r.conversation.current_images() for r in deployment.requests] == [(str(picture),)] * 2
    broken = uploads / "broken.png"
    broken.write_bytes(b"\x89PNG")
    assert "broken.png is truncated" in refusal(compare, prompt="What is it?", images=[{"path": str(broken)}])


def test_a_caller_that_goes_away_stops_every_column(tmp_path):
    deployment = RecordingDeployment(endless=True)
    updates = endpoint(tmp_path, deployment)(prompt="Hi", adapters=["", "pirate"])
    assert [entry["state"] for entry in next(updates)]  # the columns are open
    updates.close()  # Gradio closes the generator when the client disconnects
    assert len(deployment.opened) == 2 and all(stream.cancelled for stream in deployment.opened)
