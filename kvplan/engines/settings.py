"""Engine knobs, under vLLM's Python names (as ``vllm.LLM(...)`` and ``EngineArgs`` take them) where vLLM has
the knob, each engine's own knobs in its own frozen object. Every object checks itself at construction, so
``Settings(vllm=VllmSettings(gpu_memory_utilization=5.0))`` is refused by the library with the message the CLI
prints. ``None`` means "the release's default": ``Engine.resolve`` fills it in, in that one place.

``settings_from(values)`` builds the whole tree from flat names (``gpu_memory_utilization=0.9``,
``mem_fraction_static=0.8``, ``max_num_seqs=64``), which is how scripts and the command line give them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from kvplan.errors import InputError
from kvplan.records import Record

EntryPoint = Literal["serve", "llm"]
# How tokens are drafted (vLLM's method names): a separate draft checkpoint, an EAGLE head, an EAGLE-3 head,
# the target's own next-token-prediction layers (DeepSeek-V3 num_nextn_predict_layers), or prompt n-grams.
SPEC_METHODS = ("draft_model", "eagle", "eagle3", "mtp", "ngram")
# vLLM's profile-run sampler paths: PyTorch sort, FlashInfer, vLLM's Triton top-k/top-p (0.17 on), both in two passes
# (0.21 on), and Model Runner V2's default pass (fp32 + Gumbel noise until 0.27, bf16 logits only 0.28-0.32).
SAMPLER_PATHS = ("sort", "flashinfer", "triton", "flashinfer+triton", "gumbel", "bf16")
MOE_BACKENDS = ("marlin", "triton", "flashinfer_trtllm", "deepgemm")  # vLLM MXFP4 MoE layouts kvplan sizes


def _choose(obj: object, name: str, allowed: tuple[object, ...]) -> None:
    value = getattr(obj, name)
    if value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(str(a) for a in allowed if a)}, got {value!r}", arg=name)


def _fraction(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1):
        raise InputError(f"{name} must be in (0, 1], got {value}", arg=name)


def _positive(obj: object, *names: str, zero: bool = False) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is None:
            continue
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf")
                or (value == 0 and not zero)):  # nan passed `value < 0` (a ValueError in round() later)
            raise InputError(f"{name} must be {'0 or more' if zero else 'positive'}, got {value}", arg=name)


class VllmSettings(Record):
    """vLLM's own knobs."""

    gpu_memory_utilization: float | None = None  # fraction of total memory (None: the release row's, filled in by
    # resolve: 0.92 from 0.20, 0.9 before)
    entry_point: EntryPoint = "serve"  # `vllm serve` or the `LLM` class (their scheduler defaults differ)
    async_scheduling: bool | None = None  # None: the release's default (on where it has async scheduling): one more
    # batch in flight
    in_flight_batches: int | None = None  # batches a request may have scheduled (None: the release's, pp + async
    # where it counts them; before: 1)
    prefix_caching: bool | None = None  # None: default (on; off attention-free, hybrids before vLLM 0.28)
    hybrid_kv_cache_manager: bool = True  # --disable-hybrid-kv-cache-manager turns it off
    legacy_token_log: bool | None = None  # None: the release's (its older rows: tokens = num_blocks // groups × block)
    sampler: str | None = None  # top-k/top-p path of the profile run (SAMPLER_PATHS; default: the release's)
    moe_backend: str | None = None  # MXFP4 experts: MOE_BACKENDS (weights are laid out per backend)

    def __post_init__(self) -> None:
        _fraction(self, "gpu_memory_utilization")
        _choose(self, "entry_point", ("serve", "llm"))
        _choose(self, "sampler", (None, *SAMPLER_PATHS))
        _choose(self, "moe_backend", (None, *MOE_BACKENDS))
        _positive(self, "in_flight_batches")


class SglangSettings(Record):
    """SGLang's own knobs."""

    mem_fraction_static: float | None = None  # fraction of free memory, weights included (default: by GPU)
    chunked_prefill_size: int | None = None  # by GPU memory class (its memory reserve follows it)
    cuda_graph_max_bs: int | None = None  # decode CUDA-graph max batch size (default by GPU class; 0.5.3 on it is
    # in the default fraction's reserve)
    max_total_tokens: int | None = None  # --max-total-tokens: caps the pool's N
    swa_full_tokens_ratio: float = 0.8  # hybrid SWA pool: full-attention tokens / sliding tokens
    hicache_ratio: float | None = None  # --enable-hierarchical-cache: host pool = ratio × device pool (2.0)

    def __post_init__(self) -> None:
        _fraction(self, "mem_fraction_static")
        _fraction(self, "swa_full_tokens_ratio")
        _positive(self, "chunked_prefill_size", "cuda_graph_max_bs", "max_total_tokens", "hicache_ratio")


class TrtllmSettings(Record):
    """TensorRT-LLM's own knobs."""

    free_gpu_memory_fraction: float | None = None  # KvCacheConfig: fraction of memory free after load (0.9)
    max_tokens: int | None = None  # KvCacheConfig.max_tokens: caps the cache's tokens (trtllm-bench sets it)

    def __post_init__(self) -> None:
        _fraction(self, "free_gpu_memory_fraction")
        _positive(self, "max_tokens")


# Each engine's knobs left to the release: frozen values, shared as every Settings' default (a default factory would
# have the records compile Settings' __init__ from source).
NO_VLLM, NO_SGLANG, NO_TRTLLM = VllmSettings(), SglangSettings(), TrtllmSettings()


class Settings(Record):
    """Knobs every engine reads under one name, and each engine's own (``vllm``, ``sglang``, ``trtllm``)."""

    max_num_batched_tokens: int | None = None  # vLLM (TRT-LLM max_num_tokens): by GPU class and entry point
    max_num_seqs: int | None = None  # vLLM: by GPU class and entry point (profile-run sampler rows)
    enforce_eager: bool = False  # vLLM/TRT-LLM: no CUDA graphs; the profile forward runs eagerly
    max_lora_rank: int | None = None  # --max-lora-rank: LoRA slots of this rank are allocated with the weights
    max_loras: int | None = None  # vLLM --max-loras (1) / SGLang --max-loras-per-batch (8): adapter slots
    lora_target_modules: tuple[str, ...] | None = None  # None: every linear module (vLLM's default)
    max_cpu_loras: int | None = None  # vLLM: adapters cached in host memory (default: max_loras)
    speculative_model: str | None = None  # a draft checkpoint (draft_model, eagle, eagle3)
    speculative_method: str | None = None  # one of SPEC_METHODS (None: draft_model with a model, mtp without)
    num_speculative_tokens: int | None = None  # K: tokens drafted per step (default: the draft's layers, else 1)
    limit_mm_per_prompt: int | None = None  # vLLM items of a modality per prompt (999); 0: text only
    cpu_offload_bytes: int = 0  # vLLM --cpu-offload-gb: weights kept in host memory, per GPU
    kv_offloading_bytes: int | None = None  # host KV tier: vLLM --kv-offloading-size (all ranks), SGLang
    # --hicache-size and TRT-LLM host_cache_size (per rank)
    lmcache_cpu_bytes: int | None = None  # LMCache max_local_cpu_size, allocated by every rank
    mooncake_segment_bytes: int | None = None  # SGLang HiCache's Mooncake store: global_segment_size (split over TP)
    role: str | None = None  # prefill or decode: one instance of a disaggregated deployment (None: both in one)
    vllm: VllmSettings = NO_VLLM
    sglang: SglangSettings = NO_SGLANG
    trtllm: TrtllmSettings = NO_TRTLLM

    def __post_init__(self) -> None:
        _choose(self, "speculative_method", (None, *SPEC_METHODS))
        _choose(self, "role", (None, "prefill", "decode"))
        _positive(self, "max_num_batched_tokens", "max_num_seqs", "max_lora_rank", "max_loras", "max_cpu_loras",
                  "num_speculative_tokens", "kv_offloading_bytes", "lmcache_cpu_bytes", "mooncake_segment_bytes")
        _positive(self, "limit_mm_per_prompt", "cpu_offload_bytes", zero=True)

    @classmethod
    def of(cls, **values: Any) -> Settings:
        """Settings from flat knob names: ``Settings.of(gpu_memory_utilization=0.9, max_num_seqs=64)``."""
        return settings_from(values)

    def items(self) -> Iterator[tuple[str, Any]]:
        """Every knob by its flat name (the engines' own included), as settings_from takes them."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if dataclasses.is_dataclass(value):
                yield from ((g.name, getattr(value, g.name)) for g in dataclasses.fields(value))
            else:
                yield f.name, value


NO_SETTINGS = Settings()  # every knob left to the release (a value: shared as every question's default)
ENGINE_PARTS: dict[str, type[Any]] = {"vllm": VllmSettings, "sglang": SglangSettings, "trtllm": TrtllmSettings}
SETTINGS_CLASSES: tuple[type[Any], ...] = (Settings, *ENGINE_PARTS.values())


_NAMES: dict[type, frozenset[str]] = {}


def _names(cls: type) -> frozenset[str]:
    """The knobs `cls` holds (once a class: settings_from asks for each part's on every call)."""
    found = _NAMES.get(cls)
    if found is None:
        found = _NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls)) - set(ENGINE_PARTS)
    return found


SETTING_NAMES: frozenset[str] = frozenset().union(*(_names(cls) for cls in SETTINGS_CLASSES))


def settings_from(values: Mapping[str, Any], base: Settings | None = None) -> Settings:
    """Settings from flat knob names (each routed to the object that has it), on top of `base`."""
    unknown = sorted(set(values) - SETTING_NAMES)
    if unknown:
        raise InputError(f"unknown engine setting {unknown[0]!r}", arg=unknown[0])
    base = base or NO_SETTINGS
    parts = {part: _part(getattr(base, part), {k: v for k, v in values.items() if k in _names(cls)})
             for part, cls in ENGINE_PARTS.items()}
    shared = {k: v for k, v in values.items() if k in _names(Settings)}
    return dataclasses.replace(base, **shared, **parts)


def _part(base: Any, values: Mapping[str, Any]) -> Any:
    """An engine's own knobs with `values` changed (the same object where none is)."""
    return dataclasses.replace(base, **values) if values else base

