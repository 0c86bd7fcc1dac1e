"""Spec-level records for families the full oracle cannot build on CPU (DeepSeek-V4: tilelang) or whose configs
are newer than its run (MiMo-V2): vLLM 0.33.0's own spec classes, given the arguments the model's cache modules
pass them, planned by vLLM's own planning functions.

What comes from vLLM: every spec (``vllm/v1/kv_cache_interface.py``: pages, alignment, windows, reserves), the
groups (``get_global_kv_cache_groups``: unification, packing), one block's bytes, the per-request reserve, the
number of blocks, the refusal and its wording (``get_kv_cache_configs``), and the logged capacity
(``get_kv_cache_capacity``); DeepSeek-V4's KV-dtype resolution and its refusal (``_resolve_dsv4_kv_cache_dtype``).
What this file writes: the arguments of each module's spec, read from the model files (cited beside each), and a
stand-in config holding only the attributes those functions read. The model itself is not built.

Run (vLLM 0.33.0's Python sources and its pure-Python requirements on the path; no GPU, no compiled extension):

    PYTHONPATH=<vllm-0.33.0 sources>:<packages> python tools/vllm_oracle/frontier.py deepseek-v4 OUT.json
    PYTHONPATH=... python tools/vllm_oracle/frontier.py mimo-v2 OUT.json
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from vllm.v1.attention.backend import MultipleOf
from vllm.v1.core import kv_cache_planning as planning
from vllm.v1.core import kv_cache_utils as utils
from vllm.v1.kv_cache_interface import (
    FullAttentionSpec,
    MLAAttentionSpec,
    SlidingWindowMLASpec,
    SlidingWindowSpec,
    get_kv_quant_mode,
)
from vllm.v1.kv_cache_layout import KVCacheLayout

ROOT = Path(__file__).resolve().parents[2]
GIB = 2**30


# ------------------------------------------------------------------------------------------ DeepSeek-V4
def dsv4_ratios(cfg: dict[str, Any]) -> list[int]:
    """transformers DeepseekV4Config: compress_ratios cut to num_hidden_layers; vLLM attention.py:238-242."""
    return [max(1, r) for r in cfg["compress_ratios"][: cfg["num_hidden_layers"]]]


def dsv4_specs(cfg: dict[str, Any], stage: range, block: int) -> dict[str, Any]:
    """The specs of the default CUDA path (FlashMLA): fp8_ds_mla, 576-byte alignment."""
    head, idx = cfg["head_dim"], cfg["index_head_dim"]
    out: dict[str, Any] = {}
    for i in stage:
        r, p = dsv4_ratios(cfg)[i], f"model.layers.{i}.attn"
        if r > 1:  # models/deepseek_v4/attention.py:860-884 (+ customize_attention_spec: MultipleOf(256))
            out[p] = MLAAttentionSpec(block_size=block, num_kv_heads=1, max_tp_shards=1, head_size=head,
                                      dtype=torch.uint8, tokens_per_state=r, cache_dtype_str="fp8_ds_mla",
                                      alignment=576, model_version="deepseek_v4",
                                      kv_quant_mode=get_kv_quant_mode("fp8_ds_mla"), state_content_bytes=584,
                                      block_stride_alignment=MultipleOf(256))
        out[f"{p}.swa_cache"] = SlidingWindowMLASpec(  # v1/attention/backends/mla/sparse_swa.py:76-147
            block_size=64, num_kv_heads=1, max_tp_shards=1, head_size=head, dtype=torch.uint8,
            sliding_window=cfg["sliding_window"], cache_dtype_str="fp8_ds_mla", state_content_bytes=584,
            alignment=576, model_version="deepseek_v4", kv_quant_mode=get_kv_quant_mode("fp8_ds_mla"))
        if r > 1:  # models/deepseek_v4/compressor.py:139-193, :282-287
            coff = 2 if r == 4 else 1
            out[f"{p}.compressor.state_cache"] = SlidingWindowMLASpec(
                block_size=4 if r == 4 else 8, num_kv_heads=1, max_tp_shards=1, head_size=2 * coff * head,
                dtype=torch.float32, sliding_window=coff * r, alignment=576)
        if r == 4:  # attention.py:886-930 (indexer key: fp8 + fp32 scale per 128), :1037-1046 (its compressor)
            out[f"{p}.indexer.k_cache"] = MLAAttentionSpec(
                block_size=block, num_kv_heads=1, max_tp_shards=1, head_size=idx + idx // 128 * 4,
                dtype=torch.uint8, tokens_per_state=r, alignment=576, block_stride_alignment=MultipleOf(256))
            out[f"{p}.indexer.compressor.state_cache"] = SlidingWindowMLASpec(
                block_size=4, num_kv_heads=1, max_tp_shards=1, head_size=2 * 2 * idx, dtype=torch.float32,
                sliding_window=8, alignment=576)
    return out


def dsv4_dtype_error(kv: str) -> str | None:
    from vllm.models.deepseek_v4.attention import _resolve_dsv4_kv_cache_dtype

    try:
        _resolve_dsv4_kv_cache_dtype(True, kv, None)
    except ValueError as exc:
        return f"ValueError: {exc}"
    return None


# ------------------------------------------------------------------------------------------ MiMo-V2
def mimo_specs(cfg: dict[str, Any], stage: range, block: int, tp: int, kv: str) -> dict[str, Any]:
    """models/mimo_v2.py:408-445 (per-kind heads and dims), attention.py:611-684 (specs); the sliding block is
    _largest_kernel_block_within's pick for MultipleOf(16) backends (attention.py:101-130): the cache block."""
    dtype = torch.float8_e4m3fn if kv.startswith("fp8") else torch.bfloat16
    out: dict[str, Any] = {}
    for i in stage:
        sliding = cfg["hybrid_layer_pattern"][i] == 1
        pre = "swa_" if sliding else ""
        heads = cfg[f"{pre}num_key_value_heads"]
        k, v = cfg[f"{pre}head_dim"], cfg.get(f"{pre}v_head_dim") or cfg[f"{pre}head_dim"]
        common = dict(block_size=block, num_kv_heads=max(1, heads // tp), head_size=k, head_size_v=v, dtype=dtype,
                      kv_quant_mode=get_kv_quant_mode(kv))
        name = f"model.layers.{i}.self_attn.attn"
        out[name] = (SlidingWindowSpec(sliding_window=cfg["sliding_window_size"], **common) if sliding
                     else FullAttentionSpec(**common))
    return out


# ------------------------------------------------------------------------------------------ planning
def stand_in(max_model_len: int, mnbt: int, batches: int, tp: int, pp: int, dcp: int, layout: KVCacheLayout) -> Any:
    cache = SimpleNamespace(num_gpu_blocks_override=None, prefix_cache_retention_interval=None,
                            kv_cache_dtype_skip_layers=None, kv_cache_layout=layout.name,
                            get_resolved_kv_cache_layout=lambda: layout)
    return SimpleNamespace(
        cache_config=cache,
        model_config=SimpleNamespace(max_model_len=max_model_len, original_max_model_len=max_model_len,
                                     supports_kv_cache_grouping=False),
        scheduler_config=SimpleNamespace(disable_hybrid_kv_cache_manager=False, max_num_batched_tokens=mnbt,
                                         max_num_seqs=256),
        attention_config=SimpleNamespace(hisparse_config=None),
        parallel_config=SimpleNamespace(decode_context_parallel_size=dcp, tensor_parallel_size=tp,
                                        pipeline_parallel_size=pp),
        speculative_config=None, num_prefill_lookahead_tokens=0, max_in_flight_tokens=batches * mnbt,
        device_config=SimpleNamespace(device_type="cuda"))


def pp_stages(layers: int, pp: int) -> list[range]:
    from vllm.distributed.utils import get_pp_indices

    return [range(*get_pp_indices(layers, rank, pp)) for rank in range(pp)]


def group_rows(groups: list[Any], vc: Any) -> list[dict[str, Any]]:
    rows = []
    for g in groups:
        spec = g.kv_cache_spec
        first = spec.first_spec if hasattr(spec, "first_spec") else spec
        pages = spec.max_memory_usage_pages(vc) if hasattr(spec, "max_memory_usage_pages") else \
            -(-spec.max_memory_usage_bytes(vc) // spec.page_size_bytes)
        rows.append({"spec_type": type(spec).__name__, "layer_spec_type": type(first).__name__,
                     "num_layers": len(g.layer_names), "block_size": spec.block_size,
                     "group_page_size_bytes": spec.page_size_bytes, "blocks_per_request": pages})
    return rows


def plan(specs: list[dict[str, Any]], vc: Any, budget: int) -> dict[str, Any]:
    """Groups (global), and per worker (its projected groups, kv_cache_planning.py:1505-1508) one block id's bytes
    and one max-length request's reserve: the record keeps the worker whose block is the largest."""
    groups = planning.get_global_kv_cache_groups(vc, specs)
    builder = planning.DefaultKVCacheConfigBuilder()
    workers = [planning._project_kv_cache_groups_to_worker(groups, s) for s in specs]
    per_block = [planning._pool_bytes_per_block_from_builder(builder, vc, w) for w in workers]
    widest = workers[per_block.index(max(per_block))]
    out: dict[str, Any] = {"groups": group_rows(groups, vc), "page_size_bytes_total_per_block": max(per_block),
                           "page_size_bytes_per_block_per_worker": per_block,
                           "max_memory_usage_bytes_per_request": planning._max_memory_usage_bytes_from_groups(
                               builder, vc, widest)}
    try:
        config = planning.get_kv_cache_configs(vc, specs, [budget] * len(specs), groups)[0]
    except ValueError as exc:
        return {**out, "error_stage": "planning", "error": f"ValueError: {exc}"}
    tokens, concurrency = utils.get_kv_cache_capacity(vc, config)
    return {**out, "num_blocks": config.num_blocks, "kv_tokens": tokens, "max_concurrency": concurrency,
            "max_concurrency_log": f"{concurrency:.2f}x"}


def layer_rows(specs: dict[str, Any]) -> list[dict[str, Any]]:
    counts: dict[tuple[Any, ...], int] = {}
    for name, s in specs.items():
        key = (type(s).__name__, name.split(".attn")[-1] or "attn", s.block_size, s.num_kv_heads, s.head_size,
               s.head_size_v, str(s.dtype).removeprefix("torch."), getattr(s, "sliding_window", None),
               getattr(s, "tokens_per_state", 1), s.real_page_size_bytes, s.page_size_bytes)
        counts[key] = counts.get(key, 0) + 1
    names = ("type", "module", "block_size", "num_kv_heads", "head_size", "head_size_v", "dtype", "sliding_window",
             "tokens_per_state", "real_page_size_bytes", "page_size_bytes")
    return [{**dict(zip(names, k, strict=True)), "count": n} for k, n in counts.items()]


# ------------------------------------------------------------------------------------------ grids
def dsv4_records(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    records = []
    grid = itertools.product((1, 8), (1, 2), ("auto", "fp8", "bfloat16"), (None, 512), (8192, 131072, 1048576),
                             ((8192, None), (16384, 1)))
    for tp, pp, kv, block, length, (mnbt, batches) in grid:
        if (tp == 8 and (pp, block, kv) != (1, None, "auto")) or (pp == 2 and (block, mnbt) != (None, 8192)):
            continue
        batches = batches or pp + 1  # config/vllm.py:588-609: one batch per PP stage, +1 with async scheduling
        head = {"tp": tp, "pp": pp, "dcp": 1, "kv_cache_dtype": kv, "block_size": block, "max_model_len": length,
                "max_num_batched_tokens": mnbt, "in_flight_batches": batches}
        if (error := dsv4_dtype_error(kv)) is not None:
            records.append({**head, "error_stage": "model_build", "error": error})
            continue
        stages = pp_stages(cfg["num_hidden_layers"], pp)
        specs = [dsv4_specs(cfg, s, block or 256) for s in stages]
        vc = stand_in(length, mnbt, batches, tp, pp, 1, KVCacheLayout.BLHNC)  # the indexer backend's layouts
        for budget in (10 * GIB, 40 * GIB):
            records.append({**head, "available_bytes": budget, "final_block_size": block or 256,
                            **plan(specs, vc, budget)})
    records.append(dcp_record(cfg))
    return records


def dcp_record(cfg: dict[str, Any]) -> dict[str, Any]:
    """tp 2, dcp 2: the sliding specs keep dcp_sharded, and planning asserts."""
    vc = stand_in(131072, 8192, 2, 2, 1, 2, KVCacheLayout.BLHNC)
    head = {"tp": 2, "pp": 1, "dcp": 2, "kv_cache_dtype": "auto", "block_size": None, "max_model_len": 131072,
            "max_num_batched_tokens": 8192, "in_flight_batches": 2, "available_bytes": 40 * GIB}
    specs = [dsv4_specs(cfg, range(cfg["num_hidden_layers"]), 256)]
    try:
        plan(specs, vc, 40 * GIB)
    except AssertionError as exc:
        return {**head, "error_stage": "planning", "error": f"AssertionError: {exc}"}
    raise SystemExit("expected vLLM to refuse DCP")


def mimo_records(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    records = []
    for tp, pp, kv, length in itertools.product((1, 2, 4, 8), (1, 2), ("auto", "fp8"), (32768, 262144)):
        if pp == 2 and tp not in (1, 8):
            continue
        batches = pp + 1
        stages = pp_stages(cfg["num_hidden_layers"], pp)
        specs = [mimo_specs(cfg, s, 16, tp, kv) for s in stages]
        vc = stand_in(length, 8192, batches, tp, pp, 1, KVCacheLayout.LBNHC)  # no backend declares a layout
        for budget in (10 * GIB, 40 * GIB):
            records.append({"tp": tp, "pp": pp, "dcp": 1, "kv_cache_dtype": kv, "block_size": None,
                            "max_model_len": length, "max_num_batched_tokens": 8192, "in_flight_batches": batches,
                            "available_bytes": budget, "final_block_size": 16, **plan(specs, vc, budget)})
    return records


FAMILIES = {
    "deepseek-v4": ("deepseek-ai/DeepSeek-V4-Flash", dsv4_records,
                    lambda c: layer_rows(dsv4_specs(c, range(c["num_hidden_layers"]), 256))),
    "mimo-v2": ("XiaomiMiMo/MiMo-V2-Flash", mimo_records,
                lambda c: layer_rows(mimo_specs(c, range(c["num_hidden_layers"]), 16, 1, "auto"))),
}


def main(family: str, out: str) -> None:
    model, records, layers = FAMILIES[family]
    path = ROOT / "configs" / model / "config.json"
    cfg = json.loads(path.read_text())
    doc = {"model": model, "config": f"configs/{model}/config.json", "vllm": "0.33.0",
           "how": "tools/vllm_oracle/frontier.py: vLLM 0.33.0's spec classes and planning functions",
           "layers": layers(cfg), "records": records(cfg)}
    Path(out).write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
