"""Hugging Face transformers profile (engines.md §4): contiguous DynamicCache, no paging.

Each layer holds K ``[B, Hkv, T, dk]`` and V ``[B, Hkv, T, dv]``; sliding layers keep the last
``W − 1`` tokens; MLA models are cached decompressed (per-head K of qk_nope + qk_rope and V of
v_head_dim). No memory fraction: the budget is what is left after weights and overhead. TP, if
asked, is a tp_plan sharding heads like the engines. transformers logs no capacity.
"""

from __future__ import annotations

from kvplan.engines.base import BudgetSteps, EnginePlan, GroupRow, Request, Settings, kv_stages
from kvplan.errors import CapacityError, InputError
from kvplan.formulas.dtypes import resolve_kv_dtype
from kvplan.formulas.per_token import kv_bytes_per_token, state_bytes_per_sequence
from kvplan.formulas.sharding import check_parallel, pp_stages, shard_spec
from kvplan.specs import ChunkedAttn, LayerSpec, Overrides, SlidingAttn, layer_specs

VERSION = "transformers 5.x"  # cache_utils DynamicCache (engines.md H-CU)


def _held_tokens(spec: LayerSpec, tokens: int) -> int:
    """DynamicSlidingWindowLayer keeps W − 1 tokens; chunked layers are cached like sliding ones."""
    if isinstance(spec, SlidingAttn):
        return min(tokens, spec.window - 1)
    if isinstance(spec, ChunkedAttn):
        return min(tokens, spec.chunk_size - 1)
    return tokens


class HfEngine:
    name = "hf"
    version = VERSION

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps:
        budget = gpu_memory_bytes - weights_bytes - overhead_bytes
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"KV = {gpu_memory_bytes:,} − weights {weights_bytes:,} − overhead {overhead_bytes:,} = {budget:,} B "
            "(no memory fraction)",))

    def plan(self, request: Request, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        req, m = request, request.model
        if req.dcp > 1:
            raise InputError("--dcp is a vLLM option; transformers has no decode context parallel")
        overrides = req.overrides or (Overrides(attention="mha") if m.is_mla else None)
        specs = layer_specs(m, overrides)
        check_parallel(specs, m.num_attention_heads, req.tp, req.pp, 1)
        dtype = resolve_kv_dtype(req.kv_dtype, m.dtype)
        state_dtype = resolve_kv_dtype("auto", m.dtype)
        budgets = budgets_per_stage if len(budgets_per_stage) == req.pp else budgets_per_stage * req.pp
        stages = pp_stages(specs, req.pp)

        def request_bytes(stage: tuple[LayerSpec, ...], tokens: int) -> int:
            return sum(kv_bytes_per_token(shard_spec(x, req.tp), dtype) * _held_tokens(x, tokens)
                       + state_bytes_per_sequence(shard_spec(x, req.tp), state_dtype) for x in stage)
        per_request = [request_bytes(st, req.max_model_len) for st in stages]
        heavy = max(range(req.pp), key=lambda k: per_request[k])
        pairs = kv_stages(budgets, per_request, "a request's cache")
        requests = min(b // r for b, r in pairs)
        tokens = min(b * req.max_model_len // r for b, r in pairs)
        if tokens <= 0:
            raise CapacityError("transformers: no memory left for the KV cache after weights and overhead")
        notes = ["contiguous cache: DynamicCache grows by torch.cat (a layer briefly needs old + new tensors); "
                 "StaticCache preallocates max_cache_len"]
        if m.is_mla and req.overrides is None:
            notes.append("MLA is cached decompressed: per-head K (qk_nope + qk_rope) and V, not the latent")
        lines = [f"bytes of one {req.max_model_len:,}-token request per GPU (sliding layers keep W − 1 tokens): "
                 f"stages {[f'{r:,}' for r in per_request]}",
                 f"tokens = budget × max_model_len // request bytes = {tokens:,}; requests = {requests:,}"]
        rows = tuple(GroupRow(kind=x.kind, num_layers=specs.count(x), num_layers_per_gpu=stages[heavy].count(x),
                              engine_groups=1, block_size=0, page_bytes_per_layer=0, blocks_per_request=0,
                              tokens_reserved_per_request=_held_tokens(x, req.max_model_len))
                     for x in dict.fromkeys(specs))
        return EnginePlan(
            engine="hf", version=VERSION, kv_dtype=dtype.name, block_size=0, page_bytes=0, num_blocks=None,
            kv_tokens=tokens, max_concurrency=None, requests_at_max_len=float(requests),
            reserve_bytes_per_request=per_request[heavy], steady_bytes_per_request=per_request[heavy],
            groups=rows, notes=tuple(notes), explain=tuple(lines))
