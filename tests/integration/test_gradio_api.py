"""The Gradio API: the chat panel's job scripted with gradio_client (streaming and images against both demo kinds)."""

import pytest
from gradio_client import Client
from PIL import Image, ImageDraw, ImageFont

from tests.pictures import chelsea_picture


def test_generate_streams_growing_reply(demo_app_url):
    client = Client(demo_app_url, verbose=False)
    job = client.submit(text="What is the capital of France?", max_tokens=32, api_name="/generate")
    updates = list(job)
    assert len(updates) >= 3
    assert all(updates[i + 1].startswith(updates[i]) for i in range(len(updates) - 1))
    assert "Paris" in updates[-1]


@pytest.mark.parametrize("kwargs, message", [
    ({"text": ""}, "Type a message first."),
    ({"text": "hi", "temperature": 0}, "temperature must be between"),
    ({"text": "hi", "max_tokens": 0}, "max tokens must be between"),
])
def test_bad_input_gets_its_message(app_url, kwargs, message):
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match=message):
        client.predict(**kwargs, api_name="/generate")


def test_generate_reads_an_uploaded_image(demo_app_url, tmp_path):
    from gradio_client import handle_file

    image = Image.new("RGB", (900, 260), "white")
    ImageDraw.Draw(image).text((30, 90), "The secret code is 4711", fill="black",
                               font=ImageFont.load_default(size=64))
    path = tmp_path / "code.png"
    image.save(path)
    client = Client(demo_app_url, verbose=False)
    job = client.submit(text="What is the secret code?", images=[handle_file(str(path))], max_tokens=30,
                        api_name="/generate")
    updates = list(job)
    assert updates and "4711" in updates[-1]


def test_what_the_model_saw_through_the_api(app_url, llmapi_app_served, tmp_path):
    """The chat's folded 'What the model saw' as an endpoint: the engine topology's encoder answers per image;
    the llmapi kind says in a sentence that its encoder does not describe pictures."""
    from gradio_client import handle_file
    cat = chelsea_picture(tmp_path / "chelsea.png")
    sign = tmp_path / "sign.png"
    board = Image.new("RGB", (900, 200), "white")
    ImageDraw.Draw(board).text((20, 60), "OPEN DAILY 9-17", fill="black", font=ImageFont.load_default(size=64))
    board.save(sign)
    reports = Client(app_url, verbose=False).predict(images=[handle_file(str(cat)), handle_file(str(sign))],
                                                     api_name="/what_the_model_saw")
    assert [r["labels"][0]["group"] for r in reports[:1]] == ["cat"] and reports[1]["text"] == "OPEN DAILY 9-17"
    with pytest.raises(Exception, match="does not say what it finds in pictures"):
        Client(llmapi_app_served[1], verbose=False).predict(images=[handle_file(str(cat))],
                                                            api_name="/what_the_model_saw")


def test_generate_reads_a_pdf_page_and_reply_outputs_parses_a_chart_table(app_url, tmp_path):
    from gradio_client import handle_file

    from tests.media import pdf_of_pages

    page = Image.new("RGB", (900, 260), "white")
    ImageDraw.Draw(page).text((30, 90), "The secret code is 4711", fill="black", font=ImageFont.load_default(size=64))
    path = tmp_path / "code.pdf"
    path.write_bytes(pdf_of_pages([Image.new("RGB", (900, 260), "white"), page]))
    client = Client(app_url, verbose=False)
    reply = client.predict(text="What is the secret code?", images=[handle_file(str(path))], pdf_pages="2",
                           max_tokens=30, api_name="/generate")
    assert "4711" in reply
    fields = client.predict(text="TITLE | Sales <0x0A> Year | Sales <0x0A> 2021 | 12", api_name="/reply_outputs")
    assert fields["table"] == {"title": "Sales", "header": ["Year", "Sales"], "rows": [["2021", "12"]],
                               "csv": "Year,Sales\n2021,12\n"}
    assert client.predict(text="Paris.", api_name="/reply_outputs") == {"text": "Paris."}
