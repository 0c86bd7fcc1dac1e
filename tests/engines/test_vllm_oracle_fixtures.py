"""kvplan against vLLM 0.33's own planning code, for every bundled config vLLM builds.

tests/data/vllm-oracle/<org>__<name>.json were written by tools/vllm_oracle (vLLM 0.33.0 run on CPU as
an H100; see its README) from the bundled configs, then compacted by ``python -m vllm_oracle.fixtures``.
Each file holds the model's per-layer specs (tp 1, KV dtype auto) and its small-grid records (tp, pp,
KV dtype, block size, max_model_len, two KV budgets). Nothing in them is derived from kvplan.
tests/data/vllm-oracle-defaults/ holds the same for families no bundled config has (Falcon-H1, Jamba,
Gemma-3n, ...), from configs of transformers' default hyper-parameters, embedded in each file.

Compared exactly: every layer's cache (kind, KV heads, head sizes, window, bytes per token; a state's
bytes, dtypes and checkpoint blocks), and for every record num_blocks, the logged token count and
concurrency (to the printed digit), the bytes of one block id, the final block size, the bytes one
request reserves, and each KV-cache group's page and blocks per request; every refusal vLLM makes is a
refusal in kvplan. Build failures of the CPU environment (a CUDA-only import, a meta tensor read), which
vLLM on a GPU does not have, are not records of vLLM's behaviour: ENVIRONMENT names them, and
test_environment_failures_are_only_those keeps that list honest.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from catalog import sized_ids

import kvplan
from kvplan.config import bundled_index, load_model, normalize
from kvplan.engines import Request
from kvplan.errors import KvplanError
from kvplan.formulas.per_token import StateDtypes, encoder_bytes_per_token, part_bytes_per_token, part_state_bytes
from kvplan.planning.capacity import plan_request
from kvplan.specs import CrossAttn, IndexerCache, LinearState, MLAAttn, Part, SlidingAttn, parts

DATA = Path(__file__).resolve().parents[1] / "data"
MODELS: dict[str, dict[str, Any]] = {
    (d := json.loads(p.read_text()))["model"]: d for p in sorted((DATA / "vllm-oracle").glob("*.json"))
}
DEFAULTS: dict[str, dict[str, Any]] = {
    (d := json.loads(p.read_text()))["model"]: d for p in sorted((DATA / "vllm-oracle-defaults").glob("*.json"))
}
# vLLM behaviour kvplan does not model: (model, vLLM frame) of the records it leaves out, and why.
NOT_MODELLED = {
    # an assert when a PP stage of a MoE Nemotron-H holds no MoE layer (4-layer default config at pp 2)
    ("transformers-defaults/nemotron-h", "vllm/model_executor/models/nemotron_h.py:869"),
}
# What the CPU oracle cannot do that vLLM on a GPU does: build failures with these messages say nothing
# about vLLM's planning (README: "Configs vLLM 0.33 cannot build on CPU").
ENVIRONMENT = (
    "Torch not compiled with CUDA enabled",  # the Transformers backend (Olmo-3, SmolLM3, starcoder2, phi-1)
    "on device meta", "meta tensors",  # a layer that reads a weight at build time (Phi-3.5 LongRoPE)
    "No module named",  # CUDA-only Python packages (cutlass for Kimi-Linear / Kimi-K3, cuda for MiniMax-M2.7 tp > 1)
    "is required for",  # tilelang (DeepSeek-V4)
    "failed to be inspected",  # multimodal processors that need CUDA libraries (llava, Voxtral, Mistral-3)
    "Couldn't instantiate the backend tokenizer",  # mllama through the Transformers backend
    "DeepGEMM",
    "contains custom code",  # the oracle never runs remote code (NAS: vLLM needs --trust-remote-code; MiniMax-M1)
    "Repo id must be in the form",  # a 16-GPU layout the oracle's one-host stand-in resolves as a hub id
)
# The bundled configs whose builds fail that way: all of their records, or those of some layouts only.
CANNOT_BUILD_ON_CPU = frozenset({
    "allenai/Olmo-3.1-32B-Instruct", "HuggingFaceTB/SmolLM3-3B", "bigcode/starcoder2-7b", "microsoft/phi-1",
    "microsoft/Phi-3.5-mini-instruct", "moonshotai/Kimi-Linear-48B-A3B-Instruct", "moonshotai/Kimi-K3",
    "deepseek-ai/DeepSeek-V4-Flash", "llava-hf/llava-1.5-7b-hf", "mistralai/Voxtral-Mini-3B-2507",
    "mistralai/Devstral-Small-2-24B-Instruct", "meta-llama/Llama-3.2-90B-Vision-Instruct",
    "nvidia/Llama-3_3-Nemotron-Super-49B-v1", "MiniMaxAI/MiniMax-M1-80k",
})
CANNOT_BUILD_ON_CPU_AT_SOME_LAYOUTS = frozenset({
    "MiniMaxAI/MiniMax-M2.7",  # its tp > 1 RMSNorm imports `cuda`
    "Qwen/Qwen3-1.7B",  # tp 8 × pp 2
})
SPEC_KINDS = {"FullAttentionSpec": "full", "SlidingWindowSpec": "sliding", "ChunkedLocalAttentionSpec": "chunked",
              "MLAAttentionSpec": "mla", "MambaSpec": "mamba", "CrossAttentionSpec": "cross"}
MAMBA_TYPES = {"gdn": "GDN_ATTN", "olmo_gdn": "GDN_ATTN", "mamba1": "MAMBA1", "mamba2": "MAMBA2",
               "short_conv": "SHORT_CONV", "kda": "KDA", "lightning": "LINEAR"}
TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def _environment(record: dict[str, Any]) -> bool:
    message = f"{record.get('error', '')} {record.get('error_message', '')}"
    return record.get("error_stage") in ("engine_config", "model_build") and any(t in message for t in ENVIRONMENT)


def _sized(model_id: str) -> bool:
    return model_id in sized_ids() or model_id in DEFAULTS


def _model(model_id: str) -> kvplan.ModelConfig:
    if model_id in DEFAULTS:
        return normalize(DEFAULTS[model_id]["config"], model_id=model_id, source=f"{model_id} (transformers defaults)")
    return load_model(model_id)


def _records() -> list[Any]:
    out = []
    for model_id, fixture in {**MODELS, **DEFAULTS}.items():
        for i, r in enumerate(fixture["records"]):
            if _environment(r) or not _sized(model_id) or (model_id, r.get("error_where")) in NOT_MODELLED:
                continue
            name = (f"{model_id.split('/')[-1]}-{i}-tp{r['tp']}pp{r['pp']}-{r['kv_cache_dtype']}-"
                    f"bs{r.get('block_size') or 'auto'}-len{r.get('max_model_len')}")
            out.append(pytest.param(model_id, r, id=name))
    return out


def _plan(model_id: str, r: dict[str, Any]) -> Any:
    m = _model(model_id)
    request = Request.of(m, tp=r["tp"], pp=r["pp"], kv_dtype=r["kv_cache_dtype"],
                      max_model_len=r.get("max_model_len") or m.max_model_len or 2048,
                      block_size=r.get("block_size"))
    return plan_request(request, (r.get("available_bytes") or 40 * 2**30,), "vllm")


@pytest.mark.parametrize(("model_id", "record"), _records())
def test_vllm_record(model_id: str, record: dict[str, Any]) -> None:
    r = record
    if r.get("error_stage") == "planning":  # one max-length request does not fit: a refusal is an answer
        refusal = _plan(model_id, r).refusal
        expected = r["error"].removeprefix("ValueError: ")
        estimate = int(expected.split("maximum model length is ")[1].split(".")[0].split(" ")[0])
        assert refusal is not None and refusal.estimated_max_model_len == estimate
        assert refusal.message[:len(expected)] == expected  # the record keeps the message's first 400 characters
        return
    if r.get("error"):  # vLLM refuses to build: kvplan refuses too
        with pytest.raises(KvplanError):
            _plan(model_id, r)
        return
    p = _plan(model_id, r)
    assert p.refusal is None
    assert (p.num_blocks, p.kv_tokens, f"{p.max_concurrency:.2f}x") == \
        (r["num_blocks"], r["kv_tokens"], r["max_concurrency_log"])
    assert p.max_concurrency == pytest.approx(r["max_concurrency"], rel=1e-12)
    assert (p.page_bytes, p.block_size) == (r["page_size_bytes_total_per_block"], r["final_block_size"])
    assert p.reserve_bytes_per_request == r["max_memory_usage_bytes_per_request"]
    _check_groups(p, r["groups"])


def _check_groups(p: Any, groups: list[dict[str, Any]]) -> None:
    """vLLM's KV-cache groups against kvplan's rows: as many groups per kind, each with the row's page
    and blocks per request (a UniformTypeKVCacheSpecs group: one block id's bytes, all its pages)."""
    rows = {g.kind: g for g in p.groups}
    kinds = Counter()
    for g in groups:
        if g["spec_type"] == "UniformTypeKVCacheSpecs":
            assert len(groups) == 1 and g["group_page_size_bytes"] == p.page_bytes
            assert [row.blocks_per_request for row in rows.values()] == [g["blocks_per_request"]]
            return
        kind = SPEC_KINDS[g["layer_spec_type"]]
        kinds[kind] += 1
        assert (rows[kind].page_bytes_per_layer, rows[kind].blocks_per_request) == \
            (g["page_size_bytes"], g["blocks_per_request"])
    assert kinds == Counter({kind: row.engine_groups for kind, row in rows.items()})


# ------------------------------------------------------------------------------------------ per layer


def _vllm_layer(layer: dict[str, Any]) -> tuple[Any, ...]:
    kind = SPEC_KINDS[layer["type"]]
    if kind == "mamba":
        return ("mamba", layer["mamba_type"], layer["real_page_size_bytes"], tuple(layer["dtypes"]))
    if kind == "mla" and layer.get("cache_role") == "INDEXER":
        kind = "indexer"
    window = layer.get("sliding_window") or layer.get("attention_chunk_size")
    heads = (layer["num_kv_heads"], layer["head_size"], layer["head_size_v"]) if kind not in ("mla", "indexer") else ()
    return (kind, *heads, window if kind in ("sliding", "chunked") else None, int(layer["page_size_bytes_per_token"]))


def _kvplan_layer(part: Part, layout: Any) -> tuple[Any, ...]:
    dtype, states = layout.kv_dtype, StateDtypes(layout.state_dtype, layout.ssm_state_dtype)
    if isinstance(part, LinearState):
        dtypes = (states.conv,) * bool(part.conv_elements) + (states.recurrent(part),) * bool(part.ssm_elements)
        return ("mamba", MAMBA_TYPES[part.mixer], part_state_bytes(part, states),
                tuple(TORCH_DTYPES[d.name] for d in dtypes))
    if isinstance(part, (MLAAttn, IndexerCache)):
        return (part.kind, None, part_bytes_per_token(part, dtype))
    per_token = encoder_bytes_per_token(part, dtype) if isinstance(part, CrossAttn) else part_bytes_per_token(part, dtype)
    window = part.window if isinstance(part, SlidingAttn) else getattr(part, "chunk_size", None)
    return (part.kind, part.num_kv_heads, part.head_dim, part.v_head_dim, window, per_token)


LAYER_FILES = [pytest.param(m, id=m.split("/")[-1]) for m, f in {**MODELS, **DEFAULTS}.items()
               if f["layers"] and _sized(m)]


@pytest.mark.parametrize("model_id", LAYER_FILES)
def test_vllm_layers(model_id: str) -> None:
    """Every cache module of the model at tp 1, as vLLM's model files build them."""
    layout = kvplan.build_layout(_model(model_id))
    layers = {**MODELS, **DEFAULTS}[model_id]["layers"]
    vllm = Counter(_vllm_layer(layer) for layer in layers for _ in range(layer["count"]))
    ours = Counter(_kvplan_layer(p, layout) for spec in layout.specs for p in parts(spec))
    assert ours == vllm


# configs bundled after the oracle's run for the weights of collected start-up logs (issue 29), whose caches are
# those of a config the oracle ran: the quantized checkpoint -> its twin (test_quantized_twins_have_the_twins_caches)
TWINS = {"zai-org/GLM-5-FP8": "zai-org/GLM-5", "Qwen/Qwen3-30B-A3B-FP8": "Qwen/Qwen3-30B-A3B",
         "nvidia/Qwen3.6-27B-NVFP4": "Qwen/Qwen3.5-27B"}


@pytest.mark.parametrize(("model_id", "twin"), sorted(TWINS.items()))
def test_quantized_twins_have_the_twins_caches(model_id: str, twin: str) -> None:
    """The oracle's records of the twin hold for the quantized checkpoint's caches: the same layer specs (only the
    weights format differs; Qwen3.6-27B-NVFP4's checkpoint also asks for an fp8 KV cache, which its twin's
    records at kv_cache_dtype fp8 cover)."""
    assert twin in MODELS
    assert kvplan.build_layout(_model(model_id)).specs == kvplan.build_layout(_model(twin)).specs


def test_environment_failures_are_only_those() -> None:
    """The records set aside as CPU-environment failures are build failures of the models the README
    lists as not buildable on CPU, and no others; a model that never builds has no other record."""
    failed = {m for m, f in MODELS.items() if any(_environment(r) for r in f["records"])}
    assert failed == CANNOT_BUILD_ON_CPU | CANNOT_BUILD_ON_CPU_AT_SOME_LAYOUTS
    for model_id in CANNOT_BUILD_ON_CPU:
        assert not any("num_blocks" in r for r in MODELS[model_id]["records"])


def test_fixtures_cover_the_catalog() -> None:
    """One fixture file per bundled config (configs bundled after the oracle's run have spec-level records in
    vllm-oracle-frontier/, test_vllm_frontier.py, or are a quantized twin of one it ran), and the records are the
    oracle's, not a handful."""
    frontier = {json.loads(p.read_text())["model"] for p in (DATA / "vllm-oracle-frontier").glob("*.json")}
    assert set(MODELS) == set(bundled_index()) - (frontier - set(MODELS)) - set(TWINS)
    assert sum(len(f["records"]) for f in MODELS.values()) > 3000
    seen = {(m, r.get("error_where")) for m, f in {**MODELS, **DEFAULTS}.items() for r in f["records"]}
    assert seen >= NOT_MODELLED  # every record left out is there to be left out
