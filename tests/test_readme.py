"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def test_python_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


def test_readme_size_output_is_current(run_cli) -> None:
    text = README.read_text()
    shown = text.split("$ kvplan size meta-llama/Llama-2-70b --tp 4\n", 1)[1].split("```", 1)[0]
    code, out, _ = run_cli("size", "meta-llama/Llama-2-70b", "--tp", "4")
    assert code == 0
    for number in ("327,680", "81,920", "1,342,177,280", "335,544,320"):
        assert number in shown and number in out


def test_readme_reconcile_output_is_current(run_cli) -> None:
    command = "kvplan reconcile tests/data/logs/vllm-v066-internvl3-78b-tp8-l40s.log --model Qwen/Qwen2.5-72B"
    shown = README.read_text().split(f"$ {command}\n", 1)[1].split("```", 1)[0]
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
    shown = README.read_text().split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    code, out, _ = run_cli(*command.split()[1:])
    assert code == 0
    for number in numbers:
        assert number in shown and number in out


def test_every_shown_command_output_is_current() -> None:
    """Every README block of one `$ kvplan ...` command shows what that command prints now
    (`python tools/readme_examples.py` rewrites them)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_examples", README.parent / "tools" / "readme_examples.py")
    assert spec and spec.loader
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = README.read_text()
    assert len(tool.examples.__doc__ or "") and sum(1 for _ in tool.BLOCK.finditer(text)) >= 12
    assert tool.stale(text) == []
