"""`kvplan size` / `kvplan models` through the CLI: the JSON contract and the table."""

from __future__ import annotations

import json

from catalog import REFUSED, sized_ids

from kvplan.config import bundled_index

SIZE_KEYS = {
    "model", "source", "attention", "kv_dtype", "parallel", "layer_groups", "bytes_per_token", "bytes_per_token_per_gpu",
    "seq_len", "batch", "block_size", "bytes_per_sequence", "bytes_per_sequence_per_gpu", "bytes_per_sequence_paged",
    "bytes_per_sequence_paged_per_gpu", "total_bytes", "total_bytes_per_gpu", "total_bytes_all_gpus",
}
GROUP_KEYS = {"kind", "num_layers", "num_kv_heads", "num_kv_heads_per_gpu", "head_dim", "v_head_dim", "window",
              "bytes_per_token", "bytes_per_token_per_gpu"}


def test_size_json_contract(size_json) -> None:
    out = size_json("deepseek-ai/DeepSeek-V3", "--tp", "8", "--kv-dtype", "fp8", "--seq-len", "128k", "--batch", "16")
    assert out.keys() >= SIZE_KEYS
    assert out["parallel"] == {"tp": 8, "pp": 1, "dcp": 1}
    assert out["attention"] == "MLA" and out["kv_dtype"] == "fp8"
    assert all(g.keys() >= GROUP_KEYS for g in out["layer_groups"])
    for key in SIZE_KEYS - {"model", "source", "attention", "kv_dtype", "parallel", "layer_groups"}:
        assert isinstance(out[key], int), key
    # 61 × 576 × 1 B = 35,136 B/token, on every GPU; 128k = 131,072 tokens; 16 sequences
    assert out["bytes_per_token_per_gpu"] == 35_136
    assert out["seq_len"] == 131_072 and out["batch"] == 16
    assert out["total_bytes_per_gpu"] == 16 * 131_072 * 35_136
    assert out["total_bytes_all_gpus"] == 8 * out["total_bytes_per_gpu"]


def test_size_json_groups_for_a_hybrid(size_json) -> None:
    out = size_json("openai/gpt-oss-20b", "--seq-len", "4k")
    kinds = {g["kind"]: g for g in out["layer_groups"]}
    assert kinds["sliding"]["window"] == 128 and kinds["full"]["window"] is None
    assert kinds["sliding"]["num_layers"] == kinds["full"]["num_layers"] == 12
    assert kinds["sliding"]["head_dim"] == 64
    assert out["attention"] == "hybrid"


def test_size_table_shows_the_numbers(run_cli) -> None:
    code, out, _ = run_cli("size", "meta-llama/Llama-2-70b", "--tp", "4", "--seq-len", "4096")
    assert code == 0
    assert "81,920" in out and "327,680" in out and "1,342,177,280" in out


def test_explain_names_each_formula(run_cli) -> None:
    code, out, _ = run_cli("size", "Qwen/Qwen3-32B", "--explain", "--tp", "2", "--json")
    explain = json.loads(out)["explain"]
    assert code == 0
    assert any("8 × (128 + 128) × 2 B = 4,096 B" in line for line in explain)
    assert any("max(1, 8 // 2) = 4" in line for line in explain)


def test_seq_len_beyond_max_is_a_warning(run_cli) -> None:
    code, out, err = run_cli("size", "meta-llama/Llama-2-70b", "--seq-len", "8k", "--json")
    assert code == 0
    assert "exceeds the model's max length" in err
    assert json.loads(out)["seq_len"] == 8192


def test_local_folder_and_params_json(run_cli, tmp_path) -> None:
    # Meta's original params.json for Llama-2-70B: dim 8192, 64 heads, 8 KV heads, 80 layers
    (tmp_path / "params.json").write_text(json.dumps(
        {"dim": 8192, "n_heads": 64, "n_kv_heads": 8, "n_layers": 80, "norm_eps": 1e-5, "vocab_size": -1}))
    code, out, err = run_cli("size", str(tmp_path), "--json", "--seq-len", "4096")
    assert code == 0, err
    assert json.loads(out)["bytes_per_token"] == 327_680  # bf16 assumed: 2 × 80 × 8 × 128 × 2


def test_models_lists_every_bundled_config(run_cli) -> None:
    code, out, err = run_cli("models", "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == set(sized_ids())
    not_sized = [line for line in err.splitlines() if "not sized" in line]
    assert len(rows) + len(not_sized) == len(bundled_index())  # every bundled config: a row or a one-line reason
    for model_id, field in REFUSED.items():
        assert any(model_id in line and f"'{field}'" in line for line in not_sized)

    llama = rows["meta-llama/Llama-2-70b-hf"]
    assert (llama["attention"], llama["num_layers"], llama["num_kv_heads"], llama["head_dim"], llama["bytes_per_token"]) \
        == ("GQA", 80, 8, 128, 327_680)
    assert rows["deepseek-ai/DeepSeek-V3"]["head_dim"] == 576
    assert rows["tiiuae/falcon-7b"]["attention"] == "MQA"
