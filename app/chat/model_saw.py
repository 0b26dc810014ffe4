"""'What the model saw': the image encoder's findings under a reply, folded (CPU demo encoders only).

The block is one line of HTML (the history's footer pattern removes it before the model reads the
conversation again); every value the encoder reported is escaped.
"""

from __future__ import annotations

from html import escape

from app.core.constants import MODEL_SAW
from app.core.errors import ChatError


def image_reports(stream) -> list[dict] | None:
    """What the encoder found in the reply's images, or None (no images, or an encoder that cannot say)."""
    report = getattr(stream, "image_report", None)
    if report is None:
        return None
    try:
        return report()
    except ChatError:  # the reply itself is fine; only the folded details are missing
        return None


def _percent(value: float) -> str:
    return f"{round(100 * float(value))}%"


def report_lines(report: dict) -> list[str]:
    """Plain-text lines for one image: labels with confidences, faces, colours, shapes, text, the description."""
    lines = []
    if report.get("labels"):
        lines.append("Labels: " + ", ".join(f"{item['name']} {_percent(item['confidence'])}" for item in report["labels"]))
    faces = report.get("faces") or []
    if faces:
        lines.append(f"Faces: {len(faces)} (" + ", ".join(str(face.get("where", "")) for face in faces) + ")")
    if report.get("cat_faces"):
        lines.append(f"Cat faces: {len(report['cat_faces'])}")
    if report.get("colours"):
        lines.append("Colours: " + ", ".join(f"{c['name']} {_percent(c['share'])}" for c in report["colours"]))
    if report.get("shapes"):
        lines.append("Shapes: " + ", ".join(f"{s['colour']} {s['kind']}" for s in report["shapes"]))
    lines.append(f"Text: {report['text']}" if report.get("text") else "Text: none found")
    if report.get("description"):
        lines.append(f"Given to the model as: “{report['description']}”")
    return lines


def saw_lines(reports: list[dict] | None) -> tuple[tuple[str, ...], ...]:
    """Per image, the plain lines of what the encoder found (() without reports)."""
    return tuple(tuple(" ".join(line.split()) for line in report_lines(report)) for report in reports or ())


def saw_block(images: tuple[tuple[str, ...], ...]) -> str:
    """The folded block that ends a reply's text, from `saw_lines` ("" when there is nothing)."""
    if not images:
        return ""
    parts = []
    for number, lines in enumerate(images, 1):
        title = f"<b>Image {number}</b><br>" if len(images) > 1 else ""
        parts.append(f"<p>{title}{'<br>'.join(escape(line) for line in lines)}</p>")
    return MODEL_SAW.format(items="".join(parts))


def model_saw_block(reports: list[dict] | None) -> str:
    """The folded block that ends a reply's text ("" without reports)."""
    return saw_block(saw_lines(reports))
