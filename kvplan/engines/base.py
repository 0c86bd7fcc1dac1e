"""What every engine profile shares: the question asked, the knobs, and the answer's shape.

An engine profile declares only how it differs from the others:
- ``policy(request)``: how it lays the cache out (``LayoutPolicy``: head split, attention TP,
  MLA latent or decompressed, tokens a window layer keeps), and ``supports_dcp``;
- ``kv_budget``: how it turns GPU memory, weights and overhead into KV memory per GPU;
- ``plan``: how it cuts that memory into blocks and tokens, on the layout it is handed.
``kvplan.planning.capacity`` builds the layout once (``build_layout`` with the engine's policy)
and chains them; the CLI only renders the frozen ``EnginePlan``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kvplan.config.model import ModelConfig
from kvplan.dtypes import DEFAULT_QUANT_GROUP
from kvplan.errors import InputError
from kvplan.formulas.layers import Overrides
from kvplan.formulas.layout import Layout, LayoutPolicy


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Engine knobs. ``None`` means the engine's own default (named in each profile)."""

    block_size: int | None = None  # vLLM block / SGLang page / TRT-LLM tokens_per_block
    max_num_batched_tokens: int | None = None  # vLLM
    async_scheduling: bool = True  # vLLM 0.33 default: one more batch in flight
    prefix_caching: bool | None = None  # vLLM: None = its default (on; off for attention-free models)
    hybrid_kv_cache_manager: bool = True  # vLLM --disable-hybrid-kv-cache-manager turns it off
    legacy_token_log: bool = False  # vLLM before 0.33: tokens = num_blocks // groups × block
    gpu_memory_utilization: float | None = None  # vLLM
    mem_fraction_static: float | None = None  # SGLang
    free_gpu_memory_fraction: float | None = None  # TRT-LLM
    dp: int = 1  # SGLang DP attention size
    swa_full_tokens_ratio: float = 0.8  # SGLang hybrid SWA pool
    max_num_seqs: int = 1024  # vLLM 0.33 H100 default (profile run, logits)


@dataclass(frozen=True, kw_only=True)
class Request:
    """One capacity question, independent of the engine."""

    model: ModelConfig
    tp: int = 1
    pp: int = 1
    dcp: int = 1
    kv_dtype: str = "auto"
    max_model_len: int
    gpu_name: str | None = None  # picks vLLM's attention backend (H100 when None)
    settings: Settings = field(default_factory=Settings)
    overrides: Overrides | None = None
    quant_group: int = DEFAULT_QUANT_GROUP  # int8/int4 KV: elements per fp16 scale
    state_dtype: str = "auto"  # linear/Mamba conv states and, by default, recurrent ones (vLLM mamba_cache_dtype)
    ssm_state_dtype: str = "auto"  # recurrent states (vLLM mamba_ssm_cache_dtype; auto: the config's own)


@dataclass(frozen=True, kw_only=True)
class GroupRow:
    """One kind of layer as the engine caches it (size's layer group plus blocks)."""

    kind: str
    num_layers: int
    num_layers_per_gpu: int
    engine_groups: int  # vLLM KV-cache groups holding this kind (padding included)
    block_size: int
    page_bytes_per_layer: int  # one block of one layer on one GPU (0 = not paged)
    blocks_per_request: int  # per engine group, for one max_model_len request
    tokens_reserved_per_request: int


@dataclass(frozen=True, kw_only=True)
class EnginePlan:
    engine: str
    version: str  # the release whose defaults and rules this profile follows
    kv_dtype: str
    block_size: int  # 0: contiguous (hf)
    page_bytes: int  # one block of every KV layer on the most loaded GPU
    num_blocks: int | None
    kv_tokens: int  # what the engine logs as its KV size in tokens
    max_concurrency: float | None  # what the engine logs for max_model_len (None: it logs none)
    requests_at_max_len: float  # max_model_len requests that fit at once (for fit)
    reserve_bytes_per_request: int  # per GPU: what admission sets aside for one request
    steady_bytes_per_request: int  # per GPU: what a max_model_len request actually holds
    groups: tuple[GroupRow, ...]
    notes: tuple[str, ...] = ()
    explain: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BudgetSteps:
    """KV memory per GPU and the arithmetic that produced it (for --explain)."""

    kv_budget_bytes: int
    lines: tuple[str, ...]


def kv_stages(budgets: tuple[int, ...], stage_bytes: list[int], what: str) -> list[tuple[int, int]]:
    """(budget, bytes) of the PP stages that hold any KV; a stage caching nothing limits nothing."""
    pairs = [(b, c) for b, c in zip(budgets, stage_bytes, strict=True) if c > 0]
    if not pairs:
        raise InputError(f"no KV cache to plan: {what} is 0 on every PP stage (no attention layers, or windows "
                         "that keep no token)")
    return pairs


class Engine(Protocol):
    name: str
    version: str  # the release whose rules and defaults the profile follows
    supports_dcp: bool

    def policy(self, request: Request) -> LayoutPolicy: ...

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps: ...

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan: ...
