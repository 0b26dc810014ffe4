"""Screenshots of each family's output in the chat (docs/screenshots/family-*.png), through the CPU twins on a
real tritonserver (the runner kind) in Debian's Chromium: Deplot's table, Nougat's markdown page, Kosmos-2's boxes,
Video NeVA's frame strip.

    .venv/bin/python -m tests.browser.family_screenshots [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image
from skimage import data as skimage_data

from app.context import AppConfig, AppContext
from benchmarks.scratch import scratch_folder
from benchmarks.server_process import free_port, on_free_ports
from setup.cpu.demo import start_demo_triton
from setup.cpu.runner_demo import model_name, write_runner_demo_repository
from tests.browser.test_family_outputs import TWIN_REPLY_SECONDS, attach
from tests.browser_tabs import CHROMIUM, CHROMIUM_ARGS
from tests.family_media import bar_chart, document_page
from tests.media import ball_video, pdf_of_pages
from tests.servers import FAMILY_OUTPUT_TWINS as TWINS

DESKTOP = {"width": 1280, "height": 1500}  # tall enough that the chat shows the message and its reply


def inputs(folder: Path) -> dict[str, tuple[Path, str]]:
    """Per family: the file to upload and the question."""
    chart, pdf, photo = folder / "chart.png", folder / "report.pdf", folder / "astronaut.png"
    bar_chart().save(chart)
    pdf.write_bytes(pdf_of_pages([document_page()]))
    Image.fromarray(skimage_data.astronaut()).save(photo)
    return {"deplot": (chart, "Generate underlying data table of the figure below:"),
            "nougat": (pdf, "Convert this page to markdown."),
            "kosmos-2": (photo, "Describe this picture."),
            "video-neva": (ball_video(folder / "ball.gif", frames=30), "What happens in this video?")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"), help="folder for the PNG files")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with scratch_folder("family-screenshots-") as folder:  # removed after, with Triton's and the browser's files
        from app.web.ui import launch  # Gradio, imported here: it makes its folder under TMPDIR as it loads
        repo = write_runner_demo_repository(folder / "repo", TWINS, log=lambda *_: None)
        ports, triton = on_free_ports(lambda *ports: start_demo_triton(*ports, repo=repo, log=lambda *_: None,
                                                                      ready_timeout=300.0))
        grpc_url = f"127.0.0.1:{ports[1]}"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                for family, (path, question) in inputs(folder).items():
                    port = free_port()
                    ctx = AppContext(AppConfig(triton_url=grpc_url, port=port, demo=True, deployment="runner",
                                               model=model_name(family, several=True)))
                    blocks = launch(ctx, prevent_thread_lock=True)
                    try:
                        page = browser.new_page(viewport=DESKTOP)
                        page.goto(ctx.access.url(f"http://127.0.0.1:{port}/"))
                        page.wait_for_selector("#chat-input textarea", timeout=60_000)
                        attach(page, path, question, timeout=TWIN_REPLY_SECONDS)
                        page.wait_for_timeout(1500)  # the pictures under the reply load
                        page.locator("#chatbot").screenshot(path=str(args.out / f"family-{family}.png"))
                        page.close()
                    finally:
                        blocks.close()
                browser.close()
        finally:
            triton.stop()
    print("\n".join(str(path) for path in sorted(args.out.glob("family-*.png"))))


if __name__ == "__main__":
    main()
