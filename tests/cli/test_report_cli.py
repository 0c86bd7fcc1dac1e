"""`kvplan report` end to end: the issue's three commands write one page each, offline; the page's JSON
is `kvplan report --json` and its size/capacity parts are what `kvplan size --json` / `kvplan capacity
--json` print for the same inputs; vLLM's option names and kvplan's short forms are the same options;
bad input is one stderr line and exit 2."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from kvplan.render.html import DATA_ID

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "tests" / "data" / "probe" / "h100-llama70b-dsv3-qwen3-8b-bf16.json"


def embedded(page: str) -> Any:
    return json.loads(re.findall(rf'<script type="application/json" id="{DATA_ID}">(.*?)</script>', page, re.S)[0])


@pytest.fixture
def my_model(tmp_path: Path) -> Path:
    folder = tmp_path / "my-model"
    folder.mkdir()
    shutil.copy(ROOT / "configs" / "Qwen" / "Qwen3-8B" / "config.json", folder / "config.json")
    return folder


@pytest.fixture
def write_page(run_cli: Any, tmp_path: Path) -> Any:
    def run(*args: str) -> tuple[str, str]:
        out = tmp_path / "page.html"
        code, stdout, err = run_cli("report", *args, "-o", str(out))
        assert code == 0, err
        assert f"wrote {out}" in err and stdout == ""
        return out.read_text(encoding="utf-8"), err
    return run


ISSUE_COMMANDS = [
    pytest.param(("meta-llama/Llama-3.1-70B", "--gpu", "H100", "--tensor-parallel-size", "4", "--max-model-len",
                  "32k"), id="llama70b-h100"),
    pytest.param(("deepseek-ai/DeepSeek-V3", "--gpu", "H200", "-tp", "8", "--engine", "all", "--kv-cache-dtype",
                  "auto,fp8"), id="dsv3-h200"),
]


@pytest.mark.parametrize("args", ISSUE_COMMANDS)
def test_issue_commands_write_a_page_whose_json_is_the_cli_json(write_page: Any, run_cli: Any,
                                                                args: tuple[str, ...]) -> None:
    page, _ = write_page(*args)
    code, out, err = run_cli("report", *args, "--json")
    assert code == 0, err
    assert embedded(page) == json.loads(out)
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") >= 7


def test_issue_command_with_a_probe(write_page: Any, my_model: Path) -> None:
    page, _ = write_page(str(my_model), "--kv-budget", "40GiB", "--probe", str(PROBE))
    data = embedded(page)
    assert data["probe"] == [json.loads(PROBE.read_text())]
    qwen = next(c for c in data["probe_checks"] if c["model"] == "Qwen/Qwen3-8B")
    # a folder holding Qwen3-8B's config.json is Qwen3-8B's cache: 36 layers × 8 heads × 256 × 2 B per token
    assert qwen["same_model"] and qwen["match"] and qwen["measured_bytes_per_token"] == 147_456
    assert {p["kv_budget_bytes_per_gpu"] for p in data["capacity"]} == {40 * 2**30}


def _size_args(data: dict[str, Any], kv_dtype: str) -> list[str]:
    par = data["inputs"]["parallel"]
    return [data["model"], "--tp", str(par["tp"]), "--pp", str(par["pp"]), "--seq-len",
            str(data["inputs"]["max_model_len"]), "--kv-dtype", kv_dtype, "--json"]


@pytest.mark.parametrize("args", ISSUE_COMMANDS)
def test_size_and_capacity_parts_equal_their_commands(run_cli: Any, args: tuple[str, ...]) -> None:
    code, out, err = run_cli("report", *args, "--json")
    data = json.loads(out)
    gpu = args[args.index("--gpu") + 1]
    tp = str(data["inputs"]["parallel"]["tp"])
    for size in data["size"]:
        code, out, err = run_cli("size", *_size_args(data, size["kv_dtype"]))
        assert code == 0, err
        assert json.loads(out) == size
    for cap in data["capacity"]:
        code, out, err = run_cli("capacity", data["model"], "--gpu", gpu, "--tp", tp, "--max-model-len",
                                 str(data["inputs"]["max_model_len"]), "--engine", cap["engine"], "--kv-dtype",
                                 cap["kv_dtype"], "--json")
        assert code == 0, err
        assert json.loads(out) == cap


def test_vllm_names_and_short_forms_are_the_same_options(run_cli: Any) -> None:
    base = ("Qwen/Qwen3-32B", "--kv-budget", "30GiB")
    long = ("--tensor-parallel-size", "2", "--pipeline-parallel-size", "2", "--max-model-len", "8k",
            "--kv-cache-dtype", "fp8", "--engine", "vllm,sglang", "--mamba-ssm-cache-dtype", "auto")
    short = ("-tp", "2", "-pp", "2", "--seq-len", "8192", "--kv-dtype", "fp8", "--engine", "vllm", "--engine",
             "sglang", "--state-dtype", "auto")
    kvplan = ("--tp", "2", "--pp", "2", "--max-model-len", "8192", "--kv-dtype", "fp8", "--engine", "sglang,vllm")
    outs = [run_cli("report", *base, *args, "--json") for args in (long, short, kvplan)]
    assert all(code == 0 for code, _, _ in outs), [err for _, _, err in outs]
    first = json.loads(outs[0][1])
    assert all(json.loads(out) == first for _, out, _ in outs)
    assert [p["engine"] for p in first["capacity"]] == ["vllm", "sglang"]
    assert first["inputs"]["parallel"] == {"tp": 2, "pp": 2, "dcp": 1} and first["inputs"]["max_model_len"] == 8192


def test_the_page_shows_the_command_under_vllm_names(write_page: Any) -> None:
    page, _ = write_page("Qwen/Qwen3-8B", "--kv-budget", "20GiB", "--tp", "2", "--kv-dtype", "fp8", "--engine",
                         "vllm")
    assert ("kvplan report Qwen/Qwen3-8B --tensor-parallel-size 2 --engine vllm --kv-cache-dtype fp8 "
            "--kv-budget 20GiB") in page


def test_default_file_name_and_stdout(run_cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("report", "meta-llama/Llama-3.1-8B", "--kv-budget", "20GiB", "--engine", "vllm")
    assert code == 0 and (tmp_path / "Llama-3.1-8B-report.html").is_file(), err
    code, out, err = run_cli("report", "meta-llama/Llama-3.1-8B", "--kv-budget", "20GiB", "--engine", "vllm",
                             "-o", "-")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")


def test_warnings_go_to_stderr(run_cli: Any, tmp_path: Path) -> None:
    code, _, err = run_cli("report", "deepseek-ai/DeepSeek-V3", "--gpu", "H100", "--max-model-len", "8k",
                           "--engine", "vllm", "-o", str(tmp_path / "x.html"))
    assert code == 0
    assert "kvplan: vLLM 0.33: warning: KV budget is" in err


BAD = [
    pytest.param(("no-such-model",), "unknown model", id="model"),
    pytest.param(("Qwen/Qwen3-8B", "--kv-cache-dtype", "fp9"), "unknown KV dtype 'fp9'", id="kv-dtype"),
    pytest.param(("Qwen/Qwen3-8B", "--engine", "vllm2"), "unknown engine 'vllm2'", id="engine"),
    pytest.param(("Qwen/Qwen3-8B", "-tp", "3"), "does not divide", id="tp"),
    pytest.param(("Qwen/Qwen3-8B", "--max-model-len", "lots"), "--max-model-len", id="length"),
    pytest.param(("Qwen/Qwen3-8B", "--probe", "missing.json"), "--probe missing.json: cannot read it", id="probe"),
    pytest.param(("Qwen/Qwen3-8B", "--gpu-memory-utilization", "1.5"), "--gpu-memory-utilization", id="util"),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_is_one_line_and_exit_2(run_cli: Any, args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    code, out, err = run_cli("report", *args, "-o", str(tmp_path / "x.html"))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not JSON"), ('{"device": "cpu"}', "no 'results' list"),
    ('{"results": [{"model": "x"}]}', "results[0] has no str 'kv_dtype'"),
    ('{"results": [{"model": "x", "kv_dtype": "bf16", "tp": true, "num_blocks": 1, "block_size": 16, '
     '"predicted_bytes": 1, "measured_bytes": 1, "groups": []}]}', "results[0] has no int 'tp'"),
])
def test_a_file_that_is_no_probe_output_is_refused(run_cli: Any, tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "probe.json"
    bad.write_text(text)
    code, _, err = run_cli("report", "Qwen/Qwen3-8B", "--probe", str(bad), "-o", str(tmp_path / "x.html"))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_an_unwritable_output_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    code, _, err = run_cli("report", "Qwen/Qwen3-8B", "--kv-budget", "20GiB", "-o", str(tmp_path / "no" / "x.html"))
    assert code == 2 and "cannot write -o" in err and len(err.strip().splitlines()) == 1
