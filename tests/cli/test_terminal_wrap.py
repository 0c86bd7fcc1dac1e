"""Long lines at a terminal's width (issue 25): the terminal cut engine log lines, notes and reconcile's rules
mid-number, and piped output laid out 200 wide wrapped mid-number in `kvplan models | head` on an 80-column
terminal. Now: piped stdout takes the width of the terminal stderr shows, and prose is cut at spaces."""

from __future__ import annotations

import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from terminal import drain

from kvplan.render.tables import wrap_line

ROOT = Path(__file__).resolve().parents[2]
NUMBER_OR_PATH = re.compile(r"[\w./-]*\d[\d,.]*\d[\w./-]*|\S*/\S*")


def test_wrap_line_cuts_at_spaces_only() -> None:
    line = ("vllm (vLLM 0.33) logs: GPU KV cache size: 2,786,505 tokens, Maximum concurrency for 262,144 tokens "
            "per request: 10.63x; config /home/user/models/Qwen3-Next-80B-A3B-Thinking/config.json")
    for width in (20, 33, 47, 80):
        lines = wrap_line(line, width)
        assert " ".join(part.strip() for part in lines) == line
        assert all(part.startswith("  ") for part in lines[1:])
        whole = set(NUMBER_OR_PATH.findall(line))
        assert whole <= {token for part in lines for token in NUMBER_OR_PATH.findall(part)}, (width, lines)
        assert all(len(part) <= width or " " not in part.strip() for part in lines)


def test_wrap_line_keeps_a_line_that_fits_and_each_physical_line() -> None:
    assert wrap_line("a short line", 80) == ["a short line"]
    assert wrap_line("usable = 1\n  available = 2", 80) == ["usable = 1", "  available = 2"]


def run_with_stderr_terminal(*args: str, columns: int = 80) -> tuple[int, str, str]:
    """stdout piped (as `| head`), stderr a pty of `columns` columns, COLUMNS unset: an interactive shell's case."""
    import pty

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([sys.executable, "-m", "kvplan", *args], stdout=subprocess.PIPE, stderr=follower,
                          cwd=ROOT, env={**env, "TERM": "dumb", "NO_COLOR": "1"}, timeout=120)
    os.close(follower)
    return proc.returncode, proc.stdout.decode(), drain(leader).decode().replace("\r\n", "\n")


def test_models_piped_on_an_80_column_terminal_is_laid_out_at_80() -> None:
    code, out, _ = run_with_stderr_terminal("models")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "…" not in out
    assert any(line.startswith("│ Olmo-3.1-32B-Instruct ") and " 262,144 " in line for line in out.splitlines()), out


@pytest.mark.parametrize("columns", [60, 80])
def test_capacity_log_line_and_notes_wrap_at_spaces(columns: int) -> None:
    args = ("capacity", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100", "--tp", "4")
    code, out, err = run_with_stderr_terminal(*args, columns=columns)
    assert code == 0, err
    for text in (out, err):
        assert max(len(line) for line in text.splitlines()) <= columns, text
    answer = json.loads(subprocess.run([sys.executable, "-m", "kvplan", *args, "--json"], capture_output=True,
                                       text=True, cwd=ROOT, timeout=120).stdout)
    shown = {token for line in out.splitlines() for token in NUMBER_OR_PATH.findall(line)}
    assert answer["log_lines"]
    for line in answer["log_lines"]:
        assert set(NUMBER_OR_PATH.findall(line)) <= shown, line  # every number of the log line printed whole
    notes = [line for line in err.splitlines() if line.startswith("kvplan: ")]
    assert notes and all(len(line) <= columns for line in err.splitlines())


def test_no_terminal_keeps_log_lines_whole() -> None:
    """Piped with no terminal at all (CI, a file): the engine's line is one line, as the engine logs it."""
    args = ("capacity", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100", "--tp", "4")
    done = subprocess.run([sys.executable, "-m", "kvplan", *args], capture_output=True, text=True, cwd=ROOT,
                          env={k: v for k, v in os.environ.items() if k != "COLUMNS"}, timeout=120)
    assert any(line.startswith("vllm (vLLM 0.33) logs: GPU KV cache size:") and "Maximum concurrency for" in line
               for line in done.stdout.splitlines()), done.stdout
