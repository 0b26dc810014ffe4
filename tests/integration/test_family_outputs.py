"""Each runner family's own job through its CPU twin on a real tritonserver (one server, the four families as
runner-<family> models), reached by the app's runner deployment over gRPC: Nougat's markdown of a PDF page,
Deplot's table of a chart, Kosmos-2's boxes on a photo, Video NeVA's account of a video. The replies are read with
the app's own parsers (app/outputs)."""

from __future__ import annotations

import pytest
from PIL import Image

from app.adapters.registry import AdapterRegistry
from app.core.conversation import Conversation
from app.core.sampling import SamplingParams
from app.deployments.base import ReplyRequest
from app.deployments.runner.deployment import RunnerDeployment
from app.outputs.chart_table import cell_number, parse_deplot
from app.outputs.grounding import parse_grounding
from app.triton.client import TritonChatClient
from app.vision.documents import render_pdf
from setup.cpu.runner_demo import model_name
from tests.family_media import (
    CHART_BARS,
    CHART_TITLE,
    PAGE_HEADING,
    PAGE_ITEMS,
    PAGE_SECTION,
    bar_chart,
    document_page,
)
from tests.media import ball_video, pdf_of_pages

pytestmark = pytest.mark.integration

SETTINGS = SamplingParams(max_tokens=512, top_k=1)
VALUE_TOLERANCE = 2.0  # of an axis 0..100 about 320 pixels tall: a pixel or two of the tick labels' placing


@pytest.fixture(scope="module")
def served(family_outputs_triton):
    """The session's server of the four twins (tests/conftest.py)."""
    return family_outputs_triton


def ask(served, family: str, files: list[str], question: str, tmp_path) -> str:
    client = TritonChatClient(served.grpc_url, model=model_name(family, several=True))
    deployment = RunnerDeployment(client, AdapterRegistry(tmp_path / "adapters"))
    stream = deployment.open_reply(ReplyRequest(Conversation.asking(question, files), SETTINGS))
    list(stream)
    return stream.text


def test_nougat_twin_returns_a_pdf_page_as_markdown_with_its_headings(served, tmp_path):
    rendered = render_pdf(pdf_of_pages([document_page()]), name="report.pdf")
    path = tmp_path / "page.png"
    rendered.pages[0].save(path)
    markdown = ask(served, "nougat", [str(path)], "", tmp_path)
    lines = markdown.splitlines()
    assert f"# {PAGE_HEADING}" in lines, markdown
    assert f"## {PAGE_SECTION}" in lines, markdown
    items = [line for line in lines if line.startswith("- ")]
    assert len(items) == len(PAGE_ITEMS), markdown
    assert any("customers" in line and not line.startswith(("#", "-")) for line in lines), markdown


def test_deplot_twin_returns_the_charts_values_in_deplots_format(served, tmp_path):
    path = tmp_path / "chart.png"
    bar_chart().save(path)
    text = ask(served, "deplot", [str(path)], "What does this chart show?", tmp_path)
    assert "<0x0A>" in text and text.startswith("TITLE | "), text
    table = parse_deplot(text)
    assert table.title == CHART_TITLE, text
    assert len(table.rows) == len(CHART_BARS), text
    for (label, value, _), row in zip(CHART_BARS, table.rows, strict=True):
        assert row[0] == label, text
        assert abs(cell_number(row[1]) - value) <= VALUE_TOLERANCE, (label, value, text)


def test_kosmos2_twin_grounds_the_astronauts_face(served, tmp_path):
    import cv2
    from skimage import data

    picture = data.astronaut()
    path = tmp_path / "astronaut.png"
    Image.fromarray(picture).save(path)
    text = ask(served, "kosmos-2", [str(path)], "", tmp_path)
    grounding = parse_grounding(text)
    assert grounding.text.startswith("An image of"), text
    cascade = cv2.CascadeClassifier(cv2.data.haarcascades + "haarcascade_frontalface_default.xml")
    found = cascade.detectMultiScale(cv2.cvtColor(picture, cv2.COLOR_RGB2GRAY), 1.1, 5, minSize=(60, 60))
    assert len(found) == 1, found  # the astronaut's face, found independently of the twin
    x, y, w, h = (int(v) for v in found[0])
    height, width = picture.shape[:2]
    faces = [p for p in grounding.phrases if p.text == "a face"]
    assert len(faces) == 1 and len(faces[0].boxes) == 1, text
    left, top, right, bottom = faces[0].boxes[0].pixels(width, height)
    assert left <= x + w * 0.1 and top <= y + h * 0.1 and right >= x + w * 0.9 and bottom >= y + h * 0.9, \
        ((left, top, right, bottom), (x, y, w, h), text)
    assert (right - left) * (bottom - top) < 4 * w * h, "the box is the face's, not the whole picture's"


def test_video_neva_twin_says_the_ball_is_red_and_moves_right(served, tmp_path):
    video = ball_video(tmp_path / "ball.gif", frames=30)
    text = ask(served, "video-neva", [str(video)], "What happens in this video?", tmp_path)
    first = text.splitlines()[0].lower()
    assert "red" in first and "moves to the right" in first, text
    frames = [line for line in text.splitlines() if line[:1].isdigit()]
    assert len(frames) == 12, text  # the family's frame count (video-neva.yaml runner_format frames)
    assert all("red" in line for line in frames), text


@pytest.fixture(scope="module")
def app_url(served):
    """The web app against one twin, as `python -m app --demo --twin <family>` serves it (the runner kind),
    here one model of the shared server: a function of the family, each app started once."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch
    from tests.servers import free_port

    apps = {}

    def url(family: str) -> str:
        if family not in apps:
            port = free_port()
            ctx = AppContext(AppConfig(triton_url=served.grpc_url, port=port, demo=True, deployment="runner",
                                       model=model_name(family, several=True)))
            apps[family] = (launch(ctx, prevent_thread_lock=True), f"http://127.0.0.1:{port}/")
        return apps[family][1]
    yield url
    for blocks, _ in apps.values():
        blocks.close()


def data_url(kind: str, data: bytes) -> str:
    import base64

    return f"data:{kind};base64," + base64.b64encode(data).decode()


def completion(url: str, *parts: dict) -> dict:
    """One /v1/chat/completions reply (greedy) to a user message of `parts`: its message."""
    import httpx

    reply = httpx.post(url + "v1/chat/completions", timeout=300, json={
        "max_tokens": 512, "temperature": 0, "messages": [{"role": "user", "content": list(parts)}]})
    assert reply.status_code == 200, reply.text
    return reply.json()["choices"][0]["message"]


def test_the_openai_route_returns_deplots_table_for_a_chart_sent_as_a_data_url(app_url):
    import io

    buffer = io.BytesIO()
    bar_chart().save(buffer, format="PNG")
    message = completion(app_url("deplot"), {"type": "image_url", "image_url": {"url": data_url("image/png",
                                                                                                  buffer.getvalue())}},
                         {"type": "text", "text": "Read the chart."})
    table = parse_deplot(message["content"])
    assert table.title == CHART_TITLE, message
    assert [(row[0], cell_number(row[1])) for row in table.rows] == [(label, value) for label, value, _ in CHART_BARS]
    fields = message["outputs"]["table"]  # the structured field beside the raw text
    assert fields["title"] == CHART_TITLE and [row[0] for row in fields["rows"]] == [label for label, _, _ in CHART_BARS]


def test_the_openai_route_reads_a_pdf_file_part_and_returns_nougats_markdown(app_url):
    pdf = pdf_of_pages([document_page()])
    message = completion(app_url("nougat"), {"type": "file", "file": {"file_data": data_url("application/pdf", pdf),
                                                                      "filename": "report.pdf"}})
    assert f"# {PAGE_HEADING}" in message["content"].splitlines(), message
    assert message["outputs"]["markdown"] == message["content"].strip()


def test_the_openai_route_returns_kosmos2s_boxes_around_the_astronauts_face(app_url):
    import io

    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, format="PNG")
    message = completion(app_url("kosmos-2"), {"type": "image_url", "image_url": {"url": data_url(
        "image/png", buffer.getvalue())}}, {"type": "text", "text": "Describe this picture."})
    assert "<patch_index_" in message["content"], message  # the raw text, as the model wrote it
    phrases = {phrase["text"].strip(): phrase["boxes"] for phrase in message["outputs"]["grounding"]["phrases"]}
    (x1, y1, x2, y2), *_ = phrases["a face"]
    assert x1 < 0.5 < x2 and y1 < 0.25 < y2, phrases  # the face: upper middle of the photo


def test_the_openai_route_takes_a_video_url_part_and_video_neva_says_red(app_url, tmp_path):
    video = ball_video(tmp_path / "ball.gif", frames=30)
    message = completion(app_url("video-neva"), {"type": "video_url", "video_url": {"url": data_url(
        "image/gif", video.read_bytes())}}, {"type": "text", "text": "What happens in this video?"})
    assert "red" in message["content"].splitlines()[0].lower(), message
