"""The engine protocol: everything ``planning/``, ``launch/``, ``reconcile/`` and ``render/`` ask of an engine release,
so that none of them asks for an engine by its name.

An engine profile follows one release of its engine (``version``) and declares only how it differs:
- the question: ``resolve(request)`` checks it and fills the release's defaults into its ``Settings`` (scheduler
  sizes by GPU memory class and entry point, sampler path, in-flight batches, token-log style), once: the
  ``Resolved`` request is what the budget and the plan take; ``check_layout`` and ``fp8_blocks`` say what it
  refuses before its layout is built;
- the layout: ``policy(request)`` (``LayoutPolicy``: head split, attention TP, MLA latent or decompressed, tokens a
  window layer keeps), ``supports_dcp``;
- the budget: ``budget_rules`` (what its start-up profiling subtracts, as data; ``kvplan.planning.budget`` turns that
  into named ``BudgetTerm``s), ``weight_split``, ``kv_budget`` (GPU memory and those terms into KV memory per GPU),
  ``start_check`` and ``budget_overflow`` (how it refuses);
- the plan: ``plan`` cuts that memory into blocks and tokens on the layout it is handed, and says whether it refuses
  (a ``Refusal`` is an answer: the plan is still returned with its numbers); ``empty_plan`` when it got no memory;
- the replica: ``replica_gpus``, the data-parallel layouts it runs (``data_parallel_layouts``), how one replica
  spreads over nodes (``multi_node``), whether it runs EP without DP (``expert_parallel_alone``) and PP inside DP
  (``data_parallel_with_pp``), and how its launch command spells the knobs (``spelling``).
``kvplan.planning.capacity`` builds the layout once (``build_layout`` with the engine's policy) and chains them; the
CLI only renders the frozen ``EnginePlan``. ``EngineBase`` holds what most engines share; each engine overrides what
differs.
"""

from __future__ import annotations

from typing import Protocol

from kvplan.engines.base import EnginePlan, Refusal, Request, Resolved
from kvplan.engines.rules import BudgetRules, BudgetSteps, BudgetTerm, TermKind, WeightSplit
from kvplan.engines.settings import Settings
from kvplan.engines.spelling import Spelling
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy
from kvplan.formulas.request import CacheRequest, Parallel
from kvplan.memo import IdentityCache
from kvplan.records import Record
from kvplan.specs import CompressedMLA, CompressorState, SlidingMLA, parts
from kvplan.units import cdiv

DP_SIZES = (2, 4, 8, 16, 32, 64)  # the data-parallel sizes `kvplan fit` tries
NCCL_SHM_BYTES = 1024**3  # kvplan's allowance for NCCL's shared-memory segments (its SHM transport and proxy),
# not read from code: a container's default 64 MiB /dev/shm is what NCCL's "Error while creating shared memory
# segment" reports
NCCL_SHM_RULE = "1 GiB allowance for NCCL's shared-memory segments (an estimate, not read from code)"
# DeepSeek-V4's compressed caches: kvplan models them as vLLM lays them out
COMPRESSED_PARTS = (CompressedMLA, SlidingMLA, CompressorState)


class Fp8BlockCheck(Record):
    """A release's check that a block-quantized FP8 checkpoint's weight blocks divide at the TP the weights are cut
    by (``kvplan.planning.quant_checks``)."""

    merged_relaxed: bool  # a merged layer (QKV, gate_up) whose partitions' blocks do not divide passes
    expert_tp: int | None  # the TP every expert is cut by (None: whole experts under expert parallelism)
    moe_refine: bool  # a block that does not divide is refined to a finer scale grid first
    source: str  # file:line of the check


class Engine(Protocol):
    name: str
    version: str  # the release whose rules and defaults the profile follows
    supports_dcp: bool
    expert_parallel_alone: bool  # it runs EP over the TP ranks without data parallel (fit tries TP × PP with EP = TP)
    data_parallel_with_pp: bool  # its DP + EP layouts take PP inside each DP rank (fit tries them with PP)
    start_check: bool  # it refuses to start when one max_model_len request does not fit its pool
    budget_overflow: tuple[str, str]  # a given KV budget the GPU cannot hold: what happens, and why ("": unsaid)
    spelling: Spelling | None  # its launch command (None: kvplan writes and reads none)
    takes_kv_budget: bool  # a KV budget can be given to it (vLLM --kv-cache-memory-bytes), no fraction of the GPU
    loaded_kinds: tuple[TermKind, ...]  # the budget terms its logged weight-loading figure measures
    launch_release: str | None  # the release whose parser its launch command is read and written with (None: none)
    host_tiers: frozenset[str]  # the host KV tiers it connects to (kvplan.engines.host_tier.CONNECTORS)
    native_host_tier: str | None  # the one its own offloading size means (kv_offloading_bytes; None: none)
    kv_transfer: str | None  # the prefill -> decode KV transfer its launch command names (None: kvplan writes none)
    decode_reserve_tokens: int  # tokens a decode instance holds back per request beyond its prompt

    def resolve(self, request: Request) -> Resolved: ...

    def check_layout(self, request: Request) -> None: ...

    def fp8_blocks(self, request: Request) -> Fp8BlockCheck | None: ...

    def policy(self, request: Request) -> LayoutPolicy: ...

    def budget_rules(self, request: Resolved) -> BudgetRules: ...

    def weight_split(self, request: Request) -> WeightSplit: ...

    def kv_budget(self, request: Resolved, terms: tuple[BudgetTerm, ...]) -> BudgetSteps: ...

    def no_memory(self, request: Resolved) -> Refusal: ...

    def plan(self, request: Resolved, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan: ...

    def empty_plan(self, cache: CacheRequest) -> EnginePlan: ...

    def replica_gpus(self, parallel: Parallel) -> int: ...

    def data_parallel_layouts(self, gpus_per_node: int, max_gpus: int) -> tuple[Parallel, ...]: ...

    def multi_node(self, parallel: Parallel, gpus_per_node: int) -> dict[str, int]: ...

    def memory_fraction(self, settings: Settings) -> float | None: ...

    def usable_fraction(self, settings: Settings) -> float: ...

    def default_note(self, asked: Settings, settings: Settings) -> str | None: ...

    def budget_log_line(self, kv_budget_bytes: int, log_lines: tuple[str, ...]) -> str | None: ...

    def shm_bytes(self, ranks_per_node: int) -> tuple[int, str]: ...


class EngineBase:
    """What an engine does unless it says otherwise: no decode context parallel, DeepSeek-V4's compressed caches
    refused, no FP8 block check, a replica of tp × pp GPUs without data parallel, no start check on one request."""

    name: str
    version: str
    supports_dcp = False
    expert_parallel_alone = False
    data_parallel_with_pp = False
    start_check = False
    logs_concurrency = False  # it logs a maximum concurrency (0.0 in a plan with no memory)
    compressed_caches = False  # it lays out DeepSeek-V4's compressed caches (as kvplan models vLLM's)
    budget_overflow = ("CUDA out of memory: this KV budget does not fit beside what the GPU holds", "")
    spelling: Spelling | None = None
    launch_release: str | None = None
    takes_kv_budget = False
    fraction_default: str | None = None  # the report's note where its memory fraction is left to the release
    loaded_kinds: tuple[TermKind, ...] = ("weights", "weights_extra", "lora")
    host_tiers: frozenset[str] = frozenset()
    native_host_tier: str | None = None
    kv_transfer: str | None = None
    decode_reserve_tokens = 0

    def check_layout(self, request: Request) -> None:
        """What it refuses before its layout is built (exit 2)."""
        if request.dcp > 1 and not self.supports_dcp:
            raise InputError(f"dcp is a vLLM option (0.11 on); {self.version} has no decode context parallel",
                             arg="dcp")
        if not self.compressed_caches and any(isinstance(p, COMPRESSED_PARTS) for s in request.model.layer_specs
                                              for p in parts(s)):
            raise InputError(f"kvplan models DeepSeek-V4's compressed caches as vLLM lays them out; {self.version}'s "
                             "own layout of them is not modelled", arg="engine")

    def fp8_blocks(self, request: Request) -> Fp8BlockCheck | None:
        return None

    def empty_plan(self, cache: CacheRequest) -> EnginePlan:
        """The plan of an engine that got no memory (or failed): zeros, as the engine would log."""
        return EnginePlan(engine=self.name, version=self.version, kv_dtype="-", block_size=cache.paged_in(0),
                          page_bytes=0, num_blocks=0, kv_tokens=0, max_concurrency=0.0 if self.logs_concurrency else None,
                          requests_at_max_len=0.0, reserve_bytes_per_request=0, steady_bytes_per_request=0, groups=())

    def replica_gpus(self, parallel: Parallel) -> int:
        """GPUs of one replica: tp × pp (a data-parallel split, where the engine has one, runs inside it)."""
        return parallel.group_gpus

    def data_parallel_layouts(self, gpus_per_node: int, max_gpus: int) -> tuple[Parallel, ...]:
        """The DP attention + EP layouts `kvplan fit` tries for a model with experts (none: TP and PP only)."""
        return ()

    def multi_node(self, parallel: Parallel, gpus_per_node: int) -> dict[str, int]:
        """How its launch command spreads one replica over nodes ({}: one node is enough): the fewest nodes that
        hold an equal share of its ranks, as the engines split them (vLLM 0.25.0
        v1/executor/multiproc_executor.py:251 asserts world_size % nnodes == 0; SGLang 0.5.23
        srt/entrypoints/engine.py:2071 gives each node tp_size // nnodes): TP 8 at 3 GPUs a node is 4 nodes of 2."""
        gpus = self.replica_gpus(parallel)
        nodes = next(n for n in range(cdiv(gpus, gpus_per_node), gpus + 1) if gpus % n == 0)
        return {} if nodes == 1 else {"nodes": nodes}

    def memory_fraction(self, settings: Settings) -> float | None:
        """The knob its budget is a fraction of the GPU by (None: it has none)."""
        return None

    def usable_fraction(self, settings: Settings) -> float:
        """The share f of each GPU its KV budget is cut from, as its code cuts it: budget ≤ ⌈f × M⌉ − weights on that
        GPU (kvplan fit's bound, kvplan.planning.search). 1: only the GPU's memory bounds it."""
        return 1.0

    def default_note(self, asked: Settings, settings: Settings) -> str | None:
        """What its budget rests on that the user left to the release: its memory fraction (None: given, or none)."""
        return self.fraction_default if self.memory_fraction(asked) is None else None

    def budget_log_line(self, kv_budget_bytes: int, log_lines: tuple[str, ...]) -> str | None:
        """The line it prints with its KV budget before its plan's `log_lines` (None: it prints none)."""
        return None

    def shm_bytes(self, ranks_per_node: int) -> tuple[int, str]:
        """The /dev/shm its processes on one node map (bytes, the rule): NCCL's allowance unless it says more."""
        return NCCL_SHM_BYTES, NCCL_SHM_RULE


_RULES: IdentityCache[BudgetRules] = IdentityCache(maxsize=16)


def rules_of(engine: Engine, request: Resolved) -> BudgetRules:
    """``engine.budget_rules(request)``, once per resolved request object: a capacity answer reads them for its
    budget, its notes and its summaries, and they are a pure function of the engine release and the request."""
    return _RULES.get(request, engine, lambda: engine.budget_rules(request))
