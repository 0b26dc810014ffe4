"""What the CPU demo's encoder sees in one picture, and the short description the LLM is given.

A Perceiver runs the parts (ImageNet classifier, face and cat-face cascades, named colours and simple
shapes, setting cues from the pixels (scene.py), OCR) on one image and returns a Perception; `Perception.sentence()` is the text whose
embeddings become the image's prompt-table rows, `Perception.as_dict()` what a person is shown.
Labels below the "sure" confidence are worded as guesses ("perhaps ...").
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .classifier import ImageClassifier, Label
from .colours import ColourReader, Shape
from .faces import Face, FaceFinder, grey
from .margins import trim_margins
from .scene import Scene, SceneReader

DEFAULTS = {"top_k": 3, "min_confidence": 0.1, "sure_confidence": 0.5, "min_colour_share": 0.12,
            "max_colours": 3, "ocr_min_score": 0.85}
VOWELS = tuple("aeiouAEIOU")


def article(name: str) -> str:
    """'a cup', 'an espresso'."""
    return f"{'an' if name.startswith(VOWELS) else 'a'} {name}"


def joined(items: list[str], last: str = "and") -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def count_words(count: int, one: str, many: str) -> str:
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    return f"{words.get(count, count)} {one if count == 1 else many}"


@dataclass
class Perception:
    """Everything the encoder found in one image."""

    labels: list[Label] = field(default_factory=list)
    faces: list[Face] = field(default_factory=list)
    cat_faces: list[Face] = field(default_factory=list)
    colours: list[tuple[str, float]] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)
    text: str = ""
    sure_confidence: float = DEFAULTS["sure_confidence"]
    scene: Scene = field(default_factory=Scene)

    def _objects(self) -> str:
        if not self.labels:
            return ""
        named = [article(label.name) for label in self.labels]
        group = self.labels[0].group
        together = sum(label.confidence for label in self.labels if group and label.group == group)
        confident = max(together, self.labels[0].confidence) >= self.sure_confidence
        lead = "It shows" if confident else "It shows perhaps"
        if group:
            return f"{lead} {article(group)} ({joined(named, 'or')})."
        if confident:
            rest = f" Perhaps also {joined(named[1:], 'or')}." if len(named) > 1 else ""
            return f"{lead} {named[0]}.{rest}"
        return f"{lead} {joined(named, 'or')}."

    def sentence(self) -> str:
        """The short description the LLM reads for this image."""
        parts = [self._objects()]
        if self.faces:  # the cascades find frontal faces: turned towards the camera
            where = joined([face.where for face in self.faces])
            parts.append(f"A person: {count_words(len(self.faces), 'face', 'faces')} ({where}), facing the camera.")
        if self.cat_faces:
            where = joined([face.where for face in self.cat_faces])
            parts.append(f"A cat: {count_words(len(self.cat_faces), 'cat face', 'cat faces')} ({where}), "
                         "facing the camera.")
        if self.shapes:
            parts.append(f"Shapes: {joined([article(f'{s.colour} {s.kind}') for s in self.shapes])}.")
        if self.colours:
            parts.append(f"Colours: {joined([name for name, _ in self.colours])}.")
        parts.extend(self._setting())
        if self.text:
            parts.append(f'Text: "{self.text}".')
        return " ".join(p for p in parts if p) or "Nothing recognised."

    def _setting(self) -> list[str]:
        """The scene cues worth saying: the middle's colours where they differ from the whole picture's, its
        light when not ordinary, a sky or grass cue (or, for a photo with something recognised, that none is)."""
        scene, said = self.scene, []
        middle = [name for name, _ in scene.middle]
        if middle and set(middle) != {name for name, _ in self.colours}:
            said.append(f"In the middle: {joined(middle)}.")
        if scene.light:
            said.append(f"The picture is {scene.light}.")
        if scene.cues:
            said.extend(scene.cues)
        elif scene.no_cue and (self.labels or self.faces or self.cat_faces) and not self.shapes:
            said.append(scene.no_cue)
        return said

    def as_dict(self) -> dict:
        """Plain data for people and APIs (confidences and shares rounded to 0.01)."""
        return {
            "description": self.sentence(),
            "labels": [{"name": label.name, "confidence": round(label.confidence, 2), "group": label.group}
                       for label in self.labels],
            "faces": [asdict(face) for face in self.faces],
            "cat_faces": [asdict(face) for face in self.cat_faces],
            "colours": [{"name": name, "share": round(share, 2)} for name, share in self.colours],
            "shapes": [{"colour": s.colour, "kind": s.kind} for s in self.shapes],
            "text": self.text,
            "middle_colours": [{"name": name, "share": round(share, 2)} for name, share in self.scene.middle],
            "light": self.scene.light,
            "scene_cues": list(self.scene.cues),
        }


def one_thread_per_part() -> None:
    """Process-wide: torch and OpenCV compute on one thread (onnxruntime sessions here have one each).

    The multimodal_encoders process calls this once; the Perceiver then runs the OCR beside the other
    parts, so one image keeps 2 cores busy without oversubscribing them. torch is not imported for this: with a
    verified ONNX copy of the classifier (onnx_model.py) the process never loads it, and when it does, torch reads
    OMP_NUM_THREADS as it starts.
    """
    import cv2

    cv2.setNumThreads(1)
    os.environ["OMP_NUM_THREADS"] = "1"
    if sys.modules.get("torch") is not None:
        sys.modules["torch"].set_num_threads(1)


class Perceiver:
    """All parts loaded once per model instance; `perceive(rgb, read_text)` per image.

    The OCR runs on a second thread beside the other parts (onnxruntime, OpenCV and torch release the
    GIL; see one_thread_per_part). Given `folder` (the encoder's), the classifier runs from an ONNX copy
    kept there (onnx_model.py).
    """

    def __init__(self, settings: dict | None = None, classifier=None, faces=None, colours=None,
                 folder: Path | None = None, parallel: bool = True, scene=None):
        self.settings = {**DEFAULTS, **(settings or {})}
        self.classifier = classifier or ImageClassifier(onnx_folder=folder)
        self.faces = faces or FaceFinder()
        self.colours = colours or ColourReader()
        self.scene = scene or SceneReader(self.colours)
        self.ocr_thread = ThreadPoolExecutor(1, thread_name_prefix="ocr") if parallel else None

    def perceive(self, rgb: np.ndarray, read_text=None) -> Perception:
        """One [H, W, 3] uint8 RGB image -> Perception; `read_text(bgr)` is the OCR (None: no text)."""
        s = self.settings
        text, reading = "", None
        if read_text is not None and self.ocr_thread is not None:
            reading = self.ocr_thread.submit(read_text, np.ascontiguousarray(rgb[:, :, ::-1]))
        elif read_text is not None:
            text = read_text(np.ascontiguousarray(rgb[:, :, ::-1]))
        picture = trim_margins(rgb)
        labels = self.classifier.top(picture, int(s["top_k"]), float(s["min_confidence"]))
        gray = grey(picture)
        faces, cat_faces = self.faces.find(gray)
        colours, shapes = self.colours.read(picture, float(s["min_colour_share"]), int(s["max_colours"]))
        scene = self.scene.read(picture)
        if reading is not None:
            text = reading.result()
        return Perception(labels, faces, cat_faces, colours, shapes, text, float(s["sure_confidence"]), scene)
