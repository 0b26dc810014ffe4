"""'What the model saw': the image encoder's findings in a reply's images as plain lines (CPU demo encoders
only), or the runner kind's prompt format and notes; the chat shows them folded under the reply
(app.web.chat_view)."""

from __future__ import annotations

from app.core.errors import ChatError


def image_reports(stream) -> list[dict] | None:
    """What the encoder found in the reply's images, or None (no images, or an encoder that cannot say)."""
    report = stream.image_report
    if report is None:
        return None
    try:
        return report()
    except ChatError:  # the reply itself is fine; only the folded details are missing
        return None


def _percent(value: float) -> str:
    return f"{round(100 * float(value))}%"


def report_lines(report: dict) -> list[str]:
    """Plain-text lines for one image: labels with confidences, faces, colours, shapes, text, the description; a
    report of `details` alone (the runner kind's prompt format and notes) is those lines."""
    if "details" in report:
        return [str(line) for line in report["details"]]
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
    if report.get("format"):  # a family twin's encoder: the family format it applied
        lines.append(f"Family format: {report['format']}")
    return lines


def saw_lines(reports: list[dict] | None) -> tuple[tuple[str, ...], ...]:
    """Per image, the plain lines of what the encoder found (() without reports)."""
    return tuple(tuple(" ".join(line.split()) for line in report_lines(report)) for report in reports or ())

