"""Files the browser saves from text the page already holds: a hidden payload box and the script that saves it.

No file is written on the server and none is served from its folders: the text reaches the browser as an event's
output (so the handler's access check covers it) and the page turns it into a download."""

from __future__ import annotations

import json

SAVE_PAYLOAD_JS = """(payload) => {
    if (!payload) return;
    const {name, type, text} = JSON.parse(payload);
    const url = URL.createObjectURL(new Blob([text], {type}));
    const link = Object.assign(document.createElement("a"), {href: url, download: name});
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
}"""


def download_payload(name: str, text: str, mime: str) -> str:
    """What the hidden payload box holds for SAVE_PAYLOAD_JS: the file's name, type and text."""
    return json.dumps({"name": name, "type": mime, "text": text})
