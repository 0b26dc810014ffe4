"""Video NeVA's account of a video's frames (cpu_runtime/family_outputs/frames.py) on frames drawn with Pillow."""

import numpy as np
from PIL import Image, ImageDraw

from cpu_runtime.family_outputs.frames import changes, describe_frames, main_object
from cpu_runtime.family_outputs.messages import MSG_NO_FRAMES


def name_by_channel(pixels: np.ndarray) -> str:
    """A stand-in namer for the tests: the strongest channel of the mean colour."""
    return ("red", "green", "blue")[int(np.argmax(pixels.mean(axis=0)))]


def frame(x: float, y: float = 60, radius: int = 12, fill=(220, 20, 20), shape: str = "ellipse") -> np.ndarray:
    image = Image.new("RGB", (200, 120), "white")
    box = (x - radius, y - radius, x + radius, y + radius)
    getattr(ImageDraw.Draw(image), shape)(box, fill=fill)
    return np.asarray(image)


def test_each_frame_is_described_and_the_movement_summarised():
    text = describe_frames([frame(20 + 40 * i) for i in range(5)], name_by_channel)
    lines = text.splitlines()
    assert lines[0] == "The video shows a red circle that moves to the right (from x 10%, y 50% to x 90%, y 50%)."
    assert lines[2] == "Frame by frame (5 frames):"
    assert lines[3].startswith("1. a red circle at the left (x 10%, y 50%")
    assert lines[7].startswith("5. a red circle at the right (x 90%, y 50%")


def test_growing_changing_colour_and_staying_put_are_said():
    grows = [main_object(frame(100, radius=r, shape="rectangle"), name_by_channel) for r in (8, 14, 20)]
    assert changes(grows) == "The video shows a red square that grows."
    colours = [main_object(frame(100, fill=f), name_by_channel) for f in ((220, 20, 20), (20, 20, 220))]
    assert changes(colours) == "The video shows a circle that changes colour: red, then blue."
    still = [main_object(frame(100), name_by_channel)] * 3
    assert changes(still) == "The video shows a red circle that stays at the centre; nothing visible changes."


def test_blank_frames_and_no_frames():
    blank = np.full((50, 50, 3), 255, np.uint8)
    assert main_object(blank, name_by_channel) is None
    assert describe_frames([blank, blank], name_by_channel).splitlines()[-1] == "2. nothing stands out"
    assert describe_frames([], name_by_channel) == MSG_NO_FRAMES
    seen = [main_object(frame(30), name_by_channel), None]
    assert "is seen in 1 of 2 frames" in changes(seen)
