"""Video intake on short videos made on the fly (tests/media.py): a red ball crossing a white frame."""

import io

import numpy as np
import pytest
from PIL import Image

from app.core import constants as C
from app.core.errors import InvalidImage, InvalidVideo
from app.vision import messages as M
from app.vision import video as V
from app.vision.video import (
    VideoLimits,
    frame_strip,
    gif_delays,
    probe_video,
    sample_indices,
    sample_video,
    time_labels,
    video_format,
)
from tests.media import ball_frame, ball_video, ball_x

FRAMES, FPS, SIZE = 30, 10.0, (160, 120)


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("videos")
    return {kind: ball_video(folder / f"ball.{kind}", FRAMES, FPS, SIZE) for kind in ("mp4", "webm", "gif")}


def expected_x(index: int) -> float:
    return ball_x(ball_frame(index, FRAMES, SIZE))


@pytest.mark.parametrize(("total", "count", "indices"), [
    (30, 6, (0, 6, 12, 17, 23, 29)),
    (12, 12, tuple(range(12))),
    (2, 3, (0, 1, 1)),
    (9, 1, (4,)),
    (1, 4, (0, 0, 0, 0)),
])
def test_sample_indices_spread_evenly_with_both_ends(total, count, indices):
    assert sample_indices(total, count) == indices


def test_sample_indices_repeat_frames_when_the_video_is_shorter_than_the_count():
    indices = sample_indices(5, 12)
    assert len(indices) == 12 and set(indices) == set(range(5)) and list(indices) == sorted(indices)


@pytest.mark.parametrize(("total", "count"), [(0, 3), (3, 0)])
def test_sample_indices_refuse_nothing_to_sample(total, count):
    with pytest.raises(ValueError):
        sample_indices(total, count)


@pytest.mark.parametrize(("kind", "name"), [("mp4", "MP4"), ("webm", "WebM"), ("gif", "GIF")])
def test_each_format_is_known_by_its_bytes_and_probed_from_its_header(videos, kind, name):
    path = videos[kind]
    assert video_format(path.read_bytes()[:64]) == name
    info = probe_video(path)
    assert (info.name, info.format, info.width, info.height, info.frame_count) == (path.name, name, *SIZE, FRAMES)
    assert info.fps == pytest.approx(FPS, rel=0.01) and info.seconds == pytest.approx(FRAMES / FPS, rel=0.01)


@pytest.mark.parametrize("kind", ["mp4", "webm", "gif"])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_sampled_frames_follow_the_ball_across_the_video(videos, kind, as_bytes):
    source = videos[kind].read_bytes() if as_bytes else videos[kind]
    sampled = sample_video(source, 6, name="ball")
    assert sampled.indices == sample_indices(FRAMES, 6)
    assert len(sampled.frames) == 6 and all(f.mode == "RGB" and f.size == SIZE for f in sampled.frames)
    xs = [ball_x(frame) for frame in sampled.frames]
    assert xs == sorted(xs) and xs[-1] - xs[0] > 100
    for index, x in zip(sampled.indices, xs, strict=True):
        assert x == pytest.approx(expected_x(index), abs=2.0)
    assert sampled.times == pytest.approx([i / FPS for i in sampled.indices], abs=0.011)
    assert time_labels(sampled) == [f"{i / FPS:.1f} s" for i in sampled.indices]


def test_the_format_comes_from_the_bytes_not_the_name(videos, tmp_path):
    renamed = tmp_path / "really-an-mp4.gif"
    renamed.write_bytes(videos["mp4"].read_bytes())
    assert probe_video(renamed).format == "MP4"


def test_twelve_frames_for_video_neva_from_a_shorter_clip(tmp_path):
    short = ball_video(tmp_path / "short.mp4", frames=5, fps=5.0, size=SIZE)
    sampled = sample_video(short, 12)
    assert len(sampled.frames) == 12 and sampled.indices == sample_indices(5, 12)


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize(("data", "message"), [
    (b"", M.MSG_VIDEO_EMPTY.format(name="clip")),
    (b"not a video at all, just text", M.MSG_VIDEO_UNSUPPORTED_FORMAT.format(name="clip")),
    (png_bytes(), M.MSG_VIDEO_UNSUPPORTED_FORMAT.format(name="clip")),
    (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01matroska" + bytes(64), M.MSG_VIDEO_UNSUPPORTED_FORMAT.format(name="clip")),
])
def test_non_videos_are_refused_with_a_sentence(data, message):
    with pytest.raises(InvalidVideo) as caught:
        probe_video(data, name="clip")
    assert str(caught.value) == message


@pytest.mark.parametrize("kind", ["mp4", "gif"])
def test_a_cut_off_file_is_refused_as_unreadable(videos, kind):
    data = videos[kind].read_bytes()
    with pytest.raises(InvalidVideo) as caught:
        sample_video(data[: len(data) // 2], 4, name="clip")
    assert str(caught.value).startswith("clip could not be read as a video (")


@pytest.mark.parametrize("kind", ["mp4", "webm", "gif"])
def test_each_limit_is_checked_before_any_frame_is_decoded(videos, kind, monkeypatch):
    def no_decoding(*args, **kwargs):
        raise AssertionError("a frame was decoded before the limits were checked")

    monkeypatch.setattr(V, "_capture_frames", no_decoding)
    monkeypatch.setattr(V, "_gif_frames", no_decoding)
    path = videos[kind]
    cases = [
        (VideoLimits(max_seconds=2.0),
         M.MSG_VIDEO_TOO_LONG.format(name=path.name, seconds=FRAMES / FPS, limit=2.0)),
        (VideoLimits(max_frames=20), M.MSG_VIDEO_TOO_MANY_FRAMES.format(name=path.name, frames=FRAMES, limit=20)),
        (VideoLimits(max_frame_pixels=100 * 100),
         M.MSG_VIDEO_FRAME_TOO_LARGE.format(name=path.name, width=SIZE[0], height=SIZE[1], limit_mp=0.01)),
        (VideoLimits(max_bytes=100),
         M.MSG_VIDEO_TOO_LARGE_BYTES.format(name=path.name, size_mb=path.stat().st_size / 2**20,
                                            limit_mb=100 / 2**20)),
    ]
    for limits, message in cases:
        with pytest.raises(InvalidVideo) as caught:
            sample_video(path, 4, limits=limits)
        assert str(caught.value) == message


def test_video_refusals_are_refused_like_images_everywhere():
    assert issubclass(InvalidVideo, InvalidImage)


@pytest.mark.parametrize("count", [0, C.MAX_SAMPLED_FRAMES + 1])
def test_a_frame_count_outside_the_runner_range_is_a_programming_error(videos, count):
    with pytest.raises(ValueError):
        sample_video(videos["mp4"], count)


def test_gif_delays_are_read_without_decoding_and_short_ones_play_at_the_browser_rate(tmp_path):
    frames = [ball_frame(i, 4, SIZE) for i in range(4)]
    path = tmp_path / "delays.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=[250, 0, 40, 10], loop=0)
    width, height, delays = gif_delays(path.read_bytes())
    assert (width, height) == SIZE
    assert delays == (250, C.GIF_DEFAULT_DELAY_MS, 40, C.GIF_DEFAULT_DELAY_MS)
    assert probe_video(path).seconds == pytest.approx((250 + 100 + 40 + 100) / 1000)


def test_gif_times_are_the_sums_of_the_earlier_delays(tmp_path):
    frames = [ball_frame(i, 3, SIZE) for i in range(3)]
    path = tmp_path / "times.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=[500, 200, 300], loop=0)
    assert sample_video(path, 3).times == pytest.approx((0.0, 0.5, 0.7))


def test_frame_strip_puts_frames_side_by_side_at_one_height(videos):
    sampled = sample_video(videos["mp4"], 4)
    strip = frame_strip(sampled.frames, height=60, gap=4)
    tile = round(60 * SIZE[0] / SIZE[1])
    assert strip.size == (4 * tile + 5 * 4, 60 + 2 * 4)
    pixels = np.asarray(strip).astype(int)
    red = (pixels[..., 0] > 150) & (pixels[..., 1] < 100) & (pixels[..., 2] < 100)
    tiles_with_red = {int(c - 4) // (tile + 4) for c in np.nonzero(red)[1]}
    assert tiles_with_red == {0, 1, 2, 3}


def test_frame_strip_labels_take_a_band_and_the_width_is_capped(videos):
    sampled = sample_video(videos["gif"], 8)
    labelled = frame_strip(sampled.frames, height=90, labels=time_labels(sampled))
    plain = frame_strip(sampled.frames, height=90)
    assert labelled.width == plain.width and labelled.height > plain.height
    narrow = frame_strip(sampled.frames, height=200, max_width=400)
    assert narrow.width <= 400 and narrow.height < 200
    with pytest.raises(ValueError):
        frame_strip(sampled.frames, labels=["only one"])
