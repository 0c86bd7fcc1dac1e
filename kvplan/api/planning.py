"""The public planning functions: ``kv_cache`` (``size``), ``capacity``, ``capacity_all`` and ``fit``.

Each declares the keywords of its command (`kvplan size`, `capacity`, `fit`), typed and with the command's
defaults, and takes them under the CLI's other spellings and in the CLI's value forms (``kvplan.api.keywords``).
The parameters are described in ``kvplan.api.docs``, added to each docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kvplan.api import values as v
from kvplan.api.docs import documented
from kvplan.api.keywords import public
from kvplan.api.request import cache_question, load, question
from kvplan.config import load_model
from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.formulas.sizing import kv_cache as size_of

if TYPE_CHECKING:
    from kvplan.engines import Settings
    from kvplan.formulas import CacheRequest, KvCacheResult
    from kvplan.planning.capacity import CapacityResult
    from kvplan.planning.fit import FitResult
    from kvplan.planning.request import CapacityRequest, Memory
    from kvplan.workflows.diff import Diff

Int = int | str  # 2 or "2"
OptInt = int | str | None
Length = int | str | None  # 32768 or "32k"
Size = int | str | None  # bytes or "80GiB"
Budget = int | str | Sequence[int | str] | None  # one per PP stage
Fraction = float | str | None
Names = str | Sequence[str]  # "vllm,sglang" or ["vllm", "sglang"]


def _plain_size(args: tuple[Any, ...], given: dict[str, Any]) -> KvCacheResult | None:
    """kv_cache of a model (a loaded one, or an id resolved now) with plain keywords only: straight to the formulas,
    and the same config asked the same keywords again (values and their types) a dictionary look-up (None: not such
    a call)."""
    if len(args) != 1:
        return None  # a request given, or the model as a keyword
    model, kinds = args[0], tuple(map(type, given.values()))
    if type(model) is str:
        if (tuple(given), kinds) not in _PLAIN_CALLS and not _plain(given):
            return None  # a keyword to read or refuse first
        if not model.strip():
            return None  # refused as load refuses it
        model = load_model(model)  # resolved on every call: an edited or shadowing file is seen
    elif type(model) is not ModelConfig:
        return None
    key = (id(model), tuple(given.items()), kinds)
    seen = _SEEN.get(key)
    if seen is not None and seen[0] is model:
        return seen[1]
    if not _plain(given):
        return None
    if len(_SEEN) >= 4096:
        _SEEN.clear()
    answer = size_of(model, **given)
    _SEEN[key] = (model, answer)  # the model held: its id stays its own while the entry lives
    return answer


_PLAIN = {**dict.fromkeys(("tp", "pp", "dcp", "dp", "ep", "max_model_len", "batch", "block_size", "quant_group"), int),
          **dict.fromkeys(("kv_dtype", "state_dtype", "ssm_state_dtype"), str)}
_SEEN: dict[tuple[Any, ...], tuple[ModelConfig, KvCacheResult]] = {}
_PLAIN_CALLS: set[tuple[tuple[str, ...], tuple[type, ...]]] = set()  # keyword names and value types seen plain


def _plain(given: dict[str, Any]) -> bool:
    """Every keyword one the formulas take as it is (an int or a str where it is one): nothing to read."""
    if not all(type(x) is _PLAIN.get(k) for k, x in given.items()):
        return False
    if len(_PLAIN_CALLS) < 1024:
        _PLAIN_CALLS.add((tuple(given), tuple(map(type, given.values()))))
    return True


@documented
@public(fast=_plain_size)
def kv_cache(model: str | ModelConfig, request: CacheRequest | None = None, *, revision: str | None = None,
             dtype: str = "auto", tp: Int = 1, pp: Int = 1, dcp: Int = 1, max_model_len: Length = None,
             batch: Int = "1", kv_dtype: str = "auto", block_size: OptInt = None, quant_group: Int = 8,
             state_dtype: str = "auto", ssm_state_dtype: str = "auto", attention: str | None = None,
             kv_heads: OptInt = None, layer_types: str | None = None, window: Length = None,
             dp: Int = 1, ep: Int = 1) -> KvCacheResult:
    """KV cache of `batch` sequences of `max_model_len` tokens (default: the model's max length): per token, per
    sequence and per GPU, as `kvplan size` answers. The question is a ``CacheRequest`` (`request`), and/or its
    fields as keywords (``kv_cache("Qwen/Qwen3-8B", tp=2, max_model_len="32k")``)."""
    values = locals()
    return size_of(load(model, revision, dtype, request=False), cache_question(kv_cache, request, values))


size = kv_cache


@documented
@public()
def capacity(model: str | ModelConfig | CapacityRequest, *, engine: str = "vllm", revision: str | None = None,
             dtype: str = "auto", tp: Int = 1, pp: Int = 1, dcp: Int = 1, dp: Int = 1, ep: Int = 1,
             max_model_len: Length = None, kv_dtype: str = "auto", block_size: OptInt = None, quant_group: Int = 8,
             state_dtype: str = "auto", ssm_state_dtype: str = "auto", attention: str | None = None,
             kv_heads: OptInt = None, layer_types: str | None = None, window: Length = None,
             max_num_batched_tokens: Length = None, max_num_seqs: OptInt = None, enforce_eager: bool = False,
             gpu_memory_utilization: Fraction = None, entry_point: str = "serve", sampler: str | None = None,
             moe_backend: str | None = None, disable_hybrid_kv_cache_manager: bool = False,
             no_async_scheduling: bool = False, mem_fraction_static: Fraction = None,
             free_gpu_memory_fraction: Fraction = None, speculative_model: str | None = None,
             speculative_method: str | None = None, num_speculative_tokens: OptInt = None,
             max_lora_rank: OptInt = None, max_loras: OptInt = None, lora_target_modules: Names | None = None,
             max_cpu_loras: OptInt = None, limit_mm_per_prompt: OptInt = None, cpu_offload_bytes: Size = None,
             kv_offloading_bytes: Size = None, hicache_ratio: Fraction = None, lmcache_cpu_bytes: Size = None,
             mooncake_segment_bytes: Size = None, role: str | None = None, host_memory_bytes: Size = None,
             gpu: str | None = None, gpu_memory_bytes: Size = None, kv_budget_bytes: Budget = None,
             overhead_bytes: Size = None, non_torch_bytes: Size = None, weights_dtype: str | None = None,
             quantization: str | None = None, cache: CacheRequest | None = None, settings: Settings | None = None,
             memory: Memory | None = None) -> CapacityResult:
    """KV capacity of a model under one engine release on one GPU type, as `kvplan capacity` answers: the budget
    term by term, blocks, tokens, concurrency and the verdict. A refusal is part of the answer (``.verdict``,
    ``.refusal``; ``.raise_for_refusal()`` raises it). Several engines or KV dtypes: ``capacity_all``."""
    from kvplan.engines import get_engine
    from kvplan.planning.capacity import plan_capacity

    values = locals()
    if len(v.names("engine", engine)) > 1 or engine.lower() == "all":
        raise InputError(f"capacity asks one engine, got {engine!r}: capacity_all(model, engine={engine!r}) "
                         "answers each", arg="engine")
    return plan_capacity(question(capacity, model, values), get_engine(engine))


@documented
@public({"engine": v.names, "kv_dtype": v.names})
def capacity_all(model: str | ModelConfig | CapacityRequest, *, engine: Names = "all", revision: str | None = None,
                 dtype: str = "auto", tp: Int = 1, pp: Int = 1, dcp: Int = 1, dp: Int = 1, ep: Int = 1,
                 max_model_len: Length = None, kv_dtype: Names = "auto", block_size: OptInt = None,
                 quant_group: Int = 8, state_dtype: str = "auto", ssm_state_dtype: str = "auto",
                 attention: str | None = None, kv_heads: OptInt = None, layer_types: str | None = None,
                 window: Length = None, max_num_batched_tokens: Length = None, max_num_seqs: OptInt = None,
                 enforce_eager: bool = False, gpu_memory_utilization: Fraction = None, entry_point: str = "serve",
                 sampler: str | None = None, moe_backend: str | None = None,
                 disable_hybrid_kv_cache_manager: bool = False, no_async_scheduling: bool = False,
                 mem_fraction_static: Fraction = None, free_gpu_memory_fraction: Fraction = None,
                 speculative_model: str | None = None, speculative_method: str | None = None,
                 num_speculative_tokens: OptInt = None, max_lora_rank: OptInt = None, max_loras: OptInt = None,
                 lora_target_modules: Names | None = None, max_cpu_loras: OptInt = None,
                 limit_mm_per_prompt: OptInt = None, cpu_offload_bytes: Size = None, kv_offloading_bytes: Size = None,
                 hicache_ratio: Fraction = None, lmcache_cpu_bytes: Size = None,
                 mooncake_segment_bytes: Size = None, role: str | None = None, host_memory_bytes: Size = None,
                 gpu: str | None = None,
                 gpu_memory_bytes: Size = None, kv_budget_bytes: Budget = None, overhead_bytes: Size = None,
                 non_torch_bytes: Size = None, weights_dtype: str | None = None, quantization: str | None = None,
                 cache: CacheRequest | None = None, settings: Settings | None = None,
                 memory: Memory | None = None) -> list[CapacityResult]:
    """`capacity` for each engine (a list, a comma list, or "all": every engine's newest release) and each KV
    dtype, side by side: one answer per (KV dtype, engine); an engine that fails answers with its error
    (``.verdict == "error"``) instead of failing them all."""
    from kvplan.engines import ENGINE_NAMES
    from kvplan.planning.capacity import capacity_all as each

    values = locals()
    engines = tuple(dict.fromkeys(e for name in v.names("engine", engine)
                                  for e in (ENGINE_NAMES if name.lower() == "all" else (name,))))
    base = question(capacity_all, model, {k: x for k, x in values.items() if k != "kv_dtype"})
    return [r for d in v.names("kv_dtype", kv_dtype) for r in each(base.with_cache(kv_dtype=d), engines=engines)]


@documented
@public({"gpu": v.optional(v.names), "kv_dtype": v.optional(v.names)})
def fit(model: str | ModelConfig | CapacityRequest, *, batch: Int = "1", max_model_len: Length = None,
        gpu: Names | None = None, engine: str = "vllm", kv_dtype: Names | None = None, prices: Mapping[str, float]
        | str | None = None, max_replicas: OptInt = None, gpus_per_node: OptInt = 8, max_gpus: OptInt = None,
        nodes: OptInt = None, revision: str | None = None, dtype: str = "auto", dcp: Int = 1,
        block_size: OptInt = None, quant_group: Int = 8, state_dtype: str = "auto", ssm_state_dtype: str = "auto",
        attention: str | None = None, kv_heads: OptInt = None, layer_types: str | None = None, window: Length = None,
        max_num_batched_tokens: Length = None, max_num_seqs: OptInt = None, enforce_eager: bool = False,
        gpu_memory_utilization: Fraction = None, entry_point: str = "serve", sampler: str | None = None,
        moe_backend: str | None = None, disable_hybrid_kv_cache_manager: bool = False,
        no_async_scheduling: bool = False, mem_fraction_static: Fraction = None,
        free_gpu_memory_fraction: Fraction = None, speculative_model: str | None = None,
        speculative_method: str | None = None, num_speculative_tokens: OptInt = None, max_lora_rank: OptInt = None,
        max_loras: OptInt = None, lora_target_modules: Names | None = None, max_cpu_loras: OptInt = None,
        limit_mm_per_prompt: OptInt = None, cpu_offload_bytes: Size = None, kv_offloading_bytes: Size = None,
        hicache_ratio: Fraction = None, lmcache_cpu_bytes: Size = None,
        mooncake_segment_bytes: Size = None, role: str | None = None, host_memory_bytes: Size = None,
        gpu_memory_bytes: Size = None,
        kv_budget_bytes: Budget = None, overhead_bytes: Size = None, non_torch_bytes: Size = None,
        weights_dtype: str | None = None, quantization: str | None = None, disaggregated: bool = False,
        pd_ratio: str = "1:1", progress: Callable[[int, int], None] | None = None) -> FitResult:
    """The cheapest setups (GPU type, replicas × TP × PP, KV dtype) that serve `batch` requests (also
    `concurrency`) of `max_model_len` tokens, as `kvplan fit` ranks them. ``.verdict`` is "fits" or "refuses"."""
    from kvplan.planning.fit import fit as search

    values = locals()
    asked = question(fit, model, {k: x for k, x in values.items() if k not in _FIT_SEARCH})
    if asked.cache.max_model_len is None:
        raise InputError("fit needs max_model_len: the tokens of each request (32k)", arg="max_model_len")
    searched: dict[str, Any] = dict(
        concurrency=v.count("batch", batch), gpu=gpu, kv_dtype=kv_dtype, max_gpus=_int(max_gpus), nodes=_int(nodes),
        gpus_per_node=8 if gpus_per_node is None else int(gpus_per_node), max_replicas=_int(max_replicas),
        prices=_prices(prices))
    if disaggregated:
        return _pools(asked, pd_ratio, engine, searched)
    return search(asked, engine=engine, progress=progress, **searched)


_FIT_SEARCH = ("batch", "gpu", "kv_dtype", "disaggregated", "pd_ratio")


def _pools(asked: CapacityRequest, pd_ratio: str, engine: str, searched: dict[str, Any]) -> FitResult:
    """fit(disaggregated=True): the decode side's search with its prefill and decode pools in ``.disaggregated``."""
    import dataclasses

    from kvplan.planning.disaggregated import disaggregated as pools
    from kvplan.planning.disaggregated import parse_ratio

    found = pools(asked, ratio=parse_ratio(str(pd_ratio)), engine=engine, **searched)
    return dataclasses.replace(found.fitted, disaggregated=found)


@documented
@public({"engine": v.optional(v.names), "kv_dtype": v.optional(v.names)})
def diff(model: str | ModelConfig | CapacityRequest, *, engine: Names | None = None, kv_dtype: Names | None = None,
         revision: str | None = None, dtype: str = "auto", tp: Int = 1, pp: Int = 1, dcp: Int = 1, dp: Int = 1,
         ep: Int = 1, max_model_len: Length = None, block_size: OptInt = None, quant_group: Int = 8,
         state_dtype: str = "auto", ssm_state_dtype: str = "auto", attention: str | None = None,
         kv_heads: OptInt = None, layer_types: str | None = None, window: Length = None,
         max_num_batched_tokens: Length = None, max_num_seqs: OptInt = None, enforce_eager: bool = False,
         gpu_memory_utilization: Fraction = None, entry_point: str = "serve", sampler: str | None = None,
         moe_backend: str | None = None, disable_hybrid_kv_cache_manager: bool = False,
         no_async_scheduling: bool = False, mem_fraction_static: Fraction = None,
         free_gpu_memory_fraction: Fraction = None, speculative_model: str | None = None,
         speculative_method: str | None = None, num_speculative_tokens: OptInt = None, max_lora_rank: OptInt = None,
         max_loras: OptInt = None, lora_target_modules: Names | None = None, max_cpu_loras: OptInt = None,
         limit_mm_per_prompt: OptInt = None, cpu_offload_bytes: Size = None, kv_offloading_bytes: Size = None,
         hicache_ratio: Fraction = None, lmcache_cpu_bytes: Size = None,
         mooncake_segment_bytes: Size = None, role: str | None = None, host_memory_bytes: Size = None,
         gpu: str | None = None,
         gpu_memory_bytes: Size = None, kv_budget_bytes: Budget = None, overhead_bytes: Size = None,
         non_torch_bytes: Size = None, weights_dtype: str | None = None, quantization: str | None = None) -> Diff:
    """What changes between two setups of one question, as `kvplan diff` answers: two releases or engines
    (`engine`: two, or one for both sides) and/or two KV dtypes (`kv_dtype`: two, or one for both)."""
    from kvplan.workflows.diff import diff as compare_sides

    values = locals()
    if not engine and not kv_dtype:
        raise InputError("diff compares two setups: give two engines (engine=['vllm@0.25', 'vllm@0.29']) or two "
                         "KV dtypes", arg="engine")
    asked = question(diff, model, {k: x for k, x in values.items() if k not in ("engine", "kv_dtype")})
    return compare_sides(asked, engines=_pair(engine, "vllm"), kv_dtypes=_pair(kv_dtype, asked.cache.kv_dtype))


def _pair(names: Names | None, default: str) -> tuple[str, str]:
    items = tuple(names or (default,))
    return (items[0], items[-1]) if len(items) <= 2 else (items[0], items[1])


def _int(value: OptInt) -> int | None:
    return None if value is None else int(value)


def _prices(prices: Mapping[str, float] | str | None) -> dict[str, float] | None:
    """A price table: a mapping, or the CLI's text (H100=2.49,H200=3.5)."""
    if prices is None:
        return None
    if isinstance(prices, str):
        from kvplan.planning.prices import parse_prices

        return parse_prices(prices)
    if not isinstance(prices, Mapping):
        raise v.wrong("prices", prices, "a mapping of GPU to price per hour, or the text 'H100=2.49,H200=3.5'")
    return dict(prices)
