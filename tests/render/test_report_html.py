"""The report page as a reader gets it: every number of the JSON answer on the page as text, nothing
fetched from the network, the embedded JSON equal to the answer, and the seven sections present."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kvplan.render.html import DATA_ID, report_html
from kvplan.render.payload import plain
from kvplan.render.report import ReportPayload, report_payload
from kvplan.workflows.probe_file import check_probe
from kvplan.workflows.report import report

PROBES = Path(__file__).resolve().parent.parent / "data" / "probe"
SECTIONS = ("inputs", "size", "memory", "capacity", "curves", "measured", "notes")


def probe(name: str) -> dict[str, Any]:
    return check_probe(json.loads((PROBES / name).read_text()), name)


# The three commands, and the cases that exercise the rest of the page: a refusal (DeepSeek-V3 on
# one H100), windows and a fixed state (gpt-oss, Qwen3-Next), PP stages, a GPU and a given budget.
CASES = {
    "llama70b-h100-tp4": ("meta-llama/Llama-3.1-70B", dict(gpu="H100", tp=4, max_model_len=32768)),
    "dsv3-h200-tp8": ("deepseek-ai/DeepSeek-V3", dict(gpu="H200", tp=8, kv_dtypes=("auto", "fp8"))),
    "qwen3-8b-budget-probe": ("Qwen/Qwen3-8B", dict(
        kv_budget_bytes=(40 * 2**30,), kv_dtypes=("auto", "fp8"),
        probes=(probe("h100-llama70b-dsv3-qwen3-8b-bf16.json"), probe("h100-llama70b-dsv3-qwen3-8b-fp8.json")))),
    "dsv3-one-h100": ("deepseek-ai/DeepSeek-V3", dict(gpu="H100", max_model_len=8192)),
    "gpt-oss-pp2": ("openai/gpt-oss-20b", dict(gpu="L40S", pp=2, engines=("vllm", "sglang"))),
    "qwen3-next-default-probe": ("Qwen/Qwen3-Next-80B-A3B-Thinking", dict(
        gpu="H200", tp=4, kv_budget_bytes=(30 * 2**30,), gpu_memory_bytes=140 * 2**30,
        probes=(probe("h100-default.json"),))),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def page(request: pytest.FixtureRequest) -> tuple[Any, str]:
    """(the payload's JSON data, the page drawn from the typed payload)."""
    model, req = CASES[request.param]
    payload = report_payload(report(model, **req))
    return plain(payload), report_html(payload, command=f"kvplan report {model}")


class Text(HTMLParser):
    """The text a reader sees (scripts and styles left out), and every tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self.skip -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def parse(page: str) -> Text:
    parser = Text()
    parser.feed(page)
    return parser


def numbers(value: Any, path: str = "") -> Iterator[tuple[str, int | float]]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from numbers(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from numbers(v, f"{path}[{i}]")


def forms(value: int | float) -> set[str]:
    """How the page may print a number: in full (1,234 or 1234), or a float to 2 decimals, as a percentage
    (0.37 -> 37.00%), in milliseconds (0.0041 s -> 4.08 ms) or whole (1,225 GB/s)."""
    out = set()
    if float(value).is_integer():
        out |= {f"{int(value):,}", str(int(value))}
    if isinstance(value, float):
        out |= {f"{value * scale:,.2f}" for scale in (1, 100, 1000)} | {f"{value:,.0f}"}
    return out


def shown(value: int | float, text: str) -> bool:
    return any(re.search(rf"(?<![\d,.]){re.escape(f)}(?!\d|[.,]\d)", text) for f in forms(value))


def test_every_number_of_the_json_answer_is_on_the_page(page: tuple[Any, str]) -> None:
    payload, doc = page
    text = html.unescape(" ".join(parse(doc).parts))
    missing = [f"{path} = {value}" for path, value in numbers(payload) if not shown(value, text)]
    assert not missing, missing[:20]


def test_the_embedded_json_is_the_answer(page: tuple[Any, str]) -> None:
    payload, doc = page
    found = re.findall(rf'<script type="application/json" id="{DATA_ID}">(.*?)</script>', doc, re.S)
    assert len(found) == 1
    assert json.loads(found[0]) == payload


def test_nothing_is_fetched_and_nothing_runs(page: tuple[Any, str]) -> None:
    _, doc = page
    tags = parse(doc).tags
    references = [(t, a) for t, a in tags for k in ("src", "href", "srcset", "data", "xlink:href")
                  if (a.get(k) or "").strip() and not (a.get(k) or "").startswith("#")]
    assert not references, references  # no script, stylesheet, image, font or frame from anywhere
    assert [a.get("type") for t, a in tags if t == "script"] == ["application/json"]  # data, never code
    assert not [t for t, _ in tags if t in ("link", "img", "iframe", "object", "embed", "base")]
    styles = " ".join(re.findall(r"<style>(.*?)</style>", doc, re.S)) + " ".join(a.get("style") or "" for _, a in tags)
    assert "url(" not in styles and "@import" not in styles and "@font-face" not in styles
    # no URL in any attribute or style: an engine's own message may quote a docs URL, as text, never a link
    urls = [(t, a) for t, a in tags for v in a.values() if v and ("http://" in v or "https://" in v)]
    assert not urls and "http" not in styles, urls


def test_the_seven_sections_and_their_charts(page: tuple[Any, str]) -> None:
    payload, doc = page
    tags = parse(doc).tags
    ids = [a.get("id") for t, a in tags if t == "section"]
    assert ids == list(SECTIONS)
    charts = doc.count('<figure><figcaption>')
    assert charts == 3  # concurrency vs context, KV memory vs context, capacity vs TP
    assert doc.count("<polyline") >= len(payload["curves"]["concurrency_vs_context"])
    answered = [p for p in payload["capacity"] if not p["error"]]
    assert doc.count('<div class="bar">') >= len({p["engine"] for p in answered}) if answered else True


def test_formulas_and_log_lines_are_shown(page: tuple[Any, str]) -> None:
    payload, doc = page
    text = html.unescape(" ".join(parse(doc).parts))
    for explained in payload["explain"]["size"]:
        for group in explained["groups"]:
            assert group["formula"] in text
    for log in payload["engine_logs"]:
        for line in log["lines"]:
            assert line in text


def test_markup_in_a_model_path_stays_text(tmp_path: Path) -> None:
    folder = tmp_path / "x<" / "script><b>bold&amp;"  # the path reads .../x</script><b>bold&amp;
    folder.mkdir(parents=True)
    (folder / "config.json").write_text((Path(__file__).resolve().parents[2] / "configs" / "Qwen" / "Qwen3-8B" /
                                         "config.json").read_text())
    payload = report_payload(report(str(folder), kv_budget_bytes=(2**30,), engines=("vllm",)))
    doc = report_html(payload)
    assert "x</script>" in str(folder) and "</script>" not in doc.split(f'id="{DATA_ID}">')[1][:-len("</script></body></html>\n")]
    assert "<b>bold" not in doc and "x&lt;/script&gt;&lt;b&gt;bold&amp;amp;" in doc
    assert json.loads(re.findall(rf'id="{DATA_ID}">(.*?)</script>', doc, re.S)[0])["model"] == str(folder)


def test_refusals_are_warnings() -> None:
    payload = report_payload(report("deepseek-ai/DeepSeek-V3", gpu="H100", max_model_len=8192))
    assert payload.warnings and all("warning" in w or "error" in w for w in payload.warnings)
    assert "KV budget" in report_html(payload)


def test_a_refusal_the_payload_carries_reads_as_one() -> None:
    """Engine profiles that report a refusal in the payload (`refusal`, `estimated_max_model_len`) show it."""
    payload: ReportPayload = report_payload(report("Qwen/Qwen3-8B", kv_budget_bytes=(8 * 2**30,), engines=("vllm",)))
    refused = replace(payload.capacity[0], refusal="one 40,960-token request needs 5.6 GiB", estimated_max_model_len=7264)
    text = html.unescape(report_html(replace(payload, capacity=(refused, *payload.capacity[1:]))))
    assert "refuses: one 40,960-token request needs 5.6 GiB (longest that fits: 7,264)" in text


def test_the_assumptions_name_the_values_they_rest_on(page: tuple[Any, str]) -> None:
    """Issue 25: the assumptions said "gpu_memory_utilization None (the release's default)"."""
    payload, doc = page
    assumed = payload["inputs"]["assumed"]
    assert not any("None" in line for line in assumed), assumed
    if "vllm" in [p["engine"] for p in payload["capacity"]] and payload["inputs"]["kv_budget_bytes"] is None:
        # vLLM 0.33's default: rows_late.py cites vllm config/cache.py:66 (gpu_memory_utilization = 0.92)
        assert "vLLM gpu_memory_utilization 0.92 (the release's default)" in assumed
        assert "gpu_memory_utilization 0.92 (the release&#x27;s default)" in doc


def test_resolved_vllm_settings_carry_the_release_default() -> None:
    import kvplan

    answer = kvplan.capacity("Qwen/Qwen3-8B", engine="vllm", gpu="H100")
    assert answer.settings is not None and answer.settings.vllm.gpu_memory_utilization == 0.92
