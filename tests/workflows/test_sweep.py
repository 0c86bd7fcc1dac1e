"""`kvplan sweep`: ranges, the cartesian product, agreement with kv_cache(), CSV / JSON lines output."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from kvplan import kv_cache
from kvplan.errors import InputError
from kvplan.workflows import SWEEP_COLUMNS, sweep
from kvplan.workflows.ranges import parse_int_axis, parse_str_axis

LLAMA70 = "meta-llama/Llama-3.1-70B"
QWEN32 = "Qwen/Qwen3-32B"
CONFIGS = Path(__file__).resolve().parent.parent.parent / "configs"


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("1k..128k", tuple(1024 * 2**k for k in range(8)), id="1k-128k"),
    pytest.param("1..1024", tuple(2**k for k in range(11)), id="1-1024"),
    pytest.param("1,2,4", (1, 2, 4), id="list"),
    pytest.param("1..8,12", (1, 2, 4, 8, 12), id="range-and-value"),
    pytest.param("3..20", (3, 6, 12, 20), id="end-included"),
    pytest.param("4k,4096,8k", (4096, 8192), id="duplicates-dropped"),
    pytest.param("7", (7,), id="single"),
])
def test_parse_int_axis(text, expected):
    assert parse_int_axis(text, "--seq-len") == expected


@pytest.mark.parametrize("text", ["8..1", "", "a", "1,,2", "0", "1..x"])
def test_parse_int_axis_errors(text):
    with pytest.raises(InputError):
        parse_int_axis(text, "--batch")


def test_parse_str_axis():
    assert parse_str_axis("bf16, fp8,bf16", "--kv-dtype") == ("bf16", "fp8")


def test_product_size_order_and_values():
    result = sweep([LLAMA70, QWEN32], max_model_lens=(1024, 32768), batches=(1, 8, 64), tps=(1, 8),
                   kv_dtypes=("bf16", "fp8"))
    assert len(result.rows) == 2 * 2 * 2 * 2 * 3
    assert result.columns == SWEEP_COLUMNS
    rows = list(result.dicts())
    assert [r["batch"] for r in rows[:3]] == [1, 8, 64]  # batch varies fastest
    for r in rows[::5]:  # every point agrees with the library's single-point answer
        ref = kv_cache(r["model"], tp=r["tp"], pp=r["pp"], kv_dtype=r["kv_dtype"], max_model_len=r["seq_len"],
                       batch=r["batch"])
        assert r["total_bytes_per_gpu"] == ref.total_bytes_per_gpu
        assert r["total_bytes_all_gpus"] == ref.total_bytes_all_gpus
        assert r["total_bytes_paged_per_gpu"] == ref.total_bytes_paged_per_gpu
        assert r["bytes_per_token"] == ref.bytes_per_token


def test_golden_point():
    # Llama-3.1-70B bf16: 2 × 80 layers × 8 KV heads × 128 × 2 B = 327,680 B/token; tp 8 -> 1 head/GPU = 40,960.
    # 32k tokens × 64 sequences × 40,960 B = 85,899,345,920 B per GPU (80 GiB).
    (row,) = sweep([LLAMA70], max_model_lens=(32768,), batches=(64,), tps=(8,)).dicts()
    assert (row["bytes_per_token"], row["bytes_per_token_per_gpu"]) == (327_680, 40_960)
    assert row["total_bytes_per_gpu"] == 85_899_345_920
    assert row["num_gpus"] == 8


def test_invalid_combinations_are_skipped_with_a_note():
    # falcon-7b has 71 attention heads: tp 2 cannot split them
    result = sweep(["tiiuae/falcon-7b"], max_model_lens=(1024,), tps=(1, 2))
    assert {r["tp"] for r in result.dicts()} == {1}
    assert any("tp=2" in note and "71" in note for note in result.notes)


def test_all_invalid_is_an_error():
    with pytest.raises(InputError, match="no sweep point"):
        sweep(["tiiuae/falcon-7b"], max_model_lens=(1024,), tps=(2,))


def test_cli_csv_file(run_cli, tmp_path):
    out_path = tmp_path / "out.csv"
    code, out, err = run_cli("sweep", LLAMA70, QWEN32, "--seq-len", "1k..128k", "--tp", "1,2,4,8",
                             "--kv-dtype", "bf16,fp8", "--batch", "1..1024", "--csv", str(out_path))
    assert code == 0, err
    assert out == ""  # the CSV goes to the file, nothing to stdout
    rows = list(csv.reader(out_path.open()))
    assert tuple(rows[0]) == SWEEP_COLUMNS
    assert len(rows) - 1 == 2 * 8 * 4 * 2 * 11  # models × seq × tp × dtype × batch


def test_cli_csv_stdout_and_json_lines(run_cli):
    args = ("sweep", QWEN32, "--seq-len", "4k,8k", "--batch", "1,2")
    code, out, err = run_cli(*args, "--csv", "-")
    assert code == 0, err
    assert len(list(csv.reader(io.StringIO(out)))) == 1 + 4
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(p["seq_len"], p["batch"]) for p in lines] == [(4096, 1), (4096, 2), (8192, 1), (8192, 2)]
    assert lines[3]["total_bytes"] == 2 * lines[2]["total_bytes"]


def test_cli_table_and_notes(run_cli):
    code, out, err = run_cli("sweep", "tiiuae/falcon-7b", "--seq-len", "2k", "--tp", "1,2")
    assert code == 0, err
    assert "sweep: 1 point\n" in out and "falcon-7b" in out
    assert "skipped" in err


def test_cli_ten_thousand_points(run_cli, tmp_path):
    # 6 models × 18 lengths (1..128k) × 4 tp × 2 dtypes × 12 batches = 10,368 points (timed in benchmarks/bench_sweep.py)
    out_path = tmp_path / "big.csv"
    models = [LLAMA70, QWEN32, "meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-72B", "deepseek-ai/DeepSeek-V3",
              "openai/gpt-oss-20b"]
    code, _, err = run_cli("sweep", *models, "--seq-len", "1..128k", "--tp", "1,2,4,8", "--kv-dtype", "bf16,fp8",
                           "--batch", "1..2048", "--csv", str(out_path))
    assert code == 0, err
    assert sum(1 for _ in out_path.open()) == 1 + 6 * 18 * 4 * 2 * 12


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(("--seq-len", "8k..1k"), "empty", id="reversed-range"),
    pytest.param(("--seq-len", "1k", "--kv-dtype", "fp7"), "fp7", id="unknown-dtype"),
    pytest.param(("--seq-len", "1k", "--plot", "x.jpg"), ".png or .svg", id="bad-plot-suffix"),
])
def test_cli_errors(run_cli, args, message):
    code, _, err = run_cli("sweep", QWEN32, *args)
    assert code == 2 and message in err


def test_engine_axis_columns(run_cli):
    # --kv-budget 20GiB bypasses GPU/weights: 20 × 2^30 / 131,072 B/token (Llama-3.1-8B bf16) = 163,840 tokens;
    # vLLM max concurrency at 4k = 163,840 / 4,096 = 40, at 8k = 20. batch 64 does not fit, batch 1 does.
    code, out, err = run_cli("sweep", "meta-llama/Llama-3.1-8B", "--seq-len", "4k,8k", "--batch", "1,64",
                             "--engine", "vllm", "--kv-budget", "20GiB", "--json")
    assert code == 0, err
    points = [json.loads(line) for line in out.splitlines()]
    assert [(p["seq_len"], p["batch"], p["max_concurrency"], p["fits"]) for p in points] == [
        (4096, 1, 40.0, True), (4096, 64, 40.0, False), (8192, 1, 20.0, True), (8192, 64, 20.0, False)]
    assert {p["kv_tokens"] for p in points} == {163_840}
    assert {p["engine"] for p in points} == {"vllm"}


def test_engine_refusal_is_a_note(run_cli):
    # Qwen3-32B is configured for 40,960 tokens: vLLM refuses a 64k max-model-len; the point keeps its memory
    code, out, err = run_cli("sweep", QWEN32, "--seq-len", "32k,64k", "--engine", "vllm", "--kv-budget", "40GiB",
                             "--csv", "-")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["max_concurrency"] for r in rows][1] == ""
    assert rows[1]["total_bytes_per_gpu"] != ""
    assert "vllm at 65,536" in err


def test_memory_refusal_keeps_the_answer(run_cli):
    # Llama-3.1-8B: a 131,072-token request needs 16 GiB; a 10 GiB budget holds 5,120 blocks (81,920 tokens):
    # vLLM 0.33 would not start. The point keeps its numbers, fits is false, the message goes to stderr
    code, out, err = run_cli("sweep", "meta-llama/Llama-3.1-8B", "--seq-len", "128k", "--engine", "vllm",
                             "--kv-budget", "10GiB", "--csv", "-")
    assert code == 0, err
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert (row["kv_tokens"], row["requests_at_max_len"], row["fits"]) == ("81920", "0.0", "False")
    assert "vllm refuses at 131,072: To serve at least one request" in err


def test_csv_lines_are_the_csv_modules_rows(tmp_path):
    """write_csv formats a sweep's numbers into one template per (layout, length): the text is what csv.writer makes
    of the rows, a model named by a path that needs quoting (a comma, a quote) included."""
    from kvplan.render.workflows import write_csv

    folder = tmp_path / 'my "llama", 8b'
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "meta-llama" / "Llama-3.1-8B" / "config.json").read_text())
    result = sweep([LLAMA70, str(folder)], max_model_lens=(1000, 4096, 131072), batches=(1, 3, 2048), tps=(1, 8),
                   kv_dtypes=("bf16", "fp8"))
    written, expected = io.StringIO(), io.StringIO()
    write_csv(result, written)
    writer = csv.writer(expected, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows(result.iter_rows())
    assert written.getvalue() == expected.getvalue()
    assert 'my ""llama"", 8b",' in written.getvalue()  # quoted: the path's comma and quotes
