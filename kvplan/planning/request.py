"""The capacity question, whole: the model, the cache asked, the engine's knobs and the GPU memory.

``CapacityRequest`` is built once, at the command line's edge or by a script, and passed whole to
``capacity``, ``fit``, the capacity curves, ``sweep``'s engine columns and the report. Every part checks
itself when it is made (``CacheRequest``, ``Settings``, ``Memory``), so a script is refused what the CLI is
refused, with the same message.

``capacity_request(model, **options)`` is the front door's builder: options are the parts' own field names
(``tp=``, ``max_model_len=``, ``gpu=``, ``gpu_memory_utilization=``, ``mem_fraction_static=``, ...), each
routed to the part that has it.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from kvplan.config import as_model
from kvplan.config.model import ModelConfig
from kvplan.engines.settings import NO_SETTINGS, SETTING_NAMES, Settings, settings_from
from kvplan.errors import InputError
from kvplan.formulas.request import NO_REQUEST, CacheRequest
from kvplan.planning.gpus import lookup_gpu
from kvplan.records import Record, materialize
from kvplan.units import GIB, check_memory_size

TIB = 1024 * GIB
MAX_GPU_MEMORY_BYTES = TIB  # one GPU; unified-memory machines (GB10: 128 GB) stay far below


class Memory(Record):
    """What the budget is asked for: a GPU, the weights' format, and the figures that replace estimates."""

    gpu: str | None = None  # catalog name or alias (H100, A100-80G); None: an H100 where one is needed
    gpu_memory_bytes: int | None = None  # the GPU's memory instead of the catalog's
    kv_budget_bytes: tuple[int, ...] | None = None  # KV memory per GPU as the engine logs it: one, or one per stage
    overhead_bytes: int | None = None  # everything but the weights, measured
    non_torch_bytes: int | None = None  # the non-torch terms, measured (vLLM logs them)
    weights_dtype: str | None = None  # what-if weights format (default: the checkpoint's)
    quantization: str | None = None  # vLLM --quantization: the checkpoint's own method, or fp8 quantized at load
    host_memory_bytes: int | None = None  # one node's RAM (--host-mem; None: the GPU's usual server)

    def __post_init__(self) -> None:
        if self.gpu is not None:
            lookup_gpu(self.gpu)
        for name in ("gpu_memory_bytes", "overhead_bytes", "non_torch_bytes", "host_memory_bytes"):
            _check_size(name, getattr(self, name))
        for name in ("gpu_memory_bytes", "host_memory_bytes"):
            if getattr(self, name) == 0:
                raise InputError(f"{name} must be positive, got 0 bytes", arg=name)
        if self.gpu_memory_bytes is not None and self.gpu_memory_bytes > MAX_GPU_MEMORY_BYTES:
            raise InputError(f"gpu_memory_bytes {self.gpu_memory_bytes / TIB:,.2f} TiB: no GPU has more than "
                             f"{MAX_GPU_MEMORY_BYTES // TIB} TiB (the largest have 288 GB); it is one GPU's memory", arg="gpu_memory_bytes")
        if self.kv_budget_bytes is not None:
            if not isinstance(self.kv_budget_bytes, tuple) or not self.kv_budget_bytes:
                raise InputError(f"kv_budget_bytes must be a tuple of sizes (one per PP stage), got "
                                 f"{self.kv_budget_bytes!r}", arg="kv_budget_bytes")
            for value in self.kv_budget_bytes:
                _check_size("kv_budget_bytes", value)
                if value == 0:
                    raise InputError("kv_budget_bytes 0: give the KV memory the engine logs, at least 1 MiB",
                                     arg="kv_budget_bytes")
        if self.weights_dtype is not None and self.quantization is not None:
            raise InputError("give quantization (what vLLM runs) or weights_dtype (a what-if), not both",
                             arg=("quantization", "weights_dtype"))

    def weights_for(self, model: ModelConfig) -> str | None:
        """The weights format the budget counts: the what-if, vLLM's quantization of this model, or None."""
        if self.quantization is None:
            return self.weights_dtype
        from kvplan.planning.weights import weights_for_quantization

        return weights_for_quantization(model, self.quantization)


def _check_size(name: str, value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{name} must be a whole number of bytes, 0 or more, got {value!r}", arg=name)
    check_memory_size(value, str(value), name)


NO_MEMORY = Memory()


class CapacityRequest(Record):
    """One capacity question; ``engine`` and the KV dtype are the only things the commands vary around it."""

    model: ModelConfig
    cache: CacheRequest = NO_REQUEST
    settings: Settings = NO_SETTINGS
    memory: Memory = NO_MEMORY

    def __post_init__(self) -> None:
        if self.cache.block_size == 0:
            raise InputError("block_size must be positive: an engine pages its cache in blocks (0, no paging, is "
                             "kvplan size's)", arg="block_size")
        self.memory.weights_for(self.model)  # a quantization the checkpoint was not saved in: refused here

    @property
    def max_model_len(self) -> int:
        return self.cache.length(self.model)

    def with_cache(self, **changes: Any) -> CapacityRequest:
        """The same question with some cache fields changed (fit's grid: tp, pp, kv_dtype)."""
        return dataclasses.replace(self, cache=dataclasses.replace(self.cache, **changes))

    def on_gpu(self, gpu: str) -> CapacityRequest:
        return dataclasses.replace(self, memory=dataclasses.replace(self.memory, gpu=gpu))


materialize(Memory)  # its fields are read here (a record's fields exist once it is materialized)
CACHE_NAMES = frozenset(f.name for f in dataclasses.fields(CacheRequest))
MEMORY_NAMES = frozenset(f.name for f in dataclasses.fields(Memory))
OPTION_NAMES = CACHE_NAMES | MEMORY_NAMES | SETTING_NAMES


def capacity_request(model: ModelConfig | str | CapacityRequest, *, cache: CacheRequest | None = None,
                     settings: Settings | None = None, memory: Memory | None = None,
                     **options: Any) -> CapacityRequest:
    """A CapacityRequest from its parts and flat option names (the front door: `tp=`, `gpu=`,
    `gpu_memory_utilization=`), or `model`'s request with them changed; options apply on top of the parts."""
    base = model if isinstance(model, CapacityRequest) else CapacityRequest(model=as_model(model))
    if cache or settings or memory:  # else the same request: no copy (a copy validates it again)
        base = dataclasses.replace(base, cache=cache or base.cache, settings=settings or base.settings,
                                   memory=memory or base.memory)
    unknown = sorted(set(options) - OPTION_NAMES)
    if unknown:
        near = difflib.get_close_matches(unknown[0], sorted(OPTION_NAMES), n=1)
        raise InputError(f"unknown option {unknown[0]!r}" + (f"; did you mean {near[0]!r}?" if near else ""),
                         arg=unknown[0])
    budget = options.get("kv_budget_bytes")
    if isinstance(budget, int) and not isinstance(budget, bool):
        options = {**options, "kv_budget_bytes": (budget,)}
    to_cache = {k: v for k, v in options.items() if k in CACHE_NAMES}
    to_memory = {k: v for k, v in options.items() if k in MEMORY_NAMES}
    to_settings = {k: v for k, v in options.items() if k in SETTING_NAMES}
    return dataclasses.replace(
        base, cache=dataclasses.replace(base.cache, **to_cache) if to_cache else base.cache,
        memory=dataclasses.replace(base.memory, **to_memory) if to_memory else base.memory,
        settings=settings_from(to_settings, base.settings) if to_settings else base.settings)
