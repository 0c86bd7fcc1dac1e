"""The report page in a real browser: headless Chromium (Debian's `chromium`, driven by playwright) opens
the file from disk with the network off, at 1280 px and at 390 px (a phone), and must render it: no
console error, no request leaving the file, no sideways scroll, a plausible height, every chart's SVG
drawn, and a PDF when printed. Skipped, with the reason, where playwright or chromium is missing.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvplan.render.html import report_html
from kvplan.render.report import report_payload
from kvplan.workflows.probe_file import check_probe
from kvplan.workflows.report import report

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install '.[test]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)", allow_module_level=True)

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
PROBE = Path(__file__).resolve().parents[1] / "data" / "probe" / "h100-llama70b-dsv3-qwen3-8b-bf16.json"
WIDTHS = (1280, 390)
PAPER_PX = 700


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The issue's first two commands, and the third's kind (a given budget and a probe file)."""
    probe = check_probe(json.loads(PROBE.read_text()), PROBE.name)
    cases = {"llama70b": ("meta-llama/Llama-3.1-70B", dict(gpu="H100", tp=4, max_model_len=32768)),
             "dsv3": ("deepseek-ai/DeepSeek-V3", dict(gpu="H200", tp=8, kv_dtypes=("auto", "fp8"))),
             "qwen-probe": ("Qwen/Qwen3-8B", dict(kv_budget_bytes=(40 * 2**30,), probes=(probe,)))}
    folder = tmp_path_factory.mktemp("report")
    for name, (model, request) in cases.items():
        (folder / f"{name}.html").write_text(report_html(report_payload(report(model, **request))), encoding="utf-8")
    return {name: folder / f"{name}.html" for name in cases}


def render(browser: Any, path: Path, width: int, shot: Path) -> dict[str, Any]:
    context = browser.new_context(offline=True, viewport={"width": width, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: problems.append(f"request: {r.url}") if r.url != path.as_uri() else None)
    page.goto(path.as_uri(), wait_until="load")
    facts = page.evaluate("""() => ({
        height: document.documentElement.scrollHeight,
        overflow: document.documentElement.scrollWidth - window.innerWidth,
        sections: [...document.querySelectorAll('main > section')].map(s => [s.id, s.offsetHeight]),
        svgs: [...document.querySelectorAll('svg')].map(s => {
            const r = s.getBoundingClientRect();
            return [r.width, r.height, s.querySelectorAll('polyline, rect, circle, line').length];
        }),
    })""")
    page.screenshot(path=str(shot), full_page=True)
    context.close()
    return {**facts, "problems": problems}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["llama70b", "dsv3", "qwen-probe"])
def test_the_page_renders(browser: Any, pages: dict[str, Path], tmp_path: Path, name: str, width: int) -> None:
    shot = tmp_path / f"{name}-{width}.png"
    facts = render(browser, pages[name], width, shot)
    assert facts["problems"] == []
    assert facts["overflow"] <= 0  # nothing scrolls sideways, on a phone either
    assert 3_000 < facts["height"] < 40_000
    assert [s for s, _ in facts["sections"]] == ["inputs", "size", "memory", "capacity", "curves", "measured",
                                                 "notes"]
    assert all(h > 100 for _, h in facts["sections"])
    assert len(facts["svgs"]) >= 3 + 4  # three line charts and a memory bar per engine
    assert all(w > 100 and h > 15 and shapes > 0 for w, h, shapes in facts["svgs"])
    assert shot.stat().st_size > 50_000


def test_the_page_prints(browser: Any, pages: dict[str, Path]) -> None:
    """On A4 (186 mm between 12 mm margins: 700 px at 96 dpi) nothing is wider than the paper: tables of
    many columns print as cards."""
    page = browser.new_context(offline=True, viewport={"width": PAPER_PX, "height": 900}).new_page()
    page.goto(pages["llama70b"].as_uri())
    page.emulate_media(media="print")
    assert page.evaluate("document.documentElement.scrollWidth") <= PAPER_PX
    pdf = page.pdf(format="A4", print_background=True)
    assert pdf.startswith(b"%PDF") and 5 <= len(re.findall(rb"/Type\s*/Page[^s]", pdf)) <= 40


FIT = """() => {
    const out = [];
    for (const t of document.querySelectorAll('table')) {
        const box = t.closest('.wrap') || t.parentElement;
        if (t.scrollWidth > box.clientWidth + 1)
            out.push(`table in #${t.closest('section').id}: ${t.scrollWidth} px in ${box.clientWidth} px`);
        for (const c of t.querySelectorAll('td, th')) {
            const shown = getComputedStyle(c).display !== 'none' && c.getClientRects().length > 0;
            if (shown && c.scrollWidth > c.clientWidth + 1)
                out.push(`cell cut in #${t.closest('section').id}: ${c.textContent.slice(0, 60)}`);
            const r = c.getBoundingClientRect();
            if (shown && r.right > box.getBoundingClientRect().right + 1)
                out.push(`cell past the edge in #${t.closest('section').id}: ${c.textContent.slice(0, 60)}`);
        }
    }
    return out;
}"""


@pytest.mark.parametrize("name", ["llama70b", "dsv3", "qwen-probe"])
def test_every_table_fits_a_1280_px_page(browser: Any, pages: dict[str, Path], name: str) -> None:
    """Issue 25: at 1280 px the capacity and "how it is known" tables were wider than the page, TensorRT-LLM's
    numbers cut at the scroll edge ("85,018,542,08"), the transformers column off-screen. Now every table fits
    its column with no cell cut and none past the edge (numbers do not break: they hold no space)."""
    context = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(pages[name].as_uri())
    assert page.evaluate(FIT) == []
    headers = page.evaluate("[...document.querySelectorAll('#capacity thead th')].map(th => th.textContent)")
    assert any(h.startswith("transformers") for h in headers) and any(h.startswith("TensorRT-LLM") for h in headers)
    context.close()


def test_every_table_fits_a4(browser: Any, pages: dict[str, Path]) -> None:
    """Printed on A4 (700 px between the margins), no table is wider than the paper and no cell is cut."""
    for name in pages:
        page = browser.new_context(offline=True, viewport={"width": PAPER_PX, "height": 900}).new_page()
        page.goto(pages[name].as_uri())
        page.emulate_media(media="print")
        assert page.evaluate(FIT) == [], name
