"""Display files the chat shows for media and parsed replies: a video's (or a PDF's) strip of sampled frames,
a chart table's CSV, a picture with its grounded boxes drawn. Written once per content under the upload folder
(Gradio serves it; nothing is read back), each atomically."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from PIL import Image

from app.chat.media_intake import upload_root
from app.chat.reply_outputs import ReplyOutputs
from app.core.conversation import Media
from app.outputs.chart_table import table_csv
from app.outputs.grounding_picture import draw_grounding
from app.vision.images import load_image
from app.vision.video import frame_strip

OUTPUTS_FOLDER = "shown-outputs"


def _target(key: str, name: str) -> Path:
    folder = upload_root() / OUTPUTS_FOLDER / hashlib.sha256(key.encode()).hexdigest()[:24]
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def _write(path: Path, save) -> str:
    if not path.exists():
        partial = path.with_name(path.name + ".part")
        save(partial)
        partial.replace(path)
    return str(path)


def strip_file(media: Media) -> str | None:
    """The strip of a video's sampled frames or a PDF's pages, labelled; None when its frames are not files."""
    paths = [f for f in media.frames if isinstance(f, str) and Path(f).is_file()]
    if not paths or len(paths) != len(media.frames):
        return None
    path = _target("strip:" + "|".join(paths), "frames.png")

    def save(target: Path) -> None:
        frames = []
        for frame in paths:
            with Image.open(frame) as opened:
                frames.append(opened.convert("RGB"))
        labels = list(media.labels) if len(media.labels) == len(frames) else None
        frame_strip(frames, height=120, labels=labels).save(target, format="PNG")
    return _write(path, save)


def csv_file(outputs: ReplyOutputs) -> str | None:
    """The chart table as a CSV file named after its title."""
    if outputs.table is None or outputs.table.is_empty:
        return None
    text = table_csv(outputs.table)
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", outputs.table.title or "").strip("-")[:60] or "chart-table"
    return _write(_target("csv:" + text, f"{stem}.csv"), lambda target: target.write_text(text, encoding="utf-8"))


def grounded_file(outputs: ReplyOutputs) -> str | None:
    """The picture the reply is about with its phrases' boxes drawn; None without a picture or boxes."""
    if outputs.grounding is None or outputs.picture is None:
        return None
    source = outputs.picture
    if isinstance(source, str) and not Path(source).is_file():
        return None
    key = "grounded:" + repr(outputs.grounding) + (source if isinstance(source, str)
                                                   else hashlib.sha256(source).hexdigest())

    def save(target: Path) -> None:
        draw_grounding(load_image(source), outputs.grounding).save(target, format="PNG")
    return _write(_target(key, "grounded.png"), save)
