"""OpenCV for the app's process, without what importing it does to the process environment.

opencv-python's import sets LD_LIBRARY_PATH (ending in an empty entry, which makes the dynamic loader search the
working folder), QT_QPA_PLATFORM_PLUGIN_PATH and QT_QPA_FONTDIR for its Qt window code, which the app never uses.
Left set, every program the app starts afterwards (Build steps, tritonserver) would inherit them, and only after the
first video someone sent. Import `cv2` from here; the environment is put back as it was.
"""

from __future__ import annotations

import os

_before = dict(os.environ)
import cv2  # noqa: E402 - the environment is read first

for _key in set(os.environ) - set(_before):
    del os.environ[_key]
for _key, _value in _before.items():
    if os.environ.get(_key) != _value:
        os.environ[_key] = _value

__all__ = ["cv2"]
