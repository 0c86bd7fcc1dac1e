"""The examples of the README and of every documentation page (docs/) are real output: the Python examples
run as written, and each `$ kvplan ...` block shows what that command prints now."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_examples", README.parent / "tools" / "readme_examples.py")
    assert spec and spec.loader
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


PAGES = _tool().pages()


def _shown(command: str) -> str:
    """The output a page shows under `$ command` (the one page that holds it)."""
    found = [text.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
             for text in (page.read_text() for page in PAGES) if f"$ {command}\n" in text]
    assert len(found) == 1, f"{len(found)} pages show $ {command}"
    return found[0]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(README.parent)))
def test_python_examples_run(page: Path) -> None:
    for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S):
        exec(compile(block, str(page), "exec"), {})


def test_the_readme_and_the_docs_hold_python_examples() -> None:
    assert re.search(r"```python\n", README.read_text())
    assert sum(page.read_text().count("```python\n") for page in PAGES) >= 4


def test_readme_size_output_is_current(run_cli) -> None:
    text = README.read_text()
    shown = text.split("$ kvplan size meta-llama/Llama-2-70b --tp 4\n", 1)[1].split("```", 1)[0]
    code, out, _ = run_cli("size", "meta-llama/Llama-2-70b", "--tp", "4")
    assert code == 0
    for number in ("327,680", "81,920", "1,342,177,280", "335,544,320"):
        assert number in shown and number in out


def test_readme_reconcile_output_is_current(run_cli) -> None:
    command = "kvplan reconcile tests/data/logs/vllm-v066-internvl3-78b-tp8-l40s.log --model Qwen/Qwen2.5-72B"
    shown = _shown(command)
    code, out, _ = run_cli(*command.split()[1:])
    assert code == 0
    for text in ("3.06-3.10 GiB", "5,054-5,070", "9.89x", "6,553", "4 of 4 recomputed numbers match"):
        assert text in shown and text in out


@pytest.mark.parametrize(("command", "numbers"), [
    pytest.param("kvplan capacity meta-llama/Llama-3.1-70B --gpu H100 --tp 4 --max-model-len 32k --speculative-model "
                 "meta-llama/Llama-3.2-1B --num-speculative-tokens 4",
                 ("1,441,792", "433,152", "618,008,576", "16 KV layers, 8,192 B/token"), id="speculative"),
    pytest.param("kvplan capacity meta-llama/Llama-3.1-8B --gpu H100 --max-model-len 16k --max-loras 4 --max-lora-rank 64",
                 ("1,477,705,728", "438,432", "LoRA: 4 slots × rank 64"), id="lora"),
])
def test_readme_beside_the_kv_cache_outputs_are_current(run_cli, command: str, numbers: tuple[str, ...]) -> None:
    shown = _shown(command)
    code, out, _ = run_cli(*command.split()[1:])
    assert code == 0
    for number in numbers:
        assert number in shown and number in out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(README.parent)))
def test_every_shown_command_output_is_current(page: Path) -> None:
    """Every block of one `$ kvplan ...` command shows what that command prints now
    (`python tools/readme_examples.py` rewrites them)."""
    assert _tool().stale(page.read_text()) == []


def test_the_pages_show_commands_with_their_output() -> None:
    tool = _tool()
    assert len(tool.examples.__doc__ or "")
    assert sum(1 for _ in tool.BLOCK.finditer(README.read_text())) >= 2
    assert sum(sum(1 for _ in tool.BLOCK.finditer(page.read_text())) for page in PAGES) >= 12


def test_a_changed_output_is_caught() -> None:
    """The check can fail: one digit changed in a shown output, or a line dropped, is named as not current."""
    tool = _tool()
    text = README.read_text()
    changed = text.replace("│ 327,680 │", "│ 327,681 │", 1)
    assert changed != text
    assert tool.stale(changed) == ["kvplan size meta-llama/Llama-2-70b --tp 4"]
    dropped = text.replace("│ total, all 4 GPUs       │   1,342,177,280 │   1.25 GiB │             │            │\n", "")
    assert dropped != text and tool.stale(dropped) == ["kvplan size meta-llama/Llama-2-70b --tp 4"]


def test_examples_run_through_the_shell_filters_they_show() -> None:
    tool = _tool()
    full = tool.run("kvplan size meta-llama/Llama-2-70b --tp 4")
    assert tool.run("kvplan size meta-llama/Llama-2-70b --tp 4 | head -n 1") == full.splitlines(keepends=True)[0]
    assert tool.run("kvplan size meta-llama/Llama-2-70b --tp 4 | grep -E 'B/token|total, all'").count("\n") == 2
    assert tool.run("kvplan size meta-llama/Llama-2-70b --tp 4 | tail -n 1") == full.splitlines(keepends=True)[-1]
    with pytest.raises(ValueError, match="unsupported filter"):
        tool.run("kvplan size meta-llama/Llama-2-70b --tp 4 | sort")
    noisy = tool.run("kvplan capacity meta-llama/Llama-3.1-8B --gpu H100 --max-model-len 32k | grep verdict")
    quiet = tool.run("kvplan capacity meta-llama/Llama-3.1-8B --gpu H100 --max-model-len 32k 2>/dev/null | grep verdict")
    assert quiet.count("\n") == 1 and noisy.startswith(quiet) and "kvplan: " in noisy
