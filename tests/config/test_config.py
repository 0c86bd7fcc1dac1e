"""Config loading: field aliases, text_config nesting, Meta params.json, model-id resolution, the
local Hugging Face cache, and the errors a bad config or name gets.

Each config here is written by hand into tmp_path; expected values are derived in the comments from
the rules in ../shared/reference/engines.md §1.2 and §5 (vLLM's get_total_num_kv_heads order,
Falcon/BigCode multi_query, ChatGLM multi_query_group_num/kv_channels, head_dim fallback).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import kvplan
from kvplan.config import bundled_index, resolve
from kvplan.errors import ConfigError


def write(folder: Path, fields: Any, name: str = "config.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(fields if isinstance(fields, str) else json.dumps(fields))
    return path


def load(tmp_path: Path, fields: dict[str, Any]) -> kvplan.ModelConfig:
    return kvplan.load_model(str(write(tmp_path, fields)))


def shape(m: kvplan.ModelConfig) -> tuple[int, int, int, int]:
    return m.num_layers, m.num_attention_heads, m.num_kv_heads, m.head_dim


# --------------------------------------------------------------------------- field aliases

LLAMA = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512}
RW = {"n_layer": 4, "n_head": 8, "hidden_size": 512}  # Falcon RefinedWeb names; head_dim 512 / 8 = 64
GLM = {"model_type": "chatglm", "num_layers": 4, "num_attention_heads": 8, "hidden_size": 512, "kv_channels": 32}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # (layers, heads, kv heads, head_dim); head_dim = 512 // 8 = 64 unless a row says otherwise
        pytest.param({**LLAMA, "num_key_value_heads": 2}, (4, 8, 2, 64), id="hf-gqa"),
        pytest.param(LLAMA, (4, 8, 8, 64), id="kv-heads-absent-is-mha"),
        pytest.param({**LLAMA, "num_key_value_heads": None}, (4, 8, 8, 64), id="kv-heads-null-is-mha"),
        pytest.param({**LLAMA, "head_dim": None}, (4, 8, 8, 64), id="head-dim-null"),
        pytest.param({**LLAMA, "head_dim": 0}, (4, 8, 8, 64), id="head-dim-zero"),
        pytest.param({**LLAMA, "head_dim": 128}, (4, 8, 8, 128), id="head-dim-explicit-not-hidden-over-heads"),
        # Falcon-40B RefinedWeb: n_head_kv is the KV head count
        pytest.param({**RW, "model_type": "RefinedWeb", "n_head_kv": 2}, (4, 8, 2, 64), id="falcon-n-head-kv"),
        # Falcon-7B RefinedWebModel: multi_query -> 1 KV head
        pytest.param({**RW, "model_type": "RefinedWebModel", "multi_query": True}, (4, 8, 1, 64),
                     id="falcon-rw-multi-query"),
        # the RWConfig default (multi_query=True) applies when the flag is absent
        pytest.param({**RW, "model_type": "RefinedWebModel"}, (4, 8, 1, 64), id="falcon-rw-multi-query-default"),
        # in-library FalconConfig writes num_kv_heads = num_attention_heads; multi_query still wins
        pytest.param({**RW, "model_type": "falcon", "multi_query": True, "num_kv_heads": 8}, (4, 8, 1, 64),
                     id="falcon-multi-query-beats-defaulted-num-kv-heads"),
        pytest.param({**RW, "model_type": "falcon", "num_kv_heads": 8}, (4, 8, 1, 64),
                     id="falcon-multi-query-class-default"),
        # new_decoder_architecture: multi_query is ignored and num_kv_heads counts
        pytest.param({**RW, "model_type": "falcon", "multi_query": True, "new_decoder_architecture": True,
                      "num_kv_heads": 2}, (4, 8, 2, 64), id="falcon-new-decoder-architecture"),
        pytest.param({**RW, "model_type": "falcon", "multi_query": False, "num_kv_heads": 8}, (4, 8, 8, 64),
                     id="falcon-not-multi-query"),
        pytest.param({"model_type": "gpt_bigcode", "n_layer": 4, "n_head": 8, "n_embd": 512, "multi_query": True},
                     (4, 8, 1, 64), id="bigcode-gpt2-names-mqa"),
        pytest.param({"model_type": "gpt2", "n_layer": 4, "n_head": 8, "n_embd": 512}, (4, 8, 8, 64),
                     id="gpt2-names"),
        # ChatGLM: multi_query_group_num groups when multi_query_attention; kv_channels 32 is the
        # head_dim (512 // 8 = 64 would be wrong); num_layers is the layer count
        pytest.param({**GLM, "multi_query_attention": True, "multi_query_group_num": 2}, (4, 8, 2, 32),
                     id="chatglm-groups-kv-channels"),
        pytest.param({**GLM, "multi_query_attention": False, "multi_query_group_num": 2}, (4, 8, 8, 32),
                     id="chatglm-groups-ignored-without-mqa"),
        pytest.param({**GLM, "multi_query_group_num": 2}, (4, 8, 8, 32), id="chatglm-mqa-default-off"),
        # MPT / DBRX: d_model, n_heads, n_layers and the nested attn_config.kv_n_heads
        pytest.param({"model_type": "mpt", "n_layers": 4, "n_heads": 8, "d_model": 512,
                      "attn_config": {"kv_n_heads": 2}}, (4, 8, 2, 64), id="mpt-attn-config-kv-n-heads"),
        pytest.param({"model_type": "mpt", "n_layers": 4, "n_heads": 8, "d_model": 512, "attn_config": {}},
                     (4, 8, 8, 64), id="mpt-attn-config-without-kv-heads"),
        # vLLM's order: n_head_kv before num_key_value_heads when both are present
        pytest.param({**LLAMA, "n_head_kv": 2, "num_key_value_heads": 4}, (4, 8, 2, 64), id="alias-order"),
    ],
)
def test_aliases(tmp_path: Path, fields: dict[str, Any], expected: tuple[int, int, int, int]) -> None:
    assert shape(load(tmp_path, fields)) == expected


def test_alias_origin_changes_the_bytes(tmp_path: Path) -> None:
    # 2 (K,V) × 4 layers × 2 groups × 32 kv_channels × 2 B (fp16) = 1,024 B/token; reading
    # hidden/heads (64) and all 8 heads would give 8× that
    fields = {**GLM, "multi_query_attention": True, "multi_query_group_num": 2, "torch_dtype": "float16"}
    m = load(tmp_path, fields)
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 2 * 4 * 2 * 32 * 2 == 1_024


# --------------------------------------------------------------------------- text_config nesting


@pytest.mark.parametrize("key", ["text_config", "llm_config", "language_config"])
def test_nested_language_model_fields(tmp_path: Path, key: str) -> None:
    inner = {"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 256}
    # the wrapper's own (vision-tower-like) num_hidden_layers loses to the nested one; its
    # torch_dtype fills the gap the nested config leaves
    m = load(tmp_path, {"model_type": "wrapper", "num_hidden_layers": 27, "torch_dtype": "float16", key: inner})
    assert shape(m) == (3, 4, 2, 64)
    assert m.dtype == "fp16"
    assert m.raw["num_hidden_layers"] == 3  # raw is the language model's config


def test_nested_sliding_pattern_gets_family_default(tmp_path: Path) -> None:
    # Gemma-3 nests gemma3_text fields and omits sliding_window_pattern: default 6 -> layers 5, 11
    # of 12 are full ((i + 1) % 6 == 0), the other 10 sliding
    inner = {"model_type": "gemma3_text", "num_hidden_layers": 12, "num_attention_heads": 8,
             "num_key_value_heads": 4, "head_dim": 32, "hidden_size": 128, "sliding_window": 64}
    m = load(tmp_path, {"model_type": "gemma3", "text_config": inner})
    assert [i for i, k in enumerate(m.layer_kinds) if k == "full"] == [5, 11]
    assert m.sliding_window == 64


# --------------------------------------------------------------------------- Meta params.json

LLAMA2_70B_PARAMS = {"dim": 8192, "multiple_of": 4096, "ffn_dim_multiplier": 1.3, "n_heads": 64,
                     "n_kv_heads": 8, "n_layers": 80, "norm_eps": 1e-05, "vocab_size": -1}


def test_meta_params_json_folder(tmp_path: Path) -> None:
    write(tmp_path / "llama-2-70b", LLAMA2_70B_PARAMS, "params.json")
    m = kvplan.load_model(str(tmp_path / "llama-2-70b"))
    assert shape(m) == (80, 64, 8, 128)  # head_dim = dim 8192 // 64 heads
    assert m.source.endswith("params.json")
    # 2 × 80 × 8 × 128 × 2 B = 327,680 B/token, as the HF config of the same model
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 327_680
    assert kvplan.kv_cache("meta-llama/Llama-2-70b-hf", max_model_len=1).bytes_per_token == 327_680


def test_meta_params_json_file_without_kv_heads_is_mha(tmp_path: Path) -> None:
    # Llama-2-7B's params.json has no n_kv_heads: 32 heads, 32 KV heads, 4096 // 32 = 128
    path = write(tmp_path, {"dim": 4096, "multiple_of": 256, "n_heads": 32, "n_layers": 32, "norm_eps": 1e-06,
                            "vocab_size": -1}, "params.json")
    assert shape(kvplan.load_model(str(path))) == (32, 32, 32, 128)


def test_config_json_preferred_over_params_json(tmp_path: Path) -> None:
    write(tmp_path, LLAMA2_70B_PARAMS, "params.json")
    write(tmp_path, {**LLAMA, "num_key_value_heads": 2})
    assert kvplan.load_model(str(tmp_path)).num_layers == 4


# --------------------------------------------------------------------------- bundled ids


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-70b-hf", id="exact"),
        pytest.param("META-LLAMA/LLAMA-2-70B-HF", "meta-llama/Llama-2-70b-hf", id="case-insensitive"),
        pytest.param("meta-llama/Llama-2-70b", "meta-llama/Llama-2-70b-hf", id="without-hf-suffix"),
        pytest.param("llama-2-70b", "meta-llama/Llama-2-70b-hf", id="org-less"),
        pytest.param(" Llama-2-70B ", "meta-llama/Llama-2-70b-hf", id="org-less-padded"),
        pytest.param("meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B", id="meta-prefix"),
        pytest.param("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", id="own-instruct-config"),
        pytest.param("meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", id="alias-llama-3.3"),
        pytest.param("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3", id="date-suffix"),
        pytest.param("mistralai/Mistral-Nemo-Instruct-2407", "mistralai/Mistral-Nemo-Instruct-2407", id="own-dated"),
        pytest.param("llama-3.2-1b", "meta-llama/Llama-3.2-1B", id="exact-beats-variant"),
        pytest.param("llama-3.2-1b-instruct", "meta-llama/Llama-3.2-1B-Instruct", id="bundled-variant"),
        pytest.param("moonshotai/Kimi-K2", "moonshotai/Kimi-K2-Instruct", id="alias"),
        pytest.param("kimi-k2", "moonshotai/Kimi-K2-Instruct", id="alias-org-less"),
        pytest.param("Qwen/Qwen3-Next-80B-A3B-Instruct", "Qwen/Qwen3-Next-80B-A3B-Thinking", id="alias-sibling"),
        pytest.param("google/gemma-3-27b", "google/gemma-3-27b-it", id="alias-gemma"),
        pytest.param("deepseek-v3", "deepseek-ai/DeepSeek-V3", id="org-less-mla"),
    ],
)
def test_bundled_id_resolution(name: str, expected: str) -> None:
    path, model_id = resolve(name)
    assert (model_id, path) == (expected, bundled_index()[expected])
    assert kvplan.load_model(name).model_id == expected


@pytest.mark.parametrize(("name", "twin"), [
    pytest.param("meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", id="llama-3.3"),
    pytest.param("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3", id="v3-0324"),
    pytest.param("Qwen/Qwen3-Next-80B-A3B-Instruct", "Qwen/Qwen3-Next-80B-A3B-Thinking", id="qwen3-next-instruct"),
    pytest.param("meta-llama/Llama-3.1-8B-Instruct", None, id="own-config"),
    pytest.param("meta-llama/Llama-2-70b", None, id="hf-suffix-is-the-same-model"),
])
def test_architecture_twins_are_named(name: str, twin: str | None) -> None:
    """A variant without its own bundled config is sized with a sibling of the same architecture, and says so."""
    notes = [n for n in kvplan.load_model(name).notes if "architecture twin" in n]
    assert notes == ([f"warning: {name} has no bundled config; sized with {twin}, an architecture twin (the same "
                      "KV-cache geometry)"] if twin else [])


def test_wrong_org_does_not_resolve() -> None:
    with pytest.raises(ConfigError, match="unknown model 'google/Llama-2-70b'"):
        resolve("google/Llama-2-70b")


@pytest.mark.parametrize(
    ("name", "closest"),
    [
        pytest.param("meta-llama/Llama-2-71b", "meta-llama/Llama-2-70b-hf", id="near-miss"),
        pytest.param("qwen3-33b", "Qwen/Qwen3-32B", id="org-less-near-miss"),
        pytest.param("gpt-oss-21b", "openai/gpt-oss-20b", id="gpt-oss"),
    ],
)
def test_unknown_model_names_close_ids(name: str, closest: str) -> None:
    with pytest.raises(ConfigError) as err:
        kvplan.load_model(name)
    message = str(err.value)
    assert f"unknown model {name!r}" in message and "closest bundled ids:" in message
    assert closest in message and "\n" not in message


def test_unknown_model_far_from_everything() -> None:
    with pytest.raises(ConfigError, match=r"unknown model 'zzzz-qqqq'; run `kvplan models`"):
        kvplan.load_model("zzzz-qqqq")


# --------------------------------------------------------------------------- local HF cache

TINY = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "hidden_size": 64}


def snapshot(cache: Path, repo: str, revision: str, layers: int, *, age_s: float = 0) -> Path:
    folder = cache / repo / "snapshots" / revision
    path = write(folder, {**TINY, "num_hidden_layers": layers})
    stamp = time.time() - age_s
    os.utime(folder, (stamp, stamp))
    return path


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def test_hf_cache_refs_main_wins(hf_cache: Path) -> None:
    main = snapshot(hf_cache, "models--acme--tiny-lm", "a1b2c3", layers=2, age_s=100)
    snapshot(hf_cache, "models--acme--tiny-lm", "ffffff", layers=7)  # newer, but not main
    (hf_cache / "models--acme--tiny-lm" / "refs").mkdir()
    (hf_cache / "models--acme--tiny-lm" / "refs" / "main").write_text("a1b2c3\n")
    assert resolve("acme/tiny-lm") == (main, "acme/tiny-lm")
    assert kvplan.load_model("acme/tiny-lm").num_layers == 2


def test_hf_cache_without_refs_takes_newest_snapshot(hf_cache: Path) -> None:
    snapshot(hf_cache, "models--acme--tiny-lm", "old", layers=2, age_s=100)
    snapshot(hf_cache, "models--acme--tiny-lm", "new", layers=3)
    assert kvplan.load_model("acme/tiny-lm").num_layers == 3


def test_hf_cache_is_case_insensitive(hf_cache: Path) -> None:
    snapshot(hf_cache, "models--Acme--Tiny-LM", "r1", layers=5)
    assert kvplan.load_model("acme/tiny-lm").num_layers == 5


def test_hf_home_hub_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    snapshot(tmp_path / "hf" / "hub", "models--acme--tiny-lm", "r1", layers=6)
    assert kvplan.load_model("acme/tiny-lm").num_layers == 6


def test_bundled_id_comes_before_the_cache(hf_cache: Path) -> None:
    snapshot(hf_cache, "models--meta-llama--Llama-2-70b-hf", "r1", layers=3)
    assert kvplan.load_model("meta-llama/Llama-2-70b-hf").num_layers == 80


def test_cache_miss_is_unknown(hf_cache: Path) -> None:
    snapshot(hf_cache, "models--acme--tiny-lm", "r1", layers=2)
    for name in ("acme/other-lm", "tiny-lm"):  # another repo; an org-less name is no cache key
        with pytest.raises(ConfigError, match="unknown model"):
            kvplan.load_model(name)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        pytest.param("{not json", r"is not valid JSON", id="invalid-json"),
        pytest.param("[1, 2]", r"expected a JSON object, got list", id="not-an-object"),
        pytest.param({"num_attention_heads": 8, "hidden_size": 512},
                     r"config field 'num_hidden_layers': field required", id="missing-layers"),
        pytest.param({"num_hidden_layers": 4, "hidden_size": 512},
                     r"config field 'num_attention_heads': field required", id="missing-heads"),
        pytest.param({**LLAMA, "num_hidden_layers": "32"}, r"config field 'num_hidden_layers': .*integer",
                     id="string-layers"),
        pytest.param({**RW, "n_layer": 4.0}, r"config field 'n_layer': .*integer", id="error-names-the-alias-used"),
        pytest.param({**LLAMA, "num_hidden_layers": 0}, r"config field 'num_hidden_layers': .*greater than 0",
                     id="zero-layers"),
        pytest.param({**LLAMA, "num_key_value_heads": -2}, r"config field 'num_key_value_heads'", id="negative-kv"),
        pytest.param({**LLAMA, "num_key_value_heads": 0}, r"config field 'num_key_value_heads' is 0", id="zero-kv"),
        pytest.param({**LLAMA, "num_key_value_heads": 3}, r"3 KV heads do not divide 8 attention heads",
                     id="kv-heads-not-dividing"),
        pytest.param({**LLAMA, "num_key_value_heads": 16}, r"16 KV heads do not divide 8 attention heads",
                     id="more-kv-heads-than-heads"),
        pytest.param({"num_hidden_layers": 4, "num_attention_heads": 8}, r"no head_dim, and no hidden_size",
                     id="no-head-dim-source"),
        pytest.param({"num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 4},
                     r"hidden_size 4 is smaller than num_attention_heads 8", id="hidden-smaller-than-heads"),
        pytest.param({**LLAMA, "layer_types": ["full_attention"] * 3}, r"layer_types has 3 entries for 4 layers",
                     id="layer-types-length"),
        pytest.param({**LLAMA, "layer_types": ["full_attention"] * 3 + ["warp_attention"]},
                     r"unknown layer type\(s\) 'warp_attention'", id="layer-types-unknown"),
        pytest.param({**LLAMA, "kv_lora_rank": 512}, r"kv_lora_rank is set \(MLA\) but qk_rope_head_dim is missing",
                     id="mla-without-rope"),
    ],
)
def test_config_errors_name_field_and_file(tmp_path: Path, content: Any, pattern: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(ConfigError, match=pattern) as err:
        kvplan.load_model(str(path))
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope" / "config.json")
    with pytest.raises(ConfigError, match="no such file or folder") as err:
        kvplan.load_model(missing)
    assert missing in str(err.value)


def test_folder_without_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"holds no config\.json or params\.json") as err:
        kvplan.load_model(str(tmp_path))
    assert str(tmp_path) in str(err.value)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("{not json", id="invalid-json"),
        pytest.param({"num_attention_heads": 8, "hidden_size": 512}, id="missing-field"),
        pytest.param({**LLAMA, "num_key_value_heads": 3}, id="kv-heads-not-dividing"),
    ],
)
def test_cli_reports_config_errors_in_one_line(tmp_path: Path, run_cli: Any, content: Any) -> None:
    path = write(tmp_path, content)
    code, out, err = run_cli("size", str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "Traceback" not in err
