"""A message's files as typed media: videos sampled to the family's frame count, PDFs rendered to pages, every
limit refused with its sentence before anything runs."""

from __future__ import annotations

import pytest
from PIL import Image

from app.chat.media_intake import family_video_frames, file_kind, media_for
from app.core.constants import DEFAULT_VIDEO_FRAMES, MAX_VIDEO_SECONDS
from app.core.conversation import IMAGE, PDF, VIDEO, Turn
from app.core.errors import InvalidDocument, InvalidVideo
from tests.media import ball_video, ball_x, bomb_gif, page_with_heading, pdf_of_pages
from tests.pictures import shape_picture


@pytest.fixture(autouse=True)
def uploads(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    return tmp_path / "uploads"


def test_frame_counts_come_from_the_family_files():
    assert family_video_frames("video-neva") == 12  # its runner format's frames
    assert family_video_frames("llava-onevision") == 8  # its video_frames
    assert family_video_frames("kosmos-2") == DEFAULT_VIDEO_FRAMES
    assert family_video_frames(None) == DEFAULT_VIDEO_FRAMES


@pytest.mark.parametrize("suffix", ["gif", "mp4"])
def test_a_video_becomes_its_evenly_sampled_frames_written_as_pictures(tmp_path, uploads, suffix):
    video = ball_video(tmp_path / f"ball.{suffix}", frames=30)
    media = media_for(str(video), family="video-neva")
    assert media.kind == VIDEO and len(media.frames) == 12 and len(media.labels) == 12
    assert all(str(uploads) in frame for frame in media.frames)
    xs = [ball_x(Image.open(frame)) for frame in media.frames]
    assert xs == sorted(xs) and xs[-1] - xs[0] > 80  # the ball moves left to right across the samples
    assert "12 frames sampled evenly, sent as 12 pictures" in media.detail
    assert Turn.user("what moves?", (media,)).images == media.frames  # the frames are what the model is sent


def test_a_video_goes_whole_where_the_model_declares_a_video_input(tmp_path):
    video = ball_video(tmp_path / "ball.gif", frames=10)
    media = media_for(str(video), family="video-neva", takes_video=True)
    assert media.pictures == (str(video),)
    assert "sent as the model's video input" in media.detail


def test_a_pdf_becomes_its_rendered_pages(tmp_path):
    pdf = pdf_of_pages([page_with_heading("Results"), page_with_heading("Methods")])
    media = media_for(pdf, name="paper.pdf")
    assert media.kind == PDF and media.labels == ("page 1", "page 2") and len(media.pictures) == 2
    only = media_for(pdf, name="paper.pdf", pages="2")
    assert only.labels == ("page 2",) and "page 2 sent as pictures" in only.detail


def test_pictures_stay_pictures(tmp_path):
    picture = shape_picture(tmp_path / "circle.png")
    media = media_for(str(picture))
    assert media.kind == IMAGE and media.pictures == (str(picture),)
    still = tmp_path / "still.gif"
    Image.new("RGB", (20, 20), "red").save(still)
    assert media_for(str(still)).kind == IMAGE  # a one-frame GIF is a picture


def test_kinds_come_from_the_bytes_not_the_name():
    assert file_kind(b"%PDF-1.4\n...") == PDF
    assert file_kind(b"GIF89a....") == VIDEO
    assert file_kind(b"\x89PNG\r\n\x1a\n") == IMAGE


def test_limits_refuse_with_a_sentence(tmp_path):
    long_video = ball_video(tmp_path / "long.gif", frames=3, fps=0.02)  # 3 frames of 50 s each
    with pytest.raises(InvalidVideo, match=rf"long.gif lasts 150.0 seconds; videos may last at most "
                                           rf"{MAX_VIDEO_SECONDS:.0f} seconds"):
        media_for(str(long_video))
    with pytest.raises(InvalidDocument, match="not a page range"):
        media_for(pdf_of_pages([page_with_heading("A")]), name="a.pdf", pages="two")


def test_a_video_is_sampled_to_as_many_frames_as_the_deployment_takes(tmp_path, monkeypatch):
    """The OpenAI-compatible kind takes 8 pictures a message (no server asked): Video NeVA's 12 frames become 7
    next to one picture, said in what was sent; a message with no room for one frame is refused as before."""
    from dataclasses import replace

    from app.adapters.registry import AdapterRegistry
    from app.chat.turns import check_new_turn
    from app.context import AppConfig, AppContext
    from app.core.errors import TooManyImages
    from app.deployments.openai_compat.deployment import OpenAICompatDeployment
    ctx = AppContext(AppConfig(triton_url="127.0.0.1:1"))
    ctx.deployment = OpenAICompatDeployment("http://127.0.0.1:9", AdapterRegistry(tmp_path / "adapters"))
    monkeypatch.setattr(OpenAICompatDeployment, "family", "video-neva", raising=False)
    video = str(ball_video(tmp_path / "ball.gif", frames=30))
    picture = str(shape_picture(tmp_path / "circle.png"))
    picture_media, video_media = check_new_turn(ctx, "What moves?", [picture, video])
    assert len(video_media.frames) == 7 and "(as many as the deployment takes in one message)" in video_media.detail
    assert picture_media.pictures == (picture,)
    with pytest.raises(TooManyImages, match="at most 8 image"):
        check_new_turn(ctx, "What moves?", [picture] * 8 + [video])
    assert replace(video_media, frames=()).pictures == ()


def test_each_decoders_refusal_names_the_file_and_its_kind(tmp_path):
    """Pillow's decompression-bomb check (it raised out of the GIF check: HTTP 500 through /v1), OpenCV's FFmpeg on a
    cut-off MP4, bytes that are no video sent as a video (they were called "not an image"), pdfium on a damaged PDF."""
    from app.chat.media_intake import declared_video

    with pytest.raises(InvalidVideo, match=r"^screen\.gif is 60000 x 60000 pixels per frame"):
        media_for(bomb_gif(), "screen.gif")
    whole = ball_video(tmp_path / "ball.mp4").read_bytes()
    with pytest.raises(InvalidVideo, match=r"^cut\.mp4 could not be read as a video"):
        media_for(whole[: len(whole) // 3], "cut.mp4")
    with pytest.raises(InvalidVideo, match=r"^noise\.webm is not an MP4, WebM or GIF video"):
        declared_video(b"\x13\x37" * 2000, "noise.webm")
    assert declared_video(whole, "ball.mp4").kind == VIDEO
    with pytest.raises(InvalidDocument, match=r"^broken\.pdf"):
        media_for(b"%PDF-1.7\n" + b"\x00garbage" * 50, "broken.pdf")
