"""Hugging Face transformers profile: contiguous DynamicCache, no paging
(``src/transformers/cache_utils.py``).

Each layer holds K ``[B, Hkv, T, dk]`` and V ``[B, Hkv, T, dv]``; sliding layers keep the last
``W − 1`` tokens (``DynamicSlidingWindowLayer``; chunked layers are cached the same way); MLA
models are cached decompressed (per-head K of qk_nope + qk_rope and V of v_head_dim). No memory
fraction: the budget is what is left after weights and overhead. TP, if asked, is a tp_plan
sharding heads like the engines. transformers logs no capacity.
"""

from __future__ import annotations

from kvplan.engines.base import BudgetSteps, EnginePlan, GroupRow, Request, Settings, kv_stages
from kvplan.errors import CapacityError
from kvplan.formulas.layout import Layout, LayoutPolicy, held_tokens

VERSION = "transformers 5.x"


class HfEngine:
    name = "hf"
    version = VERSION
    supports_dcp = False

    def policy(self, request: Request) -> LayoutPolicy:
        return LayoutPolicy(mla="decompressed", windows="window-1")

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps:
        budget = gpu_memory_bytes - weights_bytes - overhead_bytes
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"KV = {gpu_memory_bytes:,} − weights {weights_bytes:,} − overhead {overhead_bytes:,} = {budget:,} B "
            "(no memory fraction)",))

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        return _plan(request, layout, budgets_per_stage)


def _plan(req: Request, layout: Layout, budgets: tuple[int, ...]) -> EnginePlan:
    per_request = [stage.sequence_bytes(req.max_model_len) for stage in layout.stages]
    heavy = max(range(req.pp), key=lambda k: per_request[k])
    pairs = kv_stages(budgets, per_request, "a request's cache")
    requests = min(b // r for b, r in pairs)
    tokens = min(b * req.max_model_len // r for b, r in pairs)
    if tokens <= 0:
        raise CapacityError("transformers: no memory left for the KV cache after weights and overhead")
    notes = ["contiguous cache: DynamicCache grows by torch.cat (a layer briefly needs old + new tensors); "
             "StaticCache preallocates max_cache_len"]
    if req.model.is_mla and req.overrides is None:
        notes.append("MLA is cached decompressed: per-head K (qk_nope + qk_rope) and V, not the latent")
    rows = tuple(GroupRow(kind=g.spec.kind, num_layers=g.num_layers, num_layers_per_gpu=g.stage_layers[heavy],
                          engine_groups=1, block_size=0, page_bytes_per_layer=0, blocks_per_request=0,
                          tokens_reserved_per_request=held_tokens(g.token_limit, req.max_model_len))
                 for g in layout.groups)
    return EnginePlan(
        engine="hf", version=VERSION, kv_dtype=layout.kv_dtype.name, block_size=0, page_bytes=0, num_blocks=None,
        kv_tokens=tokens, max_concurrency=None, requests_at_max_len=float(requests),
        reserve_bytes_per_request=per_request[heavy], steady_bytes_per_request=per_request[heavy], groups=rows,
        notes=tuple(notes),
        explain=(f"bytes of one {req.max_model_len:,}-token request per GPU (sliding layers keep W − 1 tokens): "
                 f"stages {[f'{r:,}' for r in per_request]}",
                 f"tokens = budget × max_model_len // request bytes = {tokens:,}; requests = {requests:,}"))
