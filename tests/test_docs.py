"""The documentation site (mkdocs.yml, docs/): a README on one page, every page in the navigation, the reference
generated from the code, and the JSON contract's key lists present in real `--json` output.
(tests/test_readme.py checks the examples every page shows.)"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "tools" / "docs_hooks.py")
    assert spec and spec.loader
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks


def _nav_files(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [f for value in node.values() for f in _nav_files(value)]
    return [f for item in node for f in _nav_files(item)]


def test_the_readme_fits_on_a_page() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_the_readme_counts_the_bundled_models() -> None:
    from kvplan.config.resolve import bundled_index

    counted = re.search(r"the (\d+) bundled configs", (ROOT / "README.md").read_text())
    assert counted and int(counted.group(1)) == len(bundled_index())


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    """A page left out of mkdocs.yml's nav is unreachable; an entry without its file fails the strict build."""
    nav = _nav_files(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert len(nav) == len(set(nav))


def test_the_command_reference_is_every_command_of_the_app() -> None:
    hooks = _hooks()
    names = hooks.command_names()
    assert {"size", "capacity", "fit", "reconcile", "probe", "report", "engines"} <= set(names)
    page = hooks.on_page_markdown((DOCS / "reference" / "cli.md").read_text())
    assert "<!-- kvplan:" not in page
    for name in names:
        section = page.split(f"## kvplan {name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"$ kvplan {name} --help\n" in section and f"Usage: kvplan {name} " in section


def test_the_gpu_catalog_page_lists_every_gpu() -> None:
    from kvplan.planning.gpus import GPUS

    table = _hooks().on_page_markdown("<!-- kvplan: gpus -->")
    for gpu in GPUS.values():
        assert f"| {gpu.name} | {gpu.memory_bytes:,} |" in table
    assert "| H100-SXM | 85,018,542,080 | 79.18 |" in table  # 81,080 MiB, as torch reports it on an H100 SXM


def test_every_marker_on_the_pages_is_one_the_hook_expands() -> None:
    hooks = _hooks()
    for page in DOCS.rglob("*.md"):
        for marker in re.findall(r"<!-- kvplan:.*?-->", page.read_text()):
            assert hooks.MARKER.fullmatch(marker), f"{page}: {marker} is not expanded by tools/docs_hooks.py"


def _section(command: str) -> str:
    text = (DOCS / "reference" / "json.md").read_text()
    return text.split(f"## `kvplan {command} --json`\n", 1)[1].split("\n## ", 1)[0]


def _names(obj: Any, found: set[str]) -> set[str]:
    """Every key of a JSON document, and every string value (enumerations such as `attention`: `GQA`)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            found.add(key)
            _names(value, found)
    elif isinstance(obj, list):
        for value in obj:
            _names(value, found)
    elif isinstance(obj, str):
        found.add(obj)
    return found


PROSE = {"null"}  # backticked words of the sections that are not keys ("each `null` when off")

JSON_RUNS = {
    "size": [("size", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--json"),
             ("size", "deepseek-ai/DeepSeek-V3", "--json"), ("models", "--json")],
    "capacity": [("capacity", "meta-llama/Llama-3.1-70B", "--gpu", "H100", "--tp", "4", "--json",
                  "--speculative-model", "meta-llama/Llama-3.2-1B", "--num-speculative-tokens", "4"),
                 ("capacity", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--json", "--max-loras", "2",
                  "--lmcache-cpu-size", "10"),
                 ("capacity", "google/gemma-3-27b-it", "--gpu", "H100", "--json"),
                 ("capacity", "Qwen/Qwen3-8B", "--engine", "sglang", "--gpu", "H100", "--json", "--hicache-ratio", "2",
                  "--role", "decode")],
    "reconcile": [("reconcile", "tests/data/logs/vllm-v066-internvl3-78b-tp8-l40s.log", "--model", "Qwen/Qwen2.5-72B",
                   "--json"),
                  ("reconcile", "tests/data/logs/sglang-v041-llama31-8b-h100-docs.log", "--json"),
                  ("reconcile", "tests/data/logs/trtllm-1.1.0rc3-gpt-oss-120b-gb10-pytorch.log", "--json"),
                  ("reconcile", "tests/data/logs/vllm-v017-qwen3-4b-rtx5080-refusal.log", "--model", "Qwen/Qwen3-8B",
                   "--json")],
    "report": [("report", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--json")],
    "diff": [("diff", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100", "--tp", "4", "--max-model-len", "32k",
              "--engine", "vllm@0.25", "--engine", "vllm@0.29", "--json")],
}


@pytest.mark.parametrize("command", sorted(JSON_RUNS))
def test_the_json_contract_names_only_keys_kvplan_prints(run_cli, monkeypatch, command: str) -> None:
    monkeypatch.chdir(ROOT)
    printed: set[str] = set()
    for args in JSON_RUNS[command]:
        code, out, err = run_cli(*args)
        assert code in (0, 1), err
        _names(json.loads(out), printed)
    listed = set(re.findall(r"`([a-z_][a-z0-9_]*)`", _section(command))) - PROSE
    assert len(listed) >= 10
    assert listed - printed == set()
