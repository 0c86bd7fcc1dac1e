"""The launch command, kvplan's most copied output, survives a copy (issue 34): at 60, 80 and 120 columns it is
printed on one line or cut between words with ` \\` continuations, and pasted back (a shell joins the lines, shlex
splits the words) `kvplan capacity -- ...` plans what was printed. Wrapped with bare newlines, a paste ran
`vllm serve MODEL --tensor-parallel-size 1` with defaults."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

WIDTHS = (60, 80, 120)
CAPACITY = [
    ["capacity", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--dp", "8", "--tp", "1", "--ep", "8"],
    ["capacity", "meta-llama/Llama-3.1-70B", "--gpu", "H100", "--tp", "8", "--gpus-per-node", "4",
     "--max-model-len", "32k"],
    ["capacity", "Qwen/Qwen3-8B", "--gpu", "L40S", "--kv-cache-dtype", "bf16,fp8", "--max-model-len", "16k"],
    ["capacity", "Qwen/Qwen3-32B", "--gpu", "H100", "--engine", "sglang", "--tp", "2", "--max-model-len", "32k"],
]
FIT = [
    ["fit", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--max-model-len", "32k", "--concurrency", "256"],
    ["fit", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--max-model-len", "32k", "--concurrency", "64"],
]


def pasted(out: str) -> list[tuple[str, list[str]]]:
    """(label, words) of every `launch...: COMMAND` printed, its lines joined as a shell joins `\\`-newline."""
    lines, found = out.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("launch"):
            block = [line]
            while block[-1].endswith(" \\"):
                block.append(lines[i + len(block)])
            label, _, command = "\n".join(block).replace("\\\n", "").partition(": ")
            found.append((label, shlex.split(command)))
    return found


def printed(run_cli: Any, monkeypatch: pytest.MonkeyPatch, width: int, args: list[str]) -> str:
    import kvplan.cli.common

    monkeypatch.setattr(kvplan.cli.common, "terminal_width", lambda stream: width)
    code, out, err = run_cli(*args)
    assert code == 0, err
    assert all(len(line) <= width or " " not in line.strip() for line in out.splitlines()
               if line.startswith(("launch", "  "))), out
    return out


def plan(run_cli: Any, gpu: str, engine: str, words: list[str]) -> dict[str, Any]:
    code, out, err = run_cli("capacity", "--gpu", gpu, "--engine", engine, "--json", "--", *words)
    assert code == 0, (words, err)
    return dict(json.loads(out))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("args", CAPACITY, ids=lambda a: "-".join(a[1:2] + a[-2:]))
def test_capacity_launch_lines_paste_back(run_cli: Any, monkeypatch: pytest.MonkeyPatch, width: int,
                                          args: list[str]) -> None:
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    answers = json.loads(out)
    answers = answers if isinstance(answers, list) else [answers]
    commands = pasted(printed(run_cli, monkeypatch, width, args))
    assert len(commands) == len(answers)
    for (_, words), answer in zip(commands, answers, strict=True):
        assert shlex.join(words) == answer["command"]
        again = plan(run_cli, answer["gpu"], answer["command_release"] or answer["engine"], words)
        for key in ("kv_tokens", "kv_dtype", "parallel", "max_model_len", "kv_budget_bytes_per_gpu"):
            assert again[key] == answer[key], key


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("args", FIT, ids=lambda a: a[1])
def test_fit_launch_line_pastes_back(run_cli: Any, monkeypatch: pytest.MonkeyPatch, width: int,
                                     args: list[str]) -> None:
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    best = json.loads(out)["best"]
    [(label, words)] = pasted(printed(run_cli, monkeypatch, width, args))
    assert label.startswith(f"launch, each of {best['replicas']} replica") and shlex.join(words) == best["command"]
    again = plan(run_cli, best["gpu"], best["release"], words)
    assert again["kv_tokens_per_replica"] == best["kv_tokens_per_replica"]
    assert again["kv_budget_bytes_per_gpu"] == best["kv_budget_bytes_per_gpu"]


def test_without_a_terminal_the_command_is_one_line(run_cli: Any) -> None:
    code, out, err = run_cli(*FIT[0])  # piped to a file: no width known, nothing cut
    assert code == 0, err
    [line] = [line for line in out.splitlines() if line.startswith("launch")]
    assert not line.endswith("\\") and "--gpu-memory-utilization" in line
