"""Video NeVA's job on the CPU: what each frame shows and what changes between frames.

In each frame the main object is the largest region that differs from the frame's background (the median
colour of its border); it is described by its colour name, a simple shape word, where it is and how much of the
frame it covers. The summary says whether it moves (and which way), grows, shrinks or changes colour between the
first frame and the last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .messages import MSG_NO_FRAMES

DIFFERENCE = 60          # summed channel difference from the background that marks the object
MIN_SHARE = 0.002        # an object covers at least this share of the frame
MOVED = 0.05             # a centre moving this share of the frame has moved
RESIZED = 1.3            # an area changing by this factor has grown or shrunk


@dataclass(frozen=True)
class Sighting:
    """The main object of one frame: colour, shape word, centre (0..1 of width and height) and share of the frame."""

    colour: str
    shape: str
    x: float
    y: float
    share: float

    def where(self) -> str:
        horizontal = "left" if self.x < 1 / 3 else "right" if self.x > 2 / 3 else "centre"
        vertical = "top " if self.y < 1 / 3 else "bottom " if self.y > 2 / 3 else ""
        return f"{vertical}{horizontal}"

    def text(self) -> str:
        return (f"a {self.colour} {self.shape} at the {self.where()} (x {self.x:.0%}, y {self.y:.0%}, "
                f"{self.share:.1%} of the frame)")


def _shape(area: int, width: int, height: int) -> str:
    fill, aspect = area / max(1, width * height), width / max(1, height)
    square = 0.8 <= aspect <= 1.25
    if square and 0.7 <= fill <= 0.86:
        return "circle"
    if fill >= 0.9:
        return "square" if square else "rectangle"
    return "shape"


def main_object(rgb: np.ndarray, name_colour: Callable[[np.ndarray], str]) -> Sighting | None:
    """The largest region of an [H, W, 3] uint8 RGB frame unlike its border's colour; None when there is none.
    `name_colour([N, 3] uint8 RGB pixels)` names the region's colour."""
    import cv2

    height, width = rgb.shape[:2]
    border = np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]])
    background = np.median(border, axis=0)
    mask = (np.abs(rgb.astype(np.int16) - background.astype(np.int16)).sum(axis=2) > DIFFERENCE).astype(np.uint8)
    count, labels, stats, centres = cv2.connectedComponentsWithStats(mask, connectivity=8)
    if count < 2:
        return None
    index = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h, area = (int(v) for v in stats[index])
    if area < MIN_SHARE * width * height:
        return None
    cx, cy = centres[index]
    return Sighting(name_colour(rgb[labels == index]), _shape(area, w, h), float(cx / width), float(cy / height),
                    area / (width * height))


def _direction(dx: float, dy: float) -> str:
    parts = []
    if abs(dx) >= MOVED:
        parts.append("to the right" if dx > 0 else "to the left")
    if abs(dy) >= MOVED:
        parts.append("down" if dy > 0 else "up")
    return " and ".join(parts)


def changes(seen: list[Sighting | None]) -> str:
    """One sentence on what changes from the first frame with an object to the last."""
    present = [s for s in seen if s is not None]
    if not present:
        return "Nothing stands out from the background in any frame."
    first, last = present[0], present[-1]
    colours = list(dict.fromkeys(s.colour for s in present))
    subject = f"a {first.colour} {first.shape}" if len(colours) == 1 else f"a {first.shape}"
    said = []
    direction = _direction(last.x - first.x, last.y - first.y)
    if direction:
        said.append(f"moves {direction} (from x {first.x:.0%}, y {first.y:.0%} to x {last.x:.0%}, y {last.y:.0%})")
    if last.share > RESIZED * first.share:
        said.append("grows")
    elif first.share > RESIZED * last.share:
        said.append("shrinks")
    if len(colours) > 1:
        said.append("changes colour: " + ", then ".join(colours))
    if len(present) < len(seen):
        said.append(f"is seen in {len(present)} of {len(seen)} frames")
    if not said:
        return f"The video shows {subject} that stays at the {first.where()}; nothing visible changes."
    body = ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]
    return f"The video shows {subject} that {body}."


def describe_frames(frames: list[np.ndarray], name_colour: Callable[[np.ndarray], str]) -> str:
    """The summary of changes, then one line per frame."""
    if not frames:
        return MSG_NO_FRAMES
    seen = [main_object(frame, name_colour) for frame in frames]
    lines = [changes(seen), "", f"Frame by frame ({len(frames)} frames):"]
    for number, sighting in enumerate(seen, 1):
        lines.append(f"{number}. {sighting.text() if sighting else 'nothing stands out'}")
    return "\n".join(lines)
