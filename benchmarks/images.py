"""Image benchmark: intake + preprocessing throughput, and time to first token with and without an image.

    .venv/bin/python -m benchmarks.images [--url HOST:PORT] [--runs 3] [--encoder-runs 5] [--seconds 3] [--skip-server]

Throughput is measured for a 12-megapixel JPEG and a 336 x 336 PNG through `app.vision.images.load_image`
plus `app.vision.preprocess.pixel_batch`, for the CPU demo family (cpu-ocr, 1024 letterbox, JPEG draft
decoding) and for LLaVA-1.5 (exact CLIP preprocessing, full decode). The CPU demo's encoder (the
perception encoder of the multimodal_encoders slot: classifier, faces, colours and shapes, OCR) is timed
per image in this process on the same preprocessed pixels, in total and part by part: median wall time
and, in brackets, median CPU time of the process (which the load of other processes changes less).
Time to first token is measured without an image, with a photo without text and with the code image;
every request's image differs from the last in one pixel, so the encoder's memory of recent images
does not answer; and with one photo sent again, which the memory answers (the image's cost without the
encoder: transport, prompt table, longer prompt). Without --url the CPU demo tritonserver is started on free ports and stopped at the
end. Runs are short: 2 shared cores. The load average is printed with the tables. Its files (the images, the demo
repository) live in the run's scratch folder (benchmarks/scratch.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.chat.prompts import PromptBuilder  # noqa: E402
from app.core.conversation import Conversation  # noqa: E402
from app.core.errors import StreamStalled  # noqa: E402
from app.core.sampling import SamplingParams
from app.triton.client import TritonChatClient  # noqa: E402
from app.vision.images import load_image  # noqa: E402
from app.vision.multimodal import prepare_images  # noqa: E402
from app.vision.preprocess import pixel_batch  # noqa: E402
from benchmarks.harness import demo_server  # noqa: E402
from benchmarks.scratch import scratch_folder  # noqa: E402
from setup.catalog.families import get_family  # noqa: E402
from setup.cpu.model import model_dir  # noqa: E402

QUESTION = "What is the secret code?"
PARAMS = SamplingParams(max_tokens=8)
TTFT_MODELS = ("tensorrt_llm_bls", "ensemble")


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


def load_encoder(folder: Path):
    """The CPU demo's encoder as the multimodal_encoders model loads it (models loaded once), without its
    memory of recent images (every timed run encodes)."""
    from cpu_runtime.encoder.encoder import make_encoder
    from cpu_runtime.encoder.ocr import ImageMemo
    from cpu_runtime.encoder.perception import one_thread_per_part
    from setup.cpu.encoder import build_cpu_encoder

    one_thread_per_part()  # as model.py does
    encoder = make_encoder(build_cpu_encoder(get_family("cpu-ocr"), 2, 576, root=folder), model_dir())
    encoder.memo = ImageMemo(size=0)
    return encoder


def timed(work, runs: int) -> tuple[float, float]:
    """(median wall ms, median process CPU ms) of `work()` after one warm-up call."""
    work()
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def encoder_times(encoder, path: Path, runs: int = 5) -> dict[str, tuple[float, float]]:
    """Part -> (wall ms, CPU ms) per image, medians: the whole encoder and each part, on the demo's pixels."""
    from cpu_runtime.encoder.faces import grey
    from cpu_runtime.encoder.margins import trim_margins
    from cpu_runtime.encoder.ocr import to_bgr_uint8

    spec = get_family("cpu-ocr").preprocess
    pixels = pixel_batch([load_image(path, draft_side=max(spec.width, spec.height))], spec)[0]
    bgr = to_bgr_uint8(pixels[0], encoder.mean, encoder.std, encoder.rescale)
    picture = trim_margins(np.ascontiguousarray(bgr[:, :, ::-1]))
    gray = grey(picture)
    parts = {"encoder (all parts + embedding rows)": lambda: encoder.encode(pixels),
             "classifier (EfficientNet-Lite0)": lambda: encoder.perceiver.classifier.top(picture),
             "faces + cat faces": lambda: encoder.perceiver.faces.find(gray),
             "colours + shapes": lambda: encoder.perceiver.colours.read(picture),
             "OCR (quick check, then reading if text)": lambda: encoder.photo_text(bgr),
             "of which the quick text check": lambda: encoder.ocr.candidates(trim_margins(bgr))}
    return {name: timed(work, runs) for name, work in parts.items()}


def variants(path: Path, count: int, first: int = 0) -> list[Path]:
    """`count` copies of an image, each with a different top-left pixel (no two the same for the encoder's memo);
    copies from another `first` differ from these too."""
    image = Image.open(path).convert("RGB")
    out = []
    for i in range(first, first + count):
        image.putpixel((0, 0), (i % 256, (i * 7) % 256, 255 - i % 256))
        out.append(path.with_name(f"{path.stem}-{i}.png"))
        image.save(out[-1])
    return out


def ttft(client: TritonChatClient, prompts: PromptBuilder, images: list[Path | None]) -> tuple[float, float]:
    """(median time to first token, median client-side image preparation) in seconds, one request per image."""
    firsts, preps = [], []
    for image in images:
        started = time.perf_counter()
        request = prepare_images([image] if image else [], client.model_info(), QUESTION)
        preps.append(time.perf_counter() - started)
        stream = client.stream(prompts.build(Conversation.asking(request.text)), PARAMS, extra=request.extra)
        for _ in stream:
            pass
        firsts.append(stream.time_to_first_token or float("nan"))
    return statistics.median(firsts), statistics.median(preps)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f}, {five:.1f}, {fifteen:.1f} (1, 5, 15 min) on {os.cpu_count()} cores"


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="gRPC HOST:PORT of a running CPU demo (default: start one).")
    parser.add_argument("--runs", type=int, default=3, help="Requests per TTFT row (default 3).")
    parser.add_argument("--encoder-runs", type=int, default=5, help="Timed runs per encoder part and image (default 5).")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="About how long each intake + preprocessing row runs (at least 2 images; default 3).")
    parser.add_argument("--skip-server", action="store_true", help="Only the intake + preprocessing rows.")
    args = parser.parse_args(argv)
    with scratch_folder() as scratch:
        return run(args, scratch)


def run(args: argparse.Namespace, tmp: Path) -> int:
    """The measurements of main(), with their files in `tmp`."""
    paths = make_inputs(tmp)
    print(f"start: {load_average()}\n")
    rows = []
    for label in ("12 MP JPEG (4000 x 3000)", "336 x 336 PNG"):
        for family in ("cpu-ocr", "llava-1.5"):
            rate = throughput(paths[label], family, args.seconds)
            rows.append([f"intake + preprocessing, {label}, {family}", f"{rate:.1f} images/s"])
    encoder = load_encoder(tmp)
    pictures = [name for name in paths if name != "code"] + ["code"]
    times = {name: encoder_times(encoder, paths[name], args.encoder_runs) for name in pictures}
    parts = list(times[pictures[0]])
    encoder_rows = [[part] + ["{:.0f} ({:.0f})".format(*times[name][part]) for name in pictures] for part in parts]
    if not args.skip_server:
        photo = paths.get("chelsea (451 x 300 photo)", paths["336 x 336 PNG"])
        rows += time_to_first_token(args, tmp, {model: image_cases(paths["code"], photo, args.runs, index)
                                                for index, model in enumerate(TTFT_MODELS)})
    print_table(["measurement", "result"], rows)
    print("CPU encoder per image, ms: median wall (median process CPU)")
    print_table(["part", *pictures], encoder_rows)
    print(f"end: {load_average()}")
    return 0


def image_cases(code: Path, photo: Path, runs: int, model_index: int) -> dict[str, list]:
    """Case -> images (None: no image) for one model; a new image is new to the encoder for every model, since the
    models share one encoder, and the memo of the model measured first must not answer the second's."""
    first = 1 + model_index * (runs + 1)  # variant 0 is the remembered photo
    return {"no image": [None] * runs,
            f"one photo ({photo.stem})": variants(photo, runs + 1, first),
            f"the same photo again ({photo.stem}, remembered)": variants(photo, 1) * (runs + 1),
            "one image with text (code)": variants(code, runs + 1, first)}


def time_to_first_token(args: argparse.Namespace, tmp: Path, cases: dict[str, dict[str, list]]) -> list[list[str]]:
    """Rows of median time to first token per model (`cases`: model -> case -> images) and case (the first
    request of each case is a warm-up)."""
    if args.url:
        return ttft_rows(args.url, cases)
    with demo_server(tmp) as server:
        return ttft_rows(server.grpc_url, cases)


def ttft_rows(url: str, cases: dict[str, dict[str, list]]) -> list[list[str]]:
    """time_to_first_token's rows against the server at `url`."""
    rows = []
    prompts = PromptBuilder(tokenizer_dir=str(model_dir()))
    for model, model_cases in cases.items():
        client = TritonChatClient(url, model=model)
        for case, images in model_cases.items():
            try:
                ttft(client, prompts, images[:1])  # warm-up
                first, prep = ttft(client, prompts, images[1:] if images[0] else images)
            except StreamStalled as exc:  # a loaded machine: say so in the table, measure the rest
                rows.append([f"time to first token, {case} ({model})", f"stalled ({exc})"])
                continue
            rows.append([f"time to first token, {case} ({model})", f"{first * 1000:.0f} ms"])
            if images[0]:
                rows.append([f"client image preparation, {case} ({model})", f"{prep * 1000:.0f} ms"])
    return rows


if __name__ == "__main__":
    sys.exit(main())
