"""What every engine profile shares: the question asked, as it is asked and as the engine resolves it, and the
answer's shape. The engine's side of the conversation is ``kvplan.engines.protocol.Engine``; what a release
subtracts from GPU memory, as data, is ``kvplan.engines.rules``.

A ``Request`` is one capacity question as an engine sees it; ``Engine.resolve`` answers it with a ``Resolved``
request, the release's defaults filled in, once per question: what ``budget_rules``, ``kv_budget`` and ``plan``
take.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from kvplan.config.model import ModelConfig
from kvplan.engines.rules import (
    AfterKv,
    BudgetRules,
    BudgetSteps,
    BudgetTerm,
    CommRule,
    EncoderRule,
    LoadRule,
    LoraRule,
    ProfileRun,
    TermKind,
    WeightSplit,
    term_bytes,
)
from kvplan.engines.settings import NO_SETTINGS, Settings
from kvplan.errors import InputError
from kvplan.formulas.request import CacheRequest, Parallel
from kvplan.records import Record
from kvplan.specs import LayerSpec

if TYPE_CHECKING:
    from kvplan.config.mtp import MtpModules  # imported only where a model has MTP modules

__all__ = ["AfterKv", "BudgetRules", "BudgetSteps", "BudgetTerm", "CommRule", "Device", "Draft", "EncoderRule",
           "EnginePlan", "GroupRow", "LoadRule", "LoraRule", "ProfileRun", "Refusal", "Request", "Resolved", "TermKind",
           "WeightSplit", "kv_stages", "no_data_parallel", "resolved", "term_bytes"]


class Device(Record):
    """The GPU a capacity question is asked for, as the engines read it."""

    name: str | None  # catalog name (H100-SXM); None: only the memory is known
    memory_bytes: int  # torch total_memory (vLLM total_gpu_memory)
    smi_memory_mib: int | None = None  # nvidia-smi memory.total (SGLang sizes its reserve from it)
    compute_capability: tuple[int, int] | None = None  # as the engine reads it (vLLM: CUDA's, gfx950 as (9, 5))
    assumed: bool = False  # kvplan's default GPU (no GPU named): what depends on its type is an assumption


class Draft(Record):
    """What speculative decoding adds to the KV cache, as every engine sees it (built by
    ``kvplan.planning.extras.speculative``; engines never build layouts)."""

    method: str  # one of SPEC_METHODS
    num_speculative_tokens: int  # K
    model: ModelConfig | None  # the draft checkpoint; None: layers of the target's checkpoint (mtp), or none (ngram)
    tp: int  # the draft's TP size (the engines run it at the target's)
    specs: tuple[LayerSpec, ...] = ()  # the draft's KV layers, whole model
    specs_per_gpu: tuple[LayerSpec, ...] = ()  # the same layers on one GPU (they sit on the last PP stage)
    mtp: MtpModules | None = None  # method mtp: the target's modules the drafter builds (kvplan.config.mtp)

    @property
    def num_layers(self) -> int:
        return len(self.specs)

    @property
    def model_id(self) -> str | None:
        return self.model.model_id if self.model else None


class Request(Record):
    """One capacity question as an engine sees it: the model, the cache asked (its length resolved), the
    knobs, the GPU and what speculative decoding adds. Engines read the cache's fields they need
    (``request.cache.kv_dtype``); the layout knobs reach ``build_layout`` whole."""

    model: ModelConfig
    cache: CacheRequest  # the cache asked (max_model_len None: the model's, else vLLM's fallback)
    settings: Settings = NO_SETTINGS
    device: Device | None = None  # the GPU's memory (scheduler defaults, budgets); None: an H100's defaults
    draft: Draft | None = None  # speculative decoding (None: off)
    asked: Settings | None = None  # the knobs as asked, before the release's defaults (None: not known)

    @classmethod
    def of(cls, model: ModelConfig, *, settings: Settings | None = None, device: Device | None = None,
           draft: Draft | None = None, **cache: Any) -> Request:
        """A request from the cache's fields as keywords (`tp=`, `max_model_len=`, ...; the length defaults to
        the model's)."""
        return cls(model=model, cache=CacheRequest(**cache), settings=settings or Settings(), device=device,
                   draft=draft)

    @property
    def parallel(self) -> Parallel:
        return self.cache.parallel

    @property
    def tp(self) -> int:
        return self.cache.tp

    @property
    def pp(self) -> int:
        return self.cache.pp

    @property
    def dcp(self) -> int:
        return self.cache.dcp

    @property
    def dp(self) -> int:
        return self.cache.dp

    @property
    def ep(self) -> int:
        return self.cache.ep

    @property
    def max_model_len(self) -> int:
        return self.cache.length(self.model)

    @property
    def gpu_name(self) -> str | None:
        """The GPU's catalog name: it picks vLLM's attention backend (H100 when None)."""
        return self.device.name if self.device else None


class Resolved(Request):
    """A request as an engine release resolved it (``Engine.resolve``): its checks passed and every knob it leaves
    to the release (``None`` in ``Settings``) filled in with the release's default for this GPU and model.
    ``budget_rules``, ``kv_budget``, ``no_memory`` and ``plan`` take one, so a question is resolved once."""


def resolved(request: Request) -> Resolved:
    """`request` marked as resolved (an engine's ``resolve`` returns this once its defaults are filled in)."""
    if isinstance(request, Resolved):
        return request
    return Resolved(**{f.name: getattr(request, f.name) for f in fields(Request)})


class GroupRow(Record):
    """One kind of layer as the engine caches it (size's layer group plus blocks)."""

    kind: str
    num_layers: int
    num_layers_per_gpu: int
    engine_groups: int  # vLLM KV-cache groups holding this kind (padding included)
    block_size: int
    page_bytes_per_layer: int  # one block of one layer on one GPU (0 = not paged)
    blocks_per_request: int  # per engine group, for one max_model_len request
    tokens_reserved_per_request: int


class Refusal(Record):
    """An engine's "no", as it says it: its message with its numbers, and its own estimate of the
    longest max_model_len that would fit (None where the engine gives none)."""

    message: str
    estimated_max_model_len: int | None = None
    stage: int | None = None  # the PP stage that refused (None: every stage, or no stages)


class EnginePlan(Record):
    """An engine's answer: its cache as the engine logs it, per GPU, and whether it starts."""

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
    log_lines: tuple[str, ...] = ()  # what the engine logs about its cache (vLLM), refusal included
    refusal: Refusal | None = None  # the engine refuses to start with this memory (the numbers above still hold)
    lookahead_tokens_per_request: int = 0  # KV slots a running request holds for drafted tokens (speculative)
    # per GPU: what the engine's start-up check counts for one max_model_len request where that is not the
    # reserve (vLLM up to 0.13 count each layer unpadded, 0.14-0.18 a hybrid's first KV-cache group only); None: the
    # reserve
    check_bytes_per_request: int | None = None
    pools: int = 1  # KV pools in one replica, each of kv_tokens (vLLM data parallel, SGLang DP attention: dp)
    gpus: int | None = None  # GPUs of one replica (None: tp × pp; vLLM data parallel: dp × tp × pp)

    @property
    def start_check_bytes(self) -> int:
        """Per GPU: what the start-up check counts for one max_model_len request."""
        return self.reserve_bytes_per_request if self.check_bytes_per_request is None else self.check_bytes_per_request


def kv_stages(budgets: tuple[int, ...], stage_bytes: list[int], what: str) -> list[tuple[int, int]]:
    """(budget, bytes) of the PP stages that hold any KV; a stage caching nothing limits nothing."""
    pairs = [(b, c) for b, c in zip(budgets, stage_bytes, strict=True) if c > 0]
    if not pairs:
        raise InputError(f"no KV cache to plan: {what} is 0 on every PP stage (no attention layers, or windows "
                         "that keep no token)")
    return pairs


def no_data_parallel(request: Request, why: str) -> None:
    """An engine kvplan plans without data or expert parallelism: dp or ep above 1 is refused, saying why."""
    for name in ("dp", "ep"):
        if getattr(request.cache, name) > 1:
            raise InputError(f"{name} {getattr(request.cache, name)}: {why}", arg=name)
