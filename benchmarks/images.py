"""Image benchmark: intake + preprocessing throughput, and time to first token with and without an image.

    .venv/bin/python -m benchmarks.images [--url HOST:PORT] [--runs 3] [--skip-server]

Throughput is measured for a 12-megapixel JPEG and a 336 x 336 PNG through `app.vision.images.load_image`
plus `app.vision.preprocess.pixel_batch`, for the CPU demo family (cpu-ocr, 1024 letterbox, JPEG draft
decoding) and for LLaVA-1.5 (exact CLIP preprocessing, full decode). The CPU demo's encoder (the
perception encoder of the multimodal_encoders slot: classifier, faces, colours and shapes, OCR) is timed
per image in this process on the same preprocessed pixels, in total and part by part, with 2 threads.
Without --url the CPU demo tritonserver is started on free ports and stopped at the end. Runs are short:
2 shared cores.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.chat.prompts import PromptBuilder  # noqa: E402
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient  # noqa: E402
from app.vision.images import load_image  # noqa: E402
from app.vision.multimodal import prepare_images  # noqa: E402
from app.vision.preprocess import pixel_batch  # noqa: E402
from setup.catalog.families import get_family  # noqa: E402
from setup.cpu.model import model_dir  # noqa: E402

QUESTION = "What is the secret code?"
PARAMS = SamplingParams(max_tokens=8)


def make_inputs(folder: Path) -> dict[str, Path]:
    """A 12-megapixel photo-like JPEG, a 336 x 336 PNG, scikit-image's chelsea (when installed), the code image."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:3000, 0:4000]
    photo = np.stack([x % 256, y % 256, (x + y) % 256], axis=-1) + rng.integers(-25, 26, (3000, 4000, 3))
    paths = {"12 MP JPEG (4000 x 3000)": folder / "photo.jpg", "336 x 336 PNG": folder / "small.png",
             "code": folder / "code.png"}
    Image.fromarray(np.clip(photo, 0, 255).astype(np.uint8)).save(paths["12 MP JPEG (4000 x 3000)"], quality=90)
    Image.fromarray(np.clip(photo[:336, :336], 0, 255).astype(np.uint8)).save(paths["336 x 336 PNG"])
    code = Image.new("RGB", (900, 200), "white")
    ImageDraw.Draw(code).text((20, 60), "The secret code is 4711", fill="black", font=ImageFont.load_default(size=64))
    code.save(paths["code"])
    try:
        from skimage import data

        paths["chelsea (451 x 300 photo)"] = folder / "chelsea.png"
        Image.fromarray(data.chelsea()).save(paths["chelsea (451 x 300 photo)"])
    except ImportError:  # scikit-image is a dev requirement
        pass
    return paths


def throughput(path: Path, family_name: str, seconds: float = 3.0, max_runs: int = 50) -> float:
    """Images per second through intake + preprocessing (at least 2 runs, about `seconds` long)."""
    spec = get_family(family_name).preprocess
    draft = max(spec.width, spec.height) if spec.draft_decode else None
    pixel_batch([load_image(path, draft_side=draft)], spec)  # warm-up
    runs, start = 0, time.perf_counter()
    while runs < 2 or (time.perf_counter() - start < seconds and runs < max_runs):
        pixel_batch([load_image(path, draft_side=draft)], spec)
        runs += 1
    return runs / (time.perf_counter() - start)


ENCODER_LIB = Path(__file__).resolve().parent.parent / "model_repo_templates/cpu_engine/multimodal_encoders/1"


def load_encoder(folder: Path):
    """The CPU demo's encoder as the multimodal_encoders model loads it (models loaded once)."""
    import torch

    from setup.cpu.encoder import build_cpu_encoder

    torch.set_num_threads(2)
    sys.path.insert(0, str(ENCODER_LIB))
    from encoder_lib.encoder import make_encoder

    return make_encoder(build_cpu_encoder(get_family("cpu-ocr"), 2, 576, root=folder), model_dir())


def encoder_times(encoder, path: Path, runs: int = 5) -> dict[str, float]:
    """Median milliseconds per image: the whole encoder, and each part, on the demo's preprocessed pixels."""
    from encoder_lib.ocr import to_bgr_uint8
    from encoder_lib.perception import trim_margins

    spec = get_family("cpu-ocr").preprocess
    pixels = pixel_batch([load_image(path, draft_side=max(spec.width, spec.height))], spec)[0]
    bgr = to_bgr_uint8(pixels[0], encoder.mean, encoder.std, encoder.rescale)
    rgb = np.ascontiguousarray(bgr[:, :, ::-1])
    picture = trim_margins(rgb)
    gray = np.ascontiguousarray(picture.mean(axis=2).astype(np.uint8))
    parts = {"encoder (all parts + embedding rows)": lambda: encoder.encode(pixels),
             "classifier": lambda: encoder.perceiver.classifier.top(picture),
             "faces + cat faces": lambda: encoder.perceiver.faces.find(gray),
             "colours + shapes": lambda: encoder.perceiver.colours.read(picture),
             "OCR": lambda: encoder.photo_text(bgr)}
    times = {}
    for name, work in parts.items():
        work()  # warm-up
        spent = []
        for _ in range(runs):
            started = time.perf_counter()
            work()
            spent.append(time.perf_counter() - started)
        times[name] = statistics.median(spent) * 1000
    return times


def ttft(client: TritonChatClient, prompts: PromptBuilder, image: Path | None, runs: int) -> tuple[float, float]:
    """(median time to first token, median client-side image preparation) in seconds."""
    firsts, preps = [], []
    for _ in range(runs):
        started = time.perf_counter()
        request = prepare_images([image] if image else [], client.model_info(), QUESTION)
        preps.append(time.perf_counter() - started)
        stream = client.stream(prompts.build([{"role": "user", "content": request.text}]), PARAMS, extra=request.extra)
        for _ in stream:
            pass
        firsts.append(stream.time_to_first_token or float("nan"))
    return statistics.median(firsts), statistics.median(preps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="gRPC HOST:PORT of a running CPU demo (default: start one).")
    parser.add_argument("--runs", type=int, default=3, help="Requests per TTFT row (default 3).")
    parser.add_argument("--skip-server", action="store_true", help="Only the intake + preprocessing rows.")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-images-"))
    try:
        return run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: Path) -> int:
    """The measurements of main(), with their files in `tmp`."""
    paths = make_inputs(tmp)
    rows = []
    for label in ("12 MP JPEG (4000 x 3000)", "336 x 336 PNG"):
        for family in ("cpu-ocr", "llava-1.5"):
            rows.append((f"intake + preprocessing, {label}, {family}", f"{throughput(paths[label], family):.1f} images/s"))
    encoder = load_encoder(tmp)
    for label in [name for name in paths if name != "code"]:
        for part, ms in encoder_times(encoder, paths[label]).items():
            rows.append((f"cpu encoder, {label}: {part}", f"{ms:.0f} ms"))
    server = None
    if not args.skip_server:
        if args.url:
            url = args.url
        else:
            from tests.conftest import start_triton

            server = start_triton(tmp)
            url = server.grpc_url
        try:
            prompts = PromptBuilder(tokenizer_dir=str(model_dir()))
            for model in ("tensorrt_llm_bls", "ensemble"):
                client = TritonChatClient(url, model=model)
                ttft(client, prompts, None, 1)  # warm-up
                first, _ = ttft(client, prompts, None, args.runs)
                rows.append((f"TTFT without image ({model})", f"{first * 1000:.0f} ms"))
                first, prep = ttft(client, prompts, paths["code"], args.runs)
                rows.append((f"TTFT with one image ({model}; OCR on the server)", f"{first * 1000:.0f} ms"))
                rows.append((f"client image preparation ({model})", f"{prep * 1000:.0f} ms"))
        finally:
            if server is not None:
                server.process.stop()
    width = max(len(name) for name, _ in rows)
    print(f"| {'measurement'.ljust(width)} | result |")
    print(f"| {'-' * width} | ------ |")
    for name, value in rows:
        print(f"| {name.ljust(width)} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
