"""A message's files as typed media: a picture as it is, a video sampled to the served family's frame count, a
PDF rendered to page images. Every limit is checked here, before anything runs (app.vision refuses with a
sentence each); the frames and pages are written as PNG files next to the upload, so they reach a deployment
like pictures and the page can show them.

How a video reaches the model: the whole file as the model's video input when the served model declares one
(the runner topology's `takes_video`), otherwise its frames as pictures; `Media.detail` says which.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from app.core.constants import DEFAULT_VIDEO_FRAMES, MAX_SAMPLED_FRAMES
from app.core.conversation import IMAGE, PDF, VIDEO, Media
from app.core.errors import InvalidVideo
from app.vision.documents import render_pdf
from app.vision.messages import MSG_VIDEO_UNSUPPORTED_FORMAT
from app.vision.video import sample_video, time_labels, video_format
from setup.catalog.family_data import family_files

PDF_MAGIC = b"%PDF"
_HEAD = 1024
FRAMES_FOLDER = "media-frames"  # under the upload folder: Gradio serves what is in it


def family_video_frames(family: str | None) -> int:
    """How many frames the family takes from a video: its file's `video_frames`, else its runner format's
    `frames` (Video NeVA's 12), else DEFAULT_VIDEO_FRAMES (the CPU twins describe each frame)."""
    raw = family_files().get(family or "", {})
    count = raw.get("video_frames") or (raw.get("runner_format") or {}).get("frames") or DEFAULT_VIDEO_FRAMES
    return max(1, min(int(count), MAX_SAMPLED_FRAMES))


def file_kind(head: bytes) -> str:
    """VIDEO or PDF from a file's first bytes (never its name); IMAGE for anything else (checked as a picture).
    A GIF is a video only when it has more than one frame: that is decided by `media_for`."""
    if head.lstrip()[:4] == PDF_MAGIC or PDF_MAGIC in head[:_HEAD]:
        return PDF
    return VIDEO if video_format(head) in ("MP4", "WebM", "GIF") else IMAGE


def _read_head(source: str | bytes) -> bytes:
    if isinstance(source, bytes):
        return source[:_HEAD]
    try:
        with open(source, "rb") as handle:
            return handle.read(_HEAD)
    except OSError:  # a file that cannot be read: the picture check names the problem
        return b""


def _is_still_gif(source: str | bytes) -> bool:
    from io import BytesIO
    try:
        with Image.open(BytesIO(source) if isinstance(source, bytes) else source) as picture:
            return getattr(picture, "n_frames", 1) <= 1
    except (OSError, Image.DecompressionBombError):  # the video checks read its header and say what is wrong
        return False


def upload_root() -> Path:
    """Gradio's upload folder (GRADIO_TEMP_DIR, else the system's temp folder / gradio)."""
    configured = os.environ.get("GRADIO_TEMP_DIR")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "gradio"


def _save(images: Sequence[Image.Image], key: str, stem: str) -> tuple[str, ...]:
    folder = upload_root() / FRAMES_FOLDER / key
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, image in enumerate(images):
        path = folder / f"{stem}-{index + 1:02d}.png"
        partial = path.with_suffix(".part")
        image.save(partial, format="PNG")
        partial.replace(path)  # never a half-written frame
        paths.append(str(path))
    return tuple(paths)


def _key(source: str | bytes, extra: str) -> str:
    digest = hashlib.sha256(extra.encode())
    if isinstance(source, bytes):
        digest.update(source)
    else:
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()[:24]


def video_media(source: str | bytes, name: str, frame_count: int, takes_video: bool = False,
                fitted: bool = False) -> Media:
    """A video sampled to `frame_count` frames (InvalidVideo for one over a limit); `fitted`: fewer frames than
    the family takes, as many as the deployment takes pictures in one message (said in `detail`)."""
    video = sample_video(source, frame_count, name=name)
    frames = _save(video.frames, _key(source, f"video/{frame_count}"), "frame")
    info = video.info
    length = f"{info.seconds:.1f} s, " if info.seconds is not None else ""
    how = "sent as the model's video input" if takes_video else f"sent as {len(frames)} pictures"
    if fitted:
        how += " (as many as the deployment takes in one message)"
    detail = f"{info.format} video ({length}{info.frame_count} frames): {len(frames)} frames sampled evenly, {how}"
    path, data = (None, source) if isinstance(source, bytes) else (str(source), None)
    return Media(name=name, path=path, data=data, kind=VIDEO, frames=frames, labels=tuple(time_labels(video)),
                 detail=detail, as_video=takes_video)


def pdf_media(source: str | bytes, name: str, pages: str | None = None) -> Media:
    """A PDF's pages (all, or the range `pages` such as "1-3,5") rendered to pictures (InvalidDocument)."""
    rendered = render_pdf(source, name=name, pages=pages or None)
    frames = _save(rendered.pages, _key(source, f"pdf/{rendered.numbers}"), "page")
    detail = (f"PDF ({rendered.page_count} page{'s' if rendered.page_count != 1 else ''}): "
              f"page{'s' if len(frames) != 1 else ''} {', '.join(map(str, rendered.numbers))} sent as pictures")
    path, data = (None, source) if isinstance(source, bytes) else (str(source), None)
    return Media(name=name, path=path, data=data, kind=PDF, frames=frames,
                 labels=tuple(f"page {n}" for n in rendered.numbers), detail=detail)


def declared_video(source: str | bytes, name: str, **options) -> Media:
    """A file sent as a video (an API's video part): its media, or InvalidVideo when its bytes are no video (they
    are not then checked as a picture, which would call the video "not an image")."""
    if file_kind(_read_head(source)) != VIDEO:
        raise InvalidVideo(MSG_VIDEO_UNSUPPORTED_FORMAT.format(name=name))
    return media_for(source, name=name, **options)


def media_for(source: str | bytes, name: str | None = None, family: str | None = None, takes_video: bool = False,
              pages: str | None = None, frame_count: int | None = None) -> Media:
    """One uploaded file as media: a picture (unchanged), a video's sampled frames (the family's count, or
    `frame_count` to fit a deployment that takes fewer pictures), a PDF's pages."""
    name = name or (Path(source).name if isinstance(source, str) else "the upload")
    kind = file_kind(_read_head(source))
    if kind == PDF:
        return pdf_media(source, name, pages)
    if kind == VIDEO and not (video_format(_read_head(source)) == "GIF" and _is_still_gif(source)):
        fitted = frame_count is not None and frame_count < family_video_frames(family)
        return video_media(source, name, frame_count if fitted else family_video_frames(family), takes_video, fitted)
    return Media(name=name, path=source, kind=IMAGE) if isinstance(source, str) else Media(name=name, data=source)
