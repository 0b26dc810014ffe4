"""Model ids and the folders named after them: where a download goes and where a build writes by default."""

from __future__ import annotations

import re
from pathlib import Path

from setup.hub.messages import MSG_BAD_ID, MSG_BAD_REVISION

MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
REVISION = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._/-]{0,199}")
MODELS_FOLDER = "models"
BUILDS_FOLDER = "builds"
DEFAULT_REVISION = "main"
MARKER = ".download.json"  # written last into a download's folder: the download is complete


def model_id_problem(model_id: str) -> str | None:
    """A sentence when `model_id` is not ORG/NAME (no `..`, no spaces), else None."""
    if not MODEL_ID.fullmatch(model_id or "") or ".." in model_id:
        return MSG_BAD_ID.format(model_id=model_id)
    return None


def revision_problem(revision: str | None) -> str | None:
    if revision and (not REVISION.fullmatch(revision) or ".." in revision):
        return MSG_BAD_REVISION.format(revision=revision)
    return None


def looks_like_model_id(text: str | None) -> bool:
    """Whether a family's `example_checkpoint` is a hub id (some name a .nemo file in words instead)."""
    return bool(text) and model_id_problem(str(text)) is None


def scrub(text: str, token: str | None) -> str:
    """`text` with the token replaced, whatever a library put into it."""
    token = (token or "").strip()
    return text.replace(token, "***") if token else text


def _slug(model_id: str) -> str:
    return model_id.replace("/", "--")


def download_folder(root: Path, model_id: str, revision: str | None = None) -> Path:
    """<root>/models/ORG--NAME (…@REVISION for another revision than main)."""
    name = _slug(model_id)
    if revision and revision != DEFAULT_REVISION:
        name += "@" + revision.replace("/", "-")
    return Path(root) / MODELS_FOLDER / name


def build_folder(root: Path, family: str, model_id: str) -> Path:
    """<root>/builds/FAMILY--ORG--NAME: a build's default output folder."""
    return Path(root) / BUILDS_FOLDER / f"{family}--{_slug(model_id)}"


def hub_defaults(values: dict, root: Path) -> dict:
    """`values` (PlanConfig fields) with an empty checkpoint and output folder named from the model id, under
    `root`; unchanged without a valid model id."""
    model_id = str(values.get("model_id") or "").strip()
    if not model_id or model_id_problem(model_id):
        return dict(values)
    filled = dict(values, model_id=model_id)
    if not str(values.get("checkpoint") or "").strip():
        filled["checkpoint"] = str(download_folder(root, model_id, values.get("revision") or None))
    if not str(values.get("out") or "").strip() and values.get("family"):
        filled["out"] = str(build_folder(root, str(values["family"]), model_id))
    return filled
