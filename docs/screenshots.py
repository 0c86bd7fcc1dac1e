"""Redraw the two screenshots of `kvplan report` on docs/howto/report.md from the issue's first command.

    python docs/screenshots.py        # needs playwright, Debian's chromium and pillow

docs/report-1280.png: the top of the page at 1280 px (header, inputs, sizes, memory per engine).
docs/report-390.png: three stretches of the same page at 390 px (a phone) side by side: the top, the
memory per engine and the curves. Both are quantized to a small palette to keep the repository light.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

DOCS = Path(__file__).resolve().parent
COMMAND = ["report", "meta-llama/Llama-3.1-70B", "--gpu", "H100", "-tp", "4", "--max-model-len", "32k"]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def shoot(page_file: Path, width: int) -> tuple[Image.Image, dict[str, int]]:
    """A full-page screenshot at `width` px and the top of each section in it."""
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        page = browser.new_context(offline=True, viewport={"width": width, "height": 900}).new_page()
        page.goto(page_file.as_uri())
        tops = page.evaluate("Object.fromEntries([...document.querySelectorAll('section')].map("
                             "s => [s.id, Math.round(s.getBoundingClientRect().top + window.scrollY)]))")
        page.screenshot(path=f"{tmp}/full.png", full_page=True)
        browser.close()
        return Image.open(f"{tmp}/full.png").convert("RGB"), tops


def save(image: Image.Image, name: str) -> None:
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(DOCS / name, optimize=True)
    print(f"{name}: {image.size[0]} × {image.size[1]}, {(DOCS / name).stat().st_size / 1024:,.0f} KB")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "llama70b-h100.html"
        subprocess.run([sys.executable, "-m", "kvplan", *COMMAND, "-o", str(page_file)], check=True)
        wide, tops = shoot(page_file, 1280)
        save(wide.crop((0, 0, 1280, tops["capacity"] - 10)), "report-1280.png")
        phone, tops = shoot(page_file, 390)
        stretches = [(0, 1500), (tops["memory"], tops["memory"] + 1500), (tops["curves"], tops["curves"] + 1500)]
        sheet = Image.new("RGB", (3 * 390 + 2 * 24, 1500), "#94a3b8")
        for i, (top, bottom) in enumerate(stretches):
            sheet.paste(phone.crop((0, top, 390, bottom)), (i * (390 + 24), 0))
        save(sheet, "report-390.png")


if __name__ == "__main__":
    main()
