"""Video intake: check an uploaded MP4, WebM or GIF and sample its frames evenly.

The format comes from the file's first bytes, never its name. Every limit (bytes, duration, frames in the
file, pixels per frame) is checked from the container's header before any frame is decoded: MP4 and WebM
through OpenCV's bundled FFmpeg, GIF by walking its blocks without decoding a pixel. Then only the frames up
to the last sampled one are decoded, and only the sampled ones are kept, as upright 8-bit RGB images. Every
refusal is an `InvalidVideo` whose message names the file and says what to do.

How many frames to sample is the caller's: it comes from the deployed family (Video NeVA's engine takes 12,
LLaVA-OneVision's runner 8 by default and at most 32).
"""

from __future__ import annotations

import io
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from app.core.constants import (
    GIF_DEFAULT_DELAY_MS,
    MAX_SAMPLED_FRAMES,
    MAX_VIDEO_BYTES,
    MAX_VIDEO_FRAME_PIXELS,
    MAX_VIDEO_FRAMES,
    MAX_VIDEO_SECONDS,
)
from app.core.errors import InvalidVideo
from app.vision.images import to_rgb
from app.vision.messages import (
    MSG_VIDEO_EMPTY,
    MSG_VIDEO_FRAME_TOO_LARGE,
    MSG_VIDEO_NO_FRAMES,
    MSG_VIDEO_TOO_LARGE_BYTES,
    MSG_VIDEO_TOO_LONG,
    MSG_VIDEO_TOO_MANY_FRAMES,
    MSG_VIDEO_UNREADABLE,
    MSG_VIDEO_UNSUPPORTED_FORMAT,
)
from app.vision.opencv import cv2

_MB = 1024 * 1024
_HEAD_BYTES = 64
_MAX_FPS = 1000.0  # a header claiming more is treated as not knowing its rate
_SUFFIX = {"MP4": ".mp4", "WebM": ".webm", "GIF": ".gif"}
STRIP_BACKGROUND = (236, 236, 236)
STRIP_OUTLINE = (170, 170, 170)


@dataclass(frozen=True)
class VideoLimits:
    """Upload limits; the defaults come from app/core/constants.py."""

    max_bytes: int = MAX_VIDEO_BYTES
    max_seconds: float = MAX_VIDEO_SECONDS
    max_frames: int = MAX_VIDEO_FRAMES
    max_frame_pixels: int = MAX_VIDEO_FRAME_PIXELS


@dataclass(frozen=True)
class VideoInfo:
    """What the header says: `fps` and `seconds` are None where the container does not tell."""

    name: str
    format: str  # "MP4", "WebM" or "GIF"
    width: int
    height: int
    frame_count: int
    fps: float | None
    seconds: float | None


@dataclass(frozen=True)
class SampledVideo:
    """The sampled frames (RGB), their indices in the file and their start times in seconds (None: unknown)."""

    info: VideoInfo
    frames: tuple[Image.Image, ...]
    indices: tuple[int, ...]
    times: tuple[float | None, ...]


def video_format(head: bytes) -> str | None:
    """"MP4", "WebM" or "GIF" from a file's first bytes; None for anything else (Matroska, AVI, images...)."""
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if head[4:8] == b"ftyp" and head[8:12] != b"qt  ":
        return "MP4"
    if head[:4] == b"\x1a\x45\xdf\xa3" and b"webm" in head[:_HEAD_BYTES]:
        return "WebM"
    return None


def sample_indices(total: int, count: int) -> tuple[int, ...]:
    """`count` frame indices spread evenly over `total` frames, first and last included.

    One frame is the middle one. With fewer frames than asked, frames repeat so that exactly `count`
    come back (an engine built for N frames takes exactly N).
    """
    if total < 1 or count < 1:
        raise ValueError(f"need at least one frame to sample and to keep (total={total}, count={count})")
    if count == 1:
        return ((total - 1) // 2,)
    step = (total - 1) / (count - 1)
    return tuple(int(math.floor(i * step + 0.5)) for i in range(count))


def _name_of(source: str | os.PathLike | bytes, name: str | None) -> str:
    if name:
        return name
    return "The video" if isinstance(source, bytes | bytearray) else Path(source).name


def _check_size(size: int, name: str, limits: VideoLimits) -> None:
    if size == 0:
        raise InvalidVideo(MSG_VIDEO_EMPTY.format(name=name))
    if size > limits.max_bytes:
        raise InvalidVideo(MSG_VIDEO_TOO_LARGE_BYTES.format(name=name, size_mb=size / _MB,
                                                            limit_mb=limits.max_bytes / _MB))


def _head(source: str | os.PathLike | bytes, name: str, limits: VideoLimits) -> tuple[str, bytes | None]:
    """The format, checking the size first; bytes sources come back whole, paths are not read here."""
    if isinstance(source, bytes | bytearray):
        data = bytes(source)
        _check_size(len(data), name, limits)
        head = data[:_HEAD_BYTES]
    else:
        path = Path(source)
        _check_size(path.stat().st_size, name, limits)
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
        data = None
    kind = video_format(head)
    if kind is None:
        raise InvalidVideo(MSG_VIDEO_UNSUPPORTED_FORMAT.format(name=name))
    return kind, data


def _check_limits(info: VideoInfo, limits: VideoLimits) -> VideoInfo:
    name = info.name
    if info.width <= 0 or info.height <= 0:
        raise InvalidVideo(MSG_VIDEO_UNREADABLE.format(name=name, detail="no frame size in its header"))
    if info.width * info.height > limits.max_frame_pixels:
        raise InvalidVideo(MSG_VIDEO_FRAME_TOO_LARGE.format(name=name, width=info.width, height=info.height,
                                                            limit_mp=limits.max_frame_pixels / 1e6))
    if info.seconds is not None and info.seconds > limits.max_seconds:
        raise InvalidVideo(MSG_VIDEO_TOO_LONG.format(name=name, seconds=info.seconds, limit=limits.max_seconds))
    if info.frame_count > limits.max_frames:
        raise InvalidVideo(MSG_VIDEO_TOO_MANY_FRAMES.format(name=name, frames=info.frame_count,
                                                            limit=limits.max_frames))
    if info.frame_count < 1:
        raise InvalidVideo(MSG_VIDEO_NO_FRAMES.format(name=name))
    return info


# --- GIF: blocks walked without decoding (GIF89a: header, screen descriptor, extensions, images, trailer)

def _skip_sub_blocks(data: bytes, pos: int) -> int:
    while pos < len(data):
        size = data[pos]
        pos += 1 + size
        if size == 0:
            return pos
    raise ValueError("the file ends inside a data block")


def gif_delays(data: bytes) -> tuple[int, int, tuple[int, ...]]:
    """(width, height, delay of each frame in ms) read from the blocks; no pixel is decoded."""
    if len(data) < 13:
        raise ValueError("the header is cut off")
    width, height = int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    pos = 13 + (3 * (2 << (data[10] & 7)) if data[10] & 0x80 else 0)
    delays: list[int] = []
    pending: int | None = None
    while pos < len(data):
        kind = data[pos]
        pos += 1
        if kind == 0x3B:  # trailer
            break
        if kind == 0x21 and pos < len(data):  # extension: label, then sub-blocks
            label = data[pos]
            if label == 0xF9 and pos + 4 < len(data) and data[pos + 1] >= 4:
                pending = int.from_bytes(data[pos + 3:pos + 5], "little") * 10
            pos = _skip_sub_blocks(data, pos + 1)
        elif kind == 0x2C:  # image descriptor, optional local colour table, LZW code size, sub-blocks
            if pos + 9 > len(data):
                raise ValueError("an image descriptor is cut off")
            flags = data[pos + 8]
            pos += 9 + (3 * (2 << (flags & 7)) if flags & 0x80 else 0) + 1
            pos = _skip_sub_blocks(data, pos)
            delays.append(pending if pending is not None and pending >= 20 else GIF_DEFAULT_DELAY_MS)
            pending = None
        # any other byte is skipped, as Pillow's reader does
    return width, height, tuple(delays)


def _probe_gif(data: bytes, name: str) -> tuple[VideoInfo, tuple[int, ...]]:
    try:
        width, height, delays = gif_delays(data)
    except ValueError as exc:
        raise InvalidVideo(MSG_VIDEO_UNREADABLE.format(name=name, detail=exc)) from None
    seconds = sum(delays) / 1000.0
    fps = len(delays) / seconds if seconds > 0 else None
    return VideoInfo(name, "GIF", width, height, len(delays), fps, seconds), delays


def _gif_frames(data: bytes, indices: Sequence[int], name: str) -> dict[int, Image.Image]:
    frames: dict[int, Image.Image] = {}
    try:
        with Image.open(io.BytesIO(data)) as image:
            for index in sorted(set(indices)):
                image.seek(index)
                image.load()
                frames[index] = to_rgb(image.copy())
    except (OSError, EOFError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        if not frames:
            raise InvalidVideo(MSG_VIDEO_UNREADABLE.format(name=name, detail=exc)) from None
    return frames


# --- MP4 / WebM through OpenCV's FFmpeg (it reads from a path)

@contextmanager
def _on_disk(source: str | os.PathLike | bytes, data: bytes | None, kind: str) -> Iterator[Path]:
    if data is None:
        yield Path(source)
        return
    with tempfile.TemporaryDirectory(prefix="video-") as folder:
        path = Path(folder) / f"upload{_SUFFIX[kind]}"
        path.write_bytes(data)
        yield path


def _open_capture(path: Path, name: str) -> cv2.VideoCapture:
    capture = cv2.VideoCapture(str(path), cv2.CAP_FFMPEG)
    if not capture.isOpened():
        capture.release()
        raise InvalidVideo(MSG_VIDEO_UNREADABLE.format(name=name, detail="no video stream could be opened"))
    return capture


def _count_frames(path: Path, name: str, limit: int) -> int:
    """Frames counted by stepping through them (only when the header does not say); stops past `limit`."""
    capture = _open_capture(path, name)
    try:
        count = 0
        while count <= limit and capture.grab():
            count += 1
        return count
    finally:
        capture.release()


def _probe_capture(path: Path, kind: str, name: str, limits: VideoLimits) -> VideoInfo:
    capture = _open_capture(path, name)
    try:
        width = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH))
        height = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
        count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
        fps = float(capture.get(cv2.CAP_PROP_FPS))
    finally:
        capture.release()
    fps_known = math.isfinite(fps) and 0 < fps <= _MAX_FPS
    seconds = count / fps if fps_known and count > 0 else None
    info = VideoInfo(name, kind, width, height, max(count, 0), fps if fps_known else None, seconds)
    if count <= 0:  # the header does not say: check the rest first, then count (bounded by the limit)
        _check_limits(VideoInfo(name, kind, width, height, 1, info.fps, None), limits)
        count = _count_frames(path, name, limits.max_frames)
        info = VideoInfo(name, kind, width, height, count, info.fps, count / fps if fps_known else None)
    return _check_limits(info, limits)


def _capture_frames(path: Path, indices: Sequence[int], name: str) -> tuple[dict[int, Image.Image], int]:
    """The wanted frames, decoding only up to the last of them; and how many frames were stepped through."""
    wanted = set(indices)
    last = max(wanted)
    frames: dict[int, Image.Image] = {}
    capture = _open_capture(path, name)
    try:
        index = 0
        while index <= last and capture.grab():
            if index in wanted:
                ok, bgr = capture.retrieve()
                if ok and bgr is not None:
                    frames[index] = Image.fromarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
            index += 1
        return frames, index
    finally:
        capture.release()


# --- public entry points

def probe_video(source: str | os.PathLike | bytes, name: str | None = None,
                limits: VideoLimits = VideoLimits()) -> VideoInfo:
    """Check an upload (path or bytes) against every limit from its header alone; raises InvalidVideo."""
    name = _name_of(source, name)
    kind, data = _head(source, name, limits)
    if kind == "GIF":
        gif = data if data is not None else Path(source).read_bytes()
        return _check_limits(_probe_gif(gif, name)[0], limits)
    with _on_disk(source, data, kind) as path:
        return _probe_capture(path, kind, name, limits)


def sample_video(source: str | os.PathLike | bytes, frame_count: int, name: str | None = None,
                 limits: VideoLimits = VideoLimits()) -> SampledVideo:
    """Check an upload, then decode `frame_count` frames spread evenly over it (see `sample_indices`).

    Raises InvalidVideo with a message for the user; ValueError for a frame count outside 1..32.
    """
    if not 1 <= frame_count <= MAX_SAMPLED_FRAMES:
        raise ValueError(f"frame_count must be 1..{MAX_SAMPLED_FRAMES}, not {frame_count}")
    name = _name_of(source, name)
    kind, data = _head(source, name, limits)
    if kind == "GIF":
        gif = data if data is not None else Path(source).read_bytes()
        info, delays = _probe_gif(gif, name)
        _check_limits(info, limits)
        indices = sample_indices(info.frame_count, frame_count)
        frames = _gif_frames(gif, indices, name)
        starts = [sum(delays[:i]) / 1000.0 for i in range(len(delays))]
        return _assemble(info, indices, frames, lambda i: starts[i])
    with _on_disk(source, data, kind) as path:
        info = _probe_capture(path, kind, name, limits)
        indices = sample_indices(info.frame_count, frame_count)
        frames, stepped = _capture_frames(path, indices, name)
        if stepped <= max(indices) and stepped > 0:  # the header counted more frames than the stream has
            info = VideoInfo(name, kind, info.width, info.height, stepped, info.fps,
                             stepped / info.fps if info.fps else None)
            indices = sample_indices(stepped, frame_count)
            frames, _ = _capture_frames(path, indices, name)
    fps = info.fps
    return _assemble(info, indices, frames, lambda i: i / fps if fps else None)


def _assemble(info: VideoInfo, indices: tuple[int, ...], frames: dict[int, Image.Image], start_of) -> SampledVideo:
    if not frames:
        raise InvalidVideo(MSG_VIDEO_NO_FRAMES.format(name=info.name))
    # a frame that would not decode is replaced by the nearest one that did
    kept = tuple(frames[min(frames, key=lambda k, i=i: (abs(k - i), k))] for i in indices)
    return SampledVideo(info, kept, indices, tuple(start_of(i) for i in indices))


def frame_strip(frames: Sequence[Image.Image], height: int = 96, gap: int = 4, max_width: int = 1600,
                labels: Sequence[str] | None = None,
                background: tuple[int, int, int] = STRIP_BACKGROUND) -> Image.Image:
    """The frames side by side at one height (lowered to fit `max_width`), each framed by a thin line and
    with its label under it."""
    if not frames:
        raise ValueError("no frames to put in a strip")
    if labels is not None and len(labels) != len(frames):
        raise ValueError(f"{len(labels)} labels for {len(frames)} frames")
    ratios = [frame.width / frame.height for frame in frames]
    room = max_width - gap * (len(frames) + 1)
    height = max(8, min(height, int(room / sum(ratios))))
    widths = [max(1, round(height * ratio)) for ratio in ratios]
    font = ImageFont.load_default(size=max(9, height // 8))
    band = 0 if labels is None else int(font.size * 1.6)
    strip = Image.new("RGB", (sum(widths) + gap * (len(frames) + 1), height + band + 2 * gap), background)
    draw = ImageDraw.Draw(strip)
    x = gap
    for index, (frame, width) in enumerate(zip(frames, widths, strict=True)):
        strip.paste(to_rgb(frame).resize((width, height), Image.Resampling.LANCZOS), (x, gap))
        draw.rectangle((x - 1, gap - 1, x + width, gap + height), outline=STRIP_OUTLINE)
        if labels is not None:
            draw.text((x + width / 2, gap + height + band / 2), labels[index], fill=(60, 60, 60), font=font,
                      anchor="mm")
        x += width + gap
    return strip


def time_labels(video: SampledVideo) -> list[str]:
    """'1.5 s' under each frame, or 'frame 12' where the file gives no times."""
    return [f"{t:.1f} s" if t is not None else f"frame {i}" for t, i in zip(video.times, video.indices, strict=True)]
