"""Hugging Face transformers profile: contiguous DynamicCache, no paging
(``src/transformers/cache_utils.py``).

Each layer holds K ``[B, Hkv, T, dk]`` and V ``[B, Hkv, T, dv]``; sliding layers keep the last
``W − 1`` tokens (``DynamicSlidingWindowLayer``; chunked layers are cached the same way); MLA
models are cached decompressed (per-head K of qk_nope + qk_rope and V of v_head_dim). No memory
fraction: the budget is what is left after weights and overhead. TP, if asked, is a tp_plan
sharding heads like the engines. transformers logs no capacity.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.engines.base import (
    EnginePlan,
    GroupRow,
    Refusal,
    Request,
    Resolved,
    kv_stages,
    no_data_parallel,
    resolved,
)
from kvplan.engines.protocol import EngineBase
from kvplan.engines.rules import BudgetRules, BudgetSteps, BudgetTerm, ProfileRun, WeightSplit, term_bytes
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy, held_tokens

VERSION = "transformers 5.x"
PREFILL_TOKENS = 8192  # the prompt batch whose eager forward the estimate charges (no engine default exists)
NO_MEMORY = "transformers: no memory left for the KV cache after the weights, activations and non-torch memory"


class HfEngine(EngineBase):
    name = "hf"
    version = VERSION

    def __init__(self, release_key: str = "5") -> None:
        if release_key != "5":
            raise InputError(f"unknown transformers release {release_key!r}; kvplan follows: 5", arg="engine")

    def resolve(self, request: Request) -> Resolved:
        no_data_parallel(request, "transformers serves from one process: no data or expert parallel")
        s = request.settings
        asked = [name for name, on in (("speculative_method", request.draft is not None),
                                       ("max_lora_rank", bool(s.max_lora_rank or s.max_loras)),
                                       ("cpu_offload_bytes", bool(s.cpu_offload_bytes))) if on]
        if asked:
            raise InputError("kvplan's transformers profile models no assisted generation, PEFT adapters or "
                             f"weight offloading: drop {asked[0]}", arg=asked[0])
        return resolved(request)

    def weight_split(self, request: Request) -> WeightSplit:
        return WeightSplit(tp=request.tp)

    def policy(self, request: Request) -> LayoutPolicy:
        return LayoutPolicy(mla="decompressed", windows="window-1")

    def budget_rules(self, request: Resolved) -> BudgetRules:
        """An eager prefill of a batch of prompts and one row of fp32 logits; no graphs."""
        run = ProfileRun(tokens=request.settings.max_num_batched_tokens or PREFILL_TOKENS, eager=True, sampler_rows=1,
                         sampler_path="fp32 logits", sampler_bytes_per_logit=4.0, full_hidden_at_sampler=False,
                         sampled_row_copies=0)
        return BudgetRules(profile=run, non_torch=("cuda_context",), nccl_groups=int(request.tp > 1))

    def kv_budget(self, request: Resolved, terms: tuple[BudgetTerm, ...]) -> BudgetSteps:
        assert request.device is not None
        budget = request.device.memory_bytes - term_bytes(terms)
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"KV = {request.device.memory_bytes:,} − Σ terms {term_bytes(terms):,} = {budget:,} B (no memory fraction)",))

    def no_memory(self, request: Resolved) -> Refusal:
        return Refusal(message=NO_MEMORY)

    def plan(self, request: Resolved, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        plan = _plan(request, layout, budgets_per_stage)
        return replace(plan, refusal=self.no_memory(request)) if plan.kv_tokens <= 0 else plan


def _plan(req: Request, layout: Layout, budgets: tuple[int, ...]) -> EnginePlan:
    per_request = [stage.sequence_bytes(req.max_model_len) for stage in layout.stages]
    heavy = max(range(req.pp), key=lambda k: per_request[k])
    pairs = kv_stages(budgets, per_request, "a request's cache")
    requests = max(0, min(b // r for b, r in pairs))
    tokens = max(0, min(b * req.max_model_len // r for b, r in pairs))
    notes = ["contiguous cache: DynamicCache grows by torch.cat (a layer briefly needs old + new tensors); "
             "StaticCache preallocates max_cache_len"]
    if req.model.is_mla and req.cache.overrides is None:
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
