"""`kvplan reconcile`: the JSON contract, standard input, exit codes, and bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli import app, main

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
NIGHTLY = str(LOGS / "vllm-nightly-llama31-8b-a100-80gb-fragments.log")
CONTRACT = {"engine", "version", "model", "checks", "ok"}
CHECK_CONTRACT = {"quantity", "logged", "kvplan", "match", "explanation"}
QUANTITIES = {"kv_budget_bytes", "weights_bytes", "num_blocks", "kv_tokens", "max_concurrency", "k_size_bytes",
              "v_size_bytes", "kv_size_bytes", "num_cpu_blocks", "kv_needed_bytes", "estimated_max_model_len",
              "max_tokens", "kv_bytes_per_token"}  # TensorRT-LLM's PyTorch flow (issue 21)


def test_json_contract(run_cli) -> None:
    code, out, err = run_cli("reconcile", str(LOGS / "vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s.log"), "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert set(payload) >= CONTRACT
    assert (payload["engine"], payload["version"], payload["model"], payload["ok"]) == (
        "vllm", "0.10.2", "Qwen/Qwen3-235B-A22B", True)
    assert all(set(c) >= CHECK_CONTRACT for c in payload["checks"])
    assert {c["quantity"] for c in payload["checks"]} == {"weights_bytes", "kv_budget_bytes", "num_blocks",
                                                           "kv_tokens", "max_concurrency"}
    tokens = next(c for c in payload["checks"] if c["quantity"] == "kv_tokens")
    assert (tokens["logged"], tokens["kvplan"], tokens["match"], tokens["workers"]) == (238208, 238208, True, ["TP0"])
    budget = next(c for c in payload["checks"] if c["quantity"] == "kv_budget_bytes")
    assert budget["logged"] == round(10.64 * 2**30) and isinstance(budget["kvplan"], int)
    concurrency = next(c for c in payload["checks"] if c["quantity"] == "max_concurrency")
    assert concurrency["logged"] == 7.27 and concurrency["logged_text"] == "7.27x"


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_every_quantity_is_named_from_the_contract(run_cli, name: str) -> None:
    code, out, _ = run_cli("reconcile", str(LOGS / name), "--json", "--model", "meta-llama/Llama-3.1-8B")
    if code == 2:  # a setup kvplan cannot plan with this stand-in
        return
    payload = json.loads(out)
    assert {c["quantity"] for c in payload["checks"] + payload["skipped"]} <= QUANTITIES


def test_table_and_exit_0_when_everything_matches(run_cli) -> None:
    code, out, _ = run_cli("reconcile", NIGHTLY, "--model", "meta-llama/Llama-3.1-8B")
    assert code == 0
    assert "3 of 3 recomputed numbers match" in out
    for text in ("kv_tokens", "460,496", "460,416-460,512", "3.51x", "yes"):
        assert text in out


def test_exit_1_when_something_differs(run_cli) -> None:
    code, out, _ = run_cli("reconcile", str(LOGS / "trtllm-0.12.0dev-llama2-7b-fp8-h100-docs.log"), "--json")
    assert code == 1
    payload = json.loads(out)
    assert payload["ok"] is False
    assert [c["match"] for c in payload["checks"]] == [False, True, False]


def test_standard_input() -> None:
    result = CliRunner().invoke(app, ["reconcile", "-", "--model", "meta-llama/Llama-3.1-8B", "--json"],
                                input=Path(NIGHTLY).read_text())
    assert result.exit_code == 0
    assert json.loads(result.stdout)["checks"][1]["logged"] == 460496


@pytest.mark.parametrize(("args", "message"), [
    (["/nonexistent/startup.log"], "cannot read the log /nonexistent/startup.log: No such file or directory"),
    ([str(LOGS)], "cannot read the log"),
    ([NIGHTLY], "the log does not name its checkpoint; pass --model as a bundled id"),
    ([str(LOGS / "vllm-v0260-lfm25-1.2b-sm90.log")], "the log names '/model', which kvplan cannot load; pass --model"),
    ([NIGHTLY, "--model", "no-such-model-xyz"], "unknown model 'no-such-model-xyz'"),
    ([NIGHTLY, "--engine", "hf"], "unknown --engine 'hf'"),
    ([NIGHTLY, "--model", "meta-llama/Llama-3.1-8B", "--tp", "0"], "--tensor-parallel-size must be at least 1"),
    ([NIGHTLY, "--model", "meta-llama/Llama-3.1-8B", "--max-model-len", "lots"], "--max-model-len"),
    ([NIGHTLY, "--model", "meta-llama/Llama-3.1-8B", "--tp", "3"], "tp 3 does not divide the 32 attention heads"),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code = main(["reconcile", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("kvplan: error: ") and message in err
    assert "Traceback" not in err


def test_a_file_that_is_no_engine_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("Server started on port 8000\nGET /health 200\n")
    assert main(["reconcile", str(text)]) == 2
    assert capsys.readouterr().err == ("kvplan: error: no vLLM, SGLang or TensorRT-LLM start-up line found in the log; "
                                       "pass --engine if it is one of them\n")


def test_a_log_without_kv_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "serve.log"
    log.write_text("INFO 07-30 07:06:32 [api_server.py:1896] vLLM API server version 0.10.2\n")
    assert main(["reconcile", str(log)]) == 2
    assert "the vLLM log has no KV-cache line that reconcile reads" in capsys.readouterr().err


def test_undecodable_bytes_are_read_not_fatal(tmp_path: Path, run_cli) -> None:
    log = tmp_path / "binary.log"
    log.write_bytes(b"\xff\xfe" + Path(NIGHTLY).read_bytes())
    code, out, _ = run_cli("reconcile", str(log), "--model", "meta-llama/Llama-3.1-8B", "--json")
    assert code == 0 and json.loads(out)["ok"]
