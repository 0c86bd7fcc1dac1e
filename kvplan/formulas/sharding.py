"""Tensor, pipeline and decode-context parallelism: which part of the cache each GPU holds.

- TP splits KV heads. ``"floor"`` (vLLM ``LlamaAttention``, SGLang): max(1, heads // tp) per rank,
  so heads are replicated once tp > heads, and tp must divide the heads or be a multiple of them.
  ``"ceil"`` (TensorRT-LLM ``KVCacheManager``): ceil(heads / tp). MLA's single latent and the
  sparse-attention indexer key are replicated on every rank, as are DeepSeek-V4's latents, indexer keys and
  compressor states (every spec sets ``max_tp_shards=1``, vllm/models/deepseek_v4/attention.py:860-930). Linear/Mamba state splits by heads and
  conv channels; Mamba-2's B/C groups split too, or, a single group, are replicated.
- PP splits layers as vLLM's ``get_pp_indices`` (vllm/distributed/utils.py): L // pp each, the
  remainder one each to the stages before the last.
- DCP stripes a sequence's tokens over dcp ranks that would otherwise hold the same heads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from kvplan.errors import ShardingError
from kvplan.specs import (
    REPLICATED_PARTS,
    AttnSpec,
    Composite,
    CompressedMLA,
    CompressorState,
    LayerSpec,
    LinearState,
    MLAAttn,
    NoKV,
    Part,
    SlidingMLA,
    parts,
)
from kvplan.units import cdiv

HeadSplit = Literal["floor", "ceil"]
HEADED = (AttnSpec, MLAAttn, CompressedMLA, SlidingMLA)  # attention whose query heads TP splits
WINDOWED_STATE = (SlidingMLA, CompressorState)  # DeepSeek-V4's sliding caches (vLLM SlidingWindowMLASpec)


def kv_heads_per_rank(num_kv_heads: int, tp: int, split: HeadSplit = "floor") -> int:
    """floor: max(1, num_kv_heads // tp), tp dividing the heads or a multiple of them; ceil: cdiv."""
    if split == "ceil":
        return cdiv(num_kv_heads, tp)
    if num_kv_heads >= tp:
        if num_kv_heads % tp:
            raise ShardingError(f"tp {tp} does not divide the {num_kv_heads} KV heads; use a divisor of {num_kv_heads}")
        return num_kv_heads // tp
    if tp % num_kv_heads:
        raise ShardingError(f"tp {tp} is not a multiple of the {num_kv_heads} KV heads, so they cannot be replicated "
                            "evenly")
    return 1


def replication(spec: LayerSpec, tp: int) -> int:
    """How many TP ranks hold the same KV data of this layer (1 = no duplication)."""
    if isinstance(spec, Composite):
        return min((replication(p, tp) for p in spec.parts), default=1)
    if isinstance(spec, REPLICATED_PARTS):
        return tp
    if isinstance(spec, AttnSpec):
        return max(1, tp // spec.num_kv_heads)
    return 1


def mamba_groups_per_rank(num_groups: int, tp: int) -> int:
    """Mamba-2 B/C groups on one rank: groups // tp, or the one group replicated (vLLM MambaMixer2
    asserts `n_groups % tp == 0 or n_groups == 1`, vllm/model_executor/layers/mamba/mamba_mixer2.py:316-322;
    the shapes in mamba_utils.py:185-211 replicate a single group to every rank)."""
    if num_groups % tp == 0:
        return num_groups // tp
    if num_groups == 1:
        return 1
    raise ShardingError(f"tp {tp} does not divide the Mamba-2 state's {num_groups} groups (n_groups), and vLLM "
                        f"replicates only a single group; use tp dividing {num_groups}", arg="tp")


def _shard_state(spec: LinearState, tp: int) -> LinearState:
    if spec.num_state_heads % tp or spec.conv_channels % tp:
        raise ShardingError(f"tp {tp} does not divide the linear-attention state "
                            f"({spec.num_state_heads} heads, {spec.conv_channels} conv channels)", arg="tp")
    groups = mamba_groups_per_rank(spec.num_groups, tp) if spec.num_groups else 0
    return replace(spec, num_state_heads=spec.num_state_heads // tp, conv_channels=spec.conv_channels // tp,
                   num_groups=groups)


def _shard_part(spec: Part, tp: int, split: HeadSplit) -> Part:
    if isinstance(spec, REPLICATED_PARTS):
        return spec
    if isinstance(spec, AttnSpec):
        return replace(spec, num_kv_heads=kv_heads_per_rank(spec.num_kv_heads, tp, split))
    return _shard_state(spec, tp)


def shard_spec(spec: LayerSpec, tp: int, split: HeadSplit = "floor") -> LayerSpec:
    """The per-rank spec of a layer under tensor parallelism."""
    if tp == 1 or isinstance(spec, NoKV):
        return spec
    if isinstance(spec, Composite):
        return Composite(parts=tuple(_shard_part(p, tp, split) for p in spec.parts))
    return _shard_part(spec, tp, split)


def pp_layer_counts(num_layers: int, pp: int) -> tuple[int, ...]:
    """vLLM get_pp_indices: L // pp per stage, remainder one each to stages -2, -3, ..."""
    if pp < 1:
        raise ShardingError(f"pp must be at least 1, got {pp}")
    if pp > num_layers:
        raise ShardingError(f"pp {pp} is larger than the {num_layers} layers")
    counts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        counts[-i] += 1
    return tuple(counts)


def pp_ranges(num_layers: int, pp: int) -> tuple[range, ...]:
    """The layer indices of each pipeline stage."""
    stages, start = [], 0
    for count in pp_layer_counts(num_layers, pp):
        stages.append(range(start, start + count))
        start += count
    return tuple(stages)


def check_parallel(specs: tuple[LayerSpec, ...], num_attention_heads: int, tp: int, pp: int, dcp: int) -> None:
    """Refuse layouts the engines refuse, with the reason and what would work (the sizes themselves are checked
    once, by ``kvplan.formulas.request.Parallel``)."""
    if num_attention_heads % tp and any(isinstance(p, HEADED) for s in specs for p in parts(s)):
        divisors = [d for d in range(1, num_attention_heads + 1) if num_attention_heads % d == 0 and d <= 64]
        raise ShardingError(f"tp {tp} does not divide the {num_attention_heads} attention heads; "
                            f"try tp in {divisors}")
    if dcp > 1:
        _check_dcp(specs, tp, dcp)


def _check_dcp(specs: tuple[LayerSpec, ...], tp: int, dcp: int) -> None:
    if tp % dcp:
        raise ShardingError(f"dcp {dcp} must divide tp {tp} (decode context parallel reuses the TP ranks)")
    if any(isinstance(p, WINDOWED_STATE) for s in specs for p in parts(s)):  # vllm/v1/kv_cache_interface.py:946-951
        raise ShardingError("dcp > 1: vLLM plans DeepSeek-V4's sliding latent and compressor states as sliding-window "
                            "caches and asserts 'DCP not support sliding window.' (0.33, "
                            "vllm/v1/kv_cache_interface.py:946-951)", arg="dcp")
    if any(isinstance(p, LinearState) or (isinstance(p, AttnSpec) and p.kind != "full") for s in specs for p in parts(s)):
        raise ShardingError("dcp > 1 is not supported with sliding-window, chunked or linear-attention layers")
    for spec in specs:
        if isinstance(spec, HEADED) and replication(spec, tp) % dcp:
            raise ShardingError(f"dcp {dcp} needs KV heads replicated at least {dcp}× across tp {tp}; "
                                f"here they are replicated {replication(spec, tp)}×")
