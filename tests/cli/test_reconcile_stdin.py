"""`kubectl logs … | kvplan reconcile -`: a server's log on standard input reads as the same file does (issue 33)."""

from __future__ import annotations

import json
from pathlib import Path

from request_noise import noise
from typer.testing import CliRunner

from kvplan.cli import app

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"


def test_stdin_reads_as_the_file(tmp_path: Path) -> None:
    startup = (LOGS / "vllm-v0102-qwen3-8b-fp8-lora-l4.log").read_text()
    big = tmp_path / "server.log"
    big.write_text(noise(2) + startup + noise(3))  # request lines of an earlier run, the start-up, its requests
    runner = CliRunner()
    from_file = runner.invoke(app, ["reconcile", str(big), "--json"])
    from_stdin = runner.invoke(app, ["reconcile", "-", "--json"], input=big.read_bytes())
    assert from_file.exit_code == from_stdin.exit_code
    assert json.loads(from_file.stdout) == json.loads(from_stdin.stdout)
    alone = runner.invoke(app, ["reconcile", str(LOGS / "vllm-v0102-qwen3-8b-fp8-lora-l4.log"), "--json"])
    shift = noise(2).count("\n")
    checks = json.loads(from_file.stdout)["checks"]
    assert [c["lines"] for c in checks] == [[n + shift for n in c["lines"]] for c in json.loads(alone.stdout)["checks"]]
    assert [c["logged"] for c in checks] == [c["logged"] for c in json.loads(alone.stdout)["checks"]]


def test_an_unreadable_log_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["reconcile", str(tmp_path)])
    assert result.exit_code == 2
    assert "cannot read the log" in result.stderr
