"""The folded 'What the model saw' block: its lines, escaping, one line of HTML, and removal from the history."""

from app.chat.model_saw import image_reports, model_saw_block, report_lines
from app.chat.turns import reply_text
from app.core.errors import InvalidRequest
from app.deployments.prompts import chat_messages

CAT = {"description": 'It shows a cat (a tiger cat or a tabby). Text: "<b>hi</b>".',
       "labels": [{"name": "tiger cat", "confidence": 0.434, "group": "cat"}, {"name": "tabby", "confidence": 0.17,
                                                                                "group": "cat"}],
       "faces": [], "cat_faces": [{"box": [1, 2, 3, 4], "where": "centre"}],
       "colours": [{"name": "grey", "share": 0.41}], "shapes": [], "text": "<b>hi</b>"}


class Stream:
    text, cancelled = "A cat.", False

    def __init__(self, report=None):
        self.image_report = report


def test_lines_name_labels_with_confidences_and_the_description():
    lines = report_lines(CAT)
    assert lines[0] == "Labels: tiger cat 43%, tabby 17%"
    assert "Cat faces: 1" in lines and "Colours: grey 41%" in lines and "Text: <b>hi</b>" in lines
    assert lines[-1].startswith("Given to the model as: “It shows a cat")
    assert "Text: none found" in report_lines({"labels": [], "text": ""})


def test_block_is_one_escaped_line_and_numbers_several_images():
    block = model_saw_block([CAT, {"text": "OPEN", "description": 'Text: "OPEN".'}])
    assert block.startswith('\n\n<details class="model-saw"><summary>What the model saw</summary>')
    assert "\n" not in block[2:] and "<b>hi</b>" not in block and "&lt;b&gt;hi&lt;/b&gt;" in block
    assert "<b>Image 1</b>" in block and "<b>Image 2</b>" in block
    assert model_saw_block(None) == "" and model_saw_block([]) == ""


def test_reports_missing_or_failing_leave_the_reply_alone():
    def broken():
        raise InvalidRequest("The server refused the request: no")

    assert image_reports(Stream()) is None and image_reports(Stream(broken)) is None
    assert image_reports(Stream(lambda: [CAT])) == [CAT]


def test_the_model_never_reads_the_block_back():
    shown = reply_text(Stream(), "pirate", final=True, saw=model_saw_block([CAT]), figures="\n\n<small "
                       'class="reply-figures">3 tokens · base model</small>')
    assert "What the model saw" in shown
    history = [{"role": "user", "content": "What is it?"}, {"role": "assistant", "content": shown}]
    assert chat_messages(history, None)[-1] == {"role": "assistant", "content": "A cat."}
