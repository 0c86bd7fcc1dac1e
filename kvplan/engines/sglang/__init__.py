"""SGLang profiles, one per minor release 0.4.0-0.5.23 (``releases.MINORS``), each following its step's row
(``releases.ROWS``): a token pool sized by a cell size per token.

Budget (every release: 0.4.0 ``model_executor/model_runner.py:460-485``, 0.5.2 :1092-1133, 0.5.23
``mem_cache/kv_cache_configurator.py:2995-3060``): ``rest = free after weights − free at init × (1 − f)``, i.e.
``free_at_init × mem_fraction_static − weights``; free memory is read after the distributed init (context, NCCL)
and before the weights; activations and graphs live in the remainder. f is the release's default
(``fraction``) unless given. Pool: ``pool`` (cell, N, sliding-window split); plan and log lines: ``plan``.
Heads split over the attention TP size (tp // dp with DP attention, 0.4.1 on; tp in 0.4.0).
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.engines.base import EnginePlan, Refusal, Request, Resolved, resolved
from kvplan.engines.protocol import DP_SIZES, EngineBase
from kvplan.engines.rules import BudgetRules, BudgetSteps, BudgetTerm, WeightSplit, term_bytes
from kvplan.engines.settings import Settings
from kvplan.engines.sglang import extras, fraction, pool
from kvplan.engines.sglang.plan import build, pool_bytes, pool_log
from kvplan.engines.sglang.releases import MINORS, NEWEST, RELEASES, ROWS, SglangRelease, release_for
from kvplan.engines.sglang.spelling import SPELLING
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy
from kvplan.formulas.request import Parallel

NO_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."  # model_runner / pool_configurator


def default_mem_fraction_static(tp: int) -> float:
    """SGLang 0.4's table by TP size (0.4.0-0.4.4 ``server_args.py:170-181``)."""
    return fraction.tp_table(tp)


class SglangEngine(EngineBase):
    name = "sglang"
    budget_overflow = ("SGLang cannot hold this KV budget",
                       "it sizes its pool from the memory it profiles and caps a larger --max-total-tokens to it, 0.5.8 "
                       "model_executor/model_runner_kv_cache_mixin.py:299-306")
    spelling = SPELLING
    expert_parallel_alone = True  # --ep-size dividing --tp-size without DP attention (distributed/parallel_state.py:1461-1462)
    fraction_default = "SGLang mem_fraction_static: its default for this GPU and TP (section 3 shows the value)"
    host_tiers = frozenset({"hicache", "lmcache", "mooncake"})  # HiCache, its LMCache and Mooncake storage backends
    native_host_tier = "hicache"
    kv_transfer = "mooncake"  # --disaggregation-transfer-backend default (0.5.8 srt/server_args.py:631)
    decode_reserve_tokens = 512  # --num-reserved-decode-tokens (0.5.8 srt/server_args.py:640)

    def __init__(self, release_key: str = NEWEST) -> None:
        found = release_for(release_key)
        if found is None:
            raise InputError(f"unknown SGLang release {release_key!r}; kvplan follows: {', '.join(MINORS)}",
                             arg="engine")
        self.release, self.version = found, f"SGLang {release_key}"
        self.launch_release = release_key  # its minor (the last patch of it was read: SPELLING.table_match)

    def resolve(self, request: Request) -> Resolved:
        """Chunked prefill and mem_fraction_static from the GPU (left unset when no GPU is given)."""
        pool.check_data_parallel(request.tp, request.dp, request.ep)  # before the layout: attention TP is tp // dp
        s = request.settings
        if request.device is None:
            return resolved(request)
        g = fraction.gpu_mib(request)
        chunked = s.sglang.chunked_prefill_size or fraction.tier(self.release, g).chunked
        f = s.sglang.mem_fraction_static or fraction.default_fraction(self.release, request, chunked)
        sglang = replace(s.sglang, chunked_prefill_size=chunked, mem_fraction_static=f)
        return resolved(replace(request, settings=replace(s, sglang=sglang)))

    def budget_rules(self, request: Resolved) -> BudgetRules:
        """Nothing is profiled: the context and NCCL lower the free memory the fraction applies to. LoRA
        buffers are allocated after the weights and before the pool is sized; a draft loads after it."""
        pool.check(self.release, request)
        return BudgetRules(profile=None, non_torch=("cuda_context",), nccl_groups=int(request.tp > 1) + int(request.pp > 1),
                           lora=extras.lora_rule(request), cpu_offload_bytes=request.settings.cpu_offload_bytes)

    def weight_split(self, request: Request) -> WeightSplit:
        """Attention at the attention TP (tp // dp, replicated over the DP groups; tp before 0.4.1), the MoE at
        TP tp // ep (distributed/parallel_state.py)."""
        return WeightSplit(tp=request.tp, ep=request.ep, attention_tp=self._attention_tp(request))

    def _attention_tp(self, request: Request) -> int:
        """The TP the attention heads are split over: tp // dp with DP attention (0.4.1 on), tp before."""
        return request.parallel.attention_tp if self.release.heads_by_attention_tp else request.tp

    def no_memory(self, request: Resolved) -> Refusal:
        """The weights leave nothing of the fraction (rest ≤ 0): 0.5.14 on says so (``model_runner_kv_cache_mixin.py
        :102-117``); before, the pool's own "Not enough memory"."""
        f = request.settings.sglang.mem_fraction_static
        if self.release.no_memory == "weights" and f is not None:
            return Refusal(message=f"Loaded weights leave no GPU memory for the KV cache under "
                                   f"--mem-fraction-static={f}. Raise --mem-fraction-static")
        return self._too_small(request)

    def _too_small(self, request: Resolved) -> Refusal:
        """Fewer than one token (0.5.10 on the message names the fraction, ``MemoryPoolConfig.__post_init__``)."""
        f = request.settings.sglang.mem_fraction_static
        if self.release.no_memory == "plain" or f is None:
            return Refusal(message=NO_MEMORY)
        return Refusal(message=f"{NO_MEMORY} Current value: mem_fraction_static={f}")

    def policy(self, request: Request) -> LayoutPolicy:
        return LayoutPolicy(attention_tp=self._attention_tp(request),
                            windows="window" if pool.is_hybrid_swa(self.release, request) else "full")

    def kv_budget(self, request: Resolved, terms: tuple[BudgetTerm, ...]) -> BudgetSteps:
        assert request.device is not None
        f = request.settings.sglang.mem_fraction_static
        assert f is not None  # the release's default for the GPU, filled in by resolve
        weights = term_bytes(terms, ("weights", "weights_extra", "lora"))
        free_at_init = request.device.memory_bytes - (term_bytes(terms) - weights)
        budget = int(free_at_init * f) - weights
        why = fraction.prefill_graphs_off(self.release, request)
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"free at init = {request.device.memory_bytes:,} − non-torch {term_bytes(terms) - weights:,} = "
            f"{free_at_init:,} B",
            f"mem_fraction_static {f} ({self.release.label} rule {self.release.fraction_rule}; prefill CUDA graphs "
            f"{'off: ' + why if why else 'on'})",
            f"KV pool = free at init × mem_fraction_static {f} − weights {weights:,} = {budget:,} B"))

    def plan(self, request: Resolved, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        pool.check(self.release, request)
        found = replace(build(self.release, request, layout, budgets_per_stage), version=self.version,
                        pools=request.dp)
        return replace(found, refusal=self._too_small(request)) if found.kv_tokens <= 0 else found

    def data_parallel_layouts(self, gpus_per_node: int, max_gpus: int) -> tuple[Parallel, ...]:
        """--tp-size T --dp-size T --enable-dp-attention --ep-size T: the T GPUs of the TP group split into T
        attention groups of one GPU, each its own pool; experts over EP T (0.5.2 layers/dp_attention.py,
        distributed/parallel_state.py:1461-1462). The TP group may span nodes (--nnodes, 0.5.2
        managers/data_parallel_controller.py:209-245)."""
        return tuple(Parallel(tp=t, dp=t, ep=t) for t in DP_SIZES if t <= max_gpus)

    def memory_fraction(self, settings: Settings) -> float | None:
        return settings.sglang.mem_fraction_static



__all__ = ["NO_MEMORY", "RELEASES", "ROWS", "SglangEngine", "SglangRelease", "default_mem_fraction_static",
           "pool_bytes", "pool_log"]
