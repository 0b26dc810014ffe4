"""What the model saw, as plain lines: the encoder's findings per image, and reports that are missing or fail."""

from app.chat.model_saw import image_reports, report_lines
from app.core.errors import InvalidRequest

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
    assert not any(line.startswith("Family format") for line in lines)


def test_a_family_twin_s_report_ends_with_the_format_it_applied():
    lines = report_lines({**CAT, "format": "blip2-opt: 224x224 px stretch, 32 rows per image"})
    assert lines[-1] == "Family format: blip2-opt: 224x224 px stretch, 32 rows per image"
    assert lines[-2].startswith("Given to the model as:")


def test_reports_missing_or_failing_leave_the_reply_alone():
    def broken():
        raise InvalidRequest("The server refused the request: no")

    assert image_reports(Stream()) is None and image_reports(Stream(broken)) is None
    assert image_reports(Stream(lambda: [CAT])) == [CAT]


def test_a_report_of_details_alone_is_those_lines():
    assert report_lines({"details": ["Prompt format: kosmos-2", "Finished: stop"]}) == [
        "Prompt format: kosmos-2", "Finished: stop"]
