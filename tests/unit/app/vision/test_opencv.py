"""app/vision/opencv.py: importing OpenCV through it leaves the process environment as it was (opencv-python's own
import sets LD_LIBRARY_PATH with an empty entry and two Qt paths, which every program started later inherited)."""

import json
import os
import subprocess
import sys

from setup.paths import PROJECT_ROOT

SHOW_CHANGES = """
import json, os
before = dict(os.environ)
import {module}
after = dict(os.environ)
print(json.dumps(sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))))
"""


def changed_by_importing(module: str) -> list[str]:
    clean = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "-c", SHOW_CHANGES.format(module=module)], env=clean, capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_opencv_itself_changes_the_environment():  # what the module is for: fails when opencv stops doing it
    assert "LD_LIBRARY_PATH" in changed_by_importing("cv2")


def test_through_the_app_nothing_changes_and_cv2_works():
    assert changed_by_importing("app.vision.opencv") == []
    assert changed_by_importing("app.vision.video") == []
    from app.vision.opencv import cv2

    assert cv2.CAP_FFMPEG and callable(cv2.VideoCapture)
