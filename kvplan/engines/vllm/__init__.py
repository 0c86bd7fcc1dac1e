"""vLLM profiles, one per release (``releases.py``): 0.33 (the newest) unless another is named
(``vllm@0.11``), on an NVIDIA H100 unless told otherwise.

Budget: ``total × gpu_memory_utilization`` (``ceil`` in 0.33, ``int`` before) minus what the release's
start-up profiling subtracts (``BudgetRules``: the weights as loaded, the profile run's activation peak,
persistent buffers, non-torch memory, CUDA graphs), "Available KV cache memory" in
``vllm/v1/worker/gpu_worker.py`` ``determine_available_memory`` (V0: ``worker/worker.py``). Layout: KV
heads floor-split with replication, the MLA latent, windows kept (all tokens with the hybrid KV cache
manager disabled, or in a release without it). Blocks and logs: ``planner.py``; the start-up check: ``start_check.py``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from kvplan.engines.base import (
    BudgetRules,
    BudgetSteps,
    BudgetTerm,
    EnginePlan,
    Refusal,
    Request,
    WeightSplit,
    term_bytes,
)
from kvplan.engines.vllm import checks, families, parallel, refusals, speculative
from kvplan.engines.vllm.planner import plan
from kvplan.engines.vllm.releases import NEWEST, budget_rules, chunks_prefill, release, resolve
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy


class VllmEngine:
    name = "vllm"

    def __init__(self, release_key: str = NEWEST) -> None:
        self.release = release(release_key)
        self.version = self.release.label
        self.supports_dcp = self.release.decode_context_parallel

    def resolve(self, request: Request) -> Request:
        speculative.check(self.release, request)
        families.check_engine(request.model, self.release.key, self.version, self.release.refusal == "v0")
        request = checks.before_defaults(self.release, request)
        parallel.check(self.release, request)
        if request.settings.kv_offloading_bytes and not self.release.kv_offloading:
            raise InputError(f"{self.version} has no kv_offloading_bytes (vLLM 0.33's native CPU tier); use an LMCache "
                             "connector (lmcache_cpu_bytes)", arg="kv_offloading_bytes")
        resolved = resolve(self.release, self._small_tier(request))
        checks.check_scheduler(self.release, resolved, chunks_prefill(self.release, resolved))
        return resolved

    def _small_tier(self, request: Request) -> Request:
        """GB10 on 0.33: the smallest tier's scheduler defaults (families.SMALL_TIER_CAPABILITIES), unless given."""
        device, s = request.device, request.settings
        if device is None or not families.small_tier(self.release.key, device.compute_capability):
            return request
        serve, llm = self.release.scheduler[-1].serve, self.release.scheduler[-1].llm
        tokens, seqs = serve if s.vllm.entry_point == "serve" else llm
        return replace(request, settings=replace(s, max_num_batched_tokens=s.max_num_batched_tokens or tokens,
                                                 max_num_seqs=s.max_num_seqs or seqs))

    def policy(self, request: Request) -> LayoutPolicy:
        hybrid = request.settings.vllm.hybrid_kv_cache_manager and self.release.hybrid_kv_cache_manager
        return LayoutPolicy(windows="window" if hybrid else "full",
                            v_as_k=families.pads_v_to_k(request.model, self.release.key),
                            cross_as_self=self.release.refusal == "v0")

    def budget_rules(self, request: Request) -> BudgetRules:
        return budget_rules(self.release, self.resolve(request))

    def weight_split(self, request: Request) -> WeightSplit:
        split = parallel.weight_split(request)
        text_only = request.settings.limit_mm_per_prompt == 0 and self.release.text_only_skips_towers
        return replace(split, towers="none") if text_only else split

    def kv_budget(self, request: Request, terms: tuple[BudgetTerm, ...]) -> BudgetSteps:
        assert request.device is not None
        total, util = request.device.memory_bytes, request.settings.vllm.gpu_memory_utilization
        util = util or self.release.gpu_memory_utilization
        ceil = self.release.usable_rounding == "ceil"
        usable = math.ceil(total * util) if ceil else int(total * util)
        budget = usable - term_bytes(terms)
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"usable = {'ceil' if ceil else 'int'}({total:,} × gpu_memory_utilization {util}) = {usable:,} B",
            f"available KV = usable − Σ terms {term_bytes(terms):,} = {budget:,} B"))

    def no_memory(self, request: Request) -> Refusal:
        return Refusal(message=refusals.no_memory(self.release.refusal))

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        """One DP rank's plan (what each engine logs); requests_at_max_len is the replica's (dp pools)."""
        resolved = self.resolve(request)
        planned = plan(resolved, layout, budgets_per_stage, self.release)
        return replace(planned, requests_at_max_len=planned.requests_at_max_len * request.dp, pools=request.dp,
                       gpus=request.dp * request.tp * request.pp,
                       notes=(*planned.notes, *parallel.notes(resolved, planned.kv_tokens)))
