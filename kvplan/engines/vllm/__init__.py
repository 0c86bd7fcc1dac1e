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

from kvplan.engines.base import EnginePlan, Refusal, Request, Resolved, resolved
from kvplan.engines.protocol import DP_SIZES, EngineBase, Fp8BlockCheck
from kvplan.engines.rules import BudgetRules, BudgetSteps, BudgetTerm, WeightSplit, term_bytes
from kvplan.engines.settings import Settings
from kvplan.engines.vllm import checks, families, parallel
from kvplan.engines.vllm.planner import plan
from kvplan.engines.vllm.releases import NEWEST, budget_rules, chunks_prefill, release, resolve
from kvplan.engines.vllm.spelling import SPELLING
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy
from kvplan.formulas.request import Parallel
from kvplan.units import GIB, cdiv

DP_TPS = (1, 2)  # TP inside one DP rank of a DP + EP layout fit tries (DeepSeek's recipes: 1; 2 halves the attention)


class VllmEngine(EngineBase):
    name = "vllm"
    start_check = True  # the start-up check: one max_model_len request must fit (start_check.py)
    logs_concurrency = True
    compressed_caches = True  # deepseek_v4.py
    # --enable-expert-parallel without DP: EP = dp × tp = tp (0.33 model_executor/layers/fused_moe/config.py:1198-1230);
    # a DP rank is a whole engine of tp × pp GPUs, PP included (parallel.py)
    expert_parallel_alone = True
    data_parallel_with_pp = True
    budget_overflow = ("CUDA out of memory allocating the KV cache",
                       "vLLM takes --kv-cache-memory-bytes without checking it against the device, 0.33.0 "
                       "v1/worker/gpu_worker.py:656-681, and allocates it in one tensor, v1/worker/utils.py:596")
    spelling = SPELLING
    takes_kv_budget = True  # --kv-cache-memory-bytes (0.11 on): the budget as given (given_budget.py)
    # vLLM loads a speculative drafter inside the same measured block as the weights (0.25.0
    # v1/worker/gpu_model_runner.py:5219-5235, "Model loading took" printed at :5305): its weights are in the figure
    loaded_kinds = ("weights", "weights_extra", "lora", "draft_weights")
    host_tiers = frozenset({"vllm_native", "lmcache"})  # --kv-offloading-size; LMCacheConnectorV1
    native_host_tier = "vllm_native"
    kv_transfer = "NixlConnector"  # --kv-transfer-config kv_role kv_producer / kv_consumer (0.25.0 config/kv_transfer.py:11-13)

    def __init__(self, release_key: str = NEWEST) -> None:
        self.release = release(release_key)
        self.version = self.release.label
        self.supports_dcp = self.release.decode_context_parallel
        self.launch_release = self.release.release or None  # the release its row was read from (none: V0 rows)

    def shm_bytes(self, ranks_per_node: int) -> tuple[int, str]:
        from kvplan.engines.vllm import shm  # imported where asked: a plain capacity run never is

        queues = shm.message_queues(ranks_per_node)
        nccl, rule = super().shm_bytes(ranks_per_node)
        return queues + nccl, f"message queues {queues:,} B (vLLM 0.25.0 shm_broadcast.py, {ranks_per_node} ranks) + {rule}"

    def resolve(self, request: Request) -> Resolved:
        if request.draft is not None:  # speculative.py: imported for a draft only
            from kvplan.engines.vllm import speculative

            speculative.check(self.release, request)
        families.check_engine(request.model, self.release.key, self.version, self.release.generation == "V0")
        request = checks.before_defaults(self.release, request)
        parallel.check(self.release, request)
        if request.settings.kv_offloading_bytes and not self.release.kv_offloading:
            raise InputError(f"{self.version} has no kv_offloading_bytes (vLLM 0.33's native CPU tier); use an LMCache "
                             "connector (lmcache_cpu_bytes)", arg="kv_offloading_bytes")
        found = resolve(self.release, self._small_tier(request))
        checks.check_scheduler(self.release, found, chunks_prefill(self.release, found))
        return resolved(found)

    def _small_tier(self, request: Request) -> Request:
        """GB10 on 0.33: the smallest tier's scheduler defaults (the row's small_tier_capabilities), unless given."""
        device, s = request.device, request.settings
        if device is None or not families.small_tier(self.release, device.compute_capability):
            return request
        serve, llm = self.release.scheduler[-1].serve, self.release.scheduler[-1].llm
        tokens, seqs = serve if s.vllm.entry_point == "serve" else llm
        return replace(request, settings=replace(s, max_num_batched_tokens=s.max_num_batched_tokens or tokens,
                                                 max_num_seqs=s.max_num_seqs or seqs))

    def fp8_blocks(self, request: Request) -> Fp8BlockCheck:
        """Block-FP8 weights at the TP they are cut by: MoE TP dp × tp, whole experts under EP (parallel.py)."""
        moe_tp = None if request.ep > 1 else request.parallel.dp_tp
        return Fp8BlockCheck(merged_relaxed=self.release.fp8_merged_relaxed, expert_tp=moe_tp, moe_refine=self.release.fp8_moe_refine,
                             source="vllm/model_executor/layers/quantization/utils/fp8_utils.py:1296-1374")

    def policy(self, request: Request) -> LayoutPolicy:
        hybrid = request.settings.vllm.hybrid_kv_cache_manager and self.release.hybrid_kv_cache_manager
        return LayoutPolicy(windows="window" if hybrid else "full",
                            v_as_k=families.pads_v_to_k(request.model, self.release),
                            cross_as_self=self.release.generation == "V0")

    def budget_rules(self, request: Resolved) -> BudgetRules:
        return budget_rules(self.release, request)

    def weight_split(self, request: Request) -> WeightSplit:
        split = parallel.weight_split(request)
        text_only = request.settings.limit_mm_per_prompt == 0 and self.release.text_only_skips_towers
        return replace(split, towers="none") if text_only else split

    def kv_budget(self, request: Resolved, terms: tuple[BudgetTerm, ...]) -> BudgetSteps:
        assert request.device is not None
        total, util = request.device.memory_bytes, request.settings.vllm.gpu_memory_utilization
        assert util is not None  # the release's default, filled in by resolve
        ceil = self.release.usable_rounding == "ceil"
        usable = math.ceil(total * util) if ceil else int(total * util)
        budget = usable - term_bytes(terms)
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"usable = {'ceil' if ceil else 'int'}({total:,} × gpu_memory_utilization {util}) = {usable:,} B",
            f"available KV = usable − Σ terms {term_bytes(terms):,} = {budget:,} B"))

    def no_memory(self, request: Resolved) -> Refusal:
        from kvplan.engines.vllm import refusals  # imported on a refusal only

        return Refusal(message=refusals.no_memory(self.release.refusal))

    def plan(self, request: Resolved, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        """One DP rank's plan (what each engine logs); requests_at_max_len is the replica's (dp pools)."""
        planned = plan(request, layout, budgets_per_stage, self.release)
        return replace(planned, requests_at_max_len=planned.requests_at_max_len * request.dp, pools=request.dp,
                       gpus=self.replica_gpus(request.parallel),
                       notes=(*planned.notes, *parallel.notes(request, planned.kv_tokens)))

    def replica_gpus(self, parallel: Parallel) -> int:
        """dp engines of tp × pp GPUs each (parallel.py)."""
        return parallel.dp_gpus

    def data_parallel_layouts(self, gpus_per_node: int, max_gpus: int) -> tuple[Parallel, ...]:
        """--data-parallel-size D --enable-expert-parallel (0.8.5 on): D engines of TP × PP GPUs, each its own KV
        pool; EP = D × TP (0.33 model_executor/layers/fused_moe/config.py:1198-1230); tried with TP 1 and 2, PP 1."""
        return tuple(Parallel(tp=t, dp=d, ep=d * t) for t in DP_TPS for d in DP_SIZES
                     if t <= gpus_per_node and d * t <= max_gpus)

    def multi_node(self, parallel: Parallel, gpus_per_node: int) -> dict[str, int]:
        """DP ranks spread with --data-parallel-size-local (ranks per node, 0.9.0 on) where a rank fits one node;
        else --nnodes."""
        nodes = cdiv(self.replica_gpus(parallel), gpus_per_node)
        if nodes > 1 and parallel.dp > 1 and parallel.group_gpus <= gpus_per_node:
            return {"dp_local": cdiv(parallel.dp, nodes), "nodes": nodes}
        return super().multi_node(parallel, gpus_per_node)

    def memory_fraction(self, settings: Settings) -> float | None:
        return settings.vllm.gpu_memory_utilization

    def usable_fraction(self, settings: Settings) -> float:
        """kv_budget: ceil (int before 0.33) of M × gpu_memory_utilization minus terms that are all at least 0 (the
        weights as loaded at least the checkpoint's share); the utilization asked, or the release's default whatever
        the layout (releases.resolve)."""
        return min(float(settings.vllm.gpu_memory_utilization or self.release.gpu_memory_utilization), 1.0)

    def budget_log_line(self, kv_budget_bytes: int, log_lines: tuple[str, ...]) -> str | None:
        """V1's worker prints its budget before the "GPU KV cache size" line (v1/worker/gpu_worker.py)."""
        if log_lines and log_lines[0].startswith("GPU KV cache size"):
            return f"Available KV cache memory: {round(kv_budget_bytes / GIB, 2)} GiB"
        return None

    def default_note(self, asked: Settings, settings: Settings) -> str | None:
        if asked.vllm.gpu_memory_utilization is not None:
            return None
        util = settings.vllm.gpu_memory_utilization  # filled in by the release's resolve (releases.py)
        return (f"vLLM gpu_memory_utilization {util} (the release's default)" if util is not None else
                "vLLM gpu_memory_utilization: the release's default (section 3 shows the value)")
