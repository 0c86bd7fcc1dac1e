"""KV-cache size of a model for a sequence length, batch, dtype and parallel layout.

``kv_cache()`` is the library's entry point and what ``kvplan size`` prints. The work that does
not depend on seq_len/batch (specs, sharding, per-layer bytes) is a cached ``Layout``; a result
is the layout plus two integers, so sweeping lengths and batches costs a few multiplications.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.formulas.dtypes import DEFAULT_QUANT_GROUP, KvDtype, resolve_kv_dtype
from kvplan.formulas.per_token import kv_bytes_per_token, state_bytes_per_sequence
from kvplan.formulas.sharding import check_parallel, pp_stages, shard_spec
from kvplan.specs import LayerSpec, Overrides, attention_kind, layer_specs, token_limit
from kvplan.units import cdiv

DEFAULT_BLOCK_SIZE = 16  # vLLM CacheConfig.DEFAULT_BLOCK_SIZE
FALLBACK_MAX_MODEL_LEN = 2048  # vLLM's default when a config names no length


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """Identical layers of one model: how much one layer holds, whole and per GPU."""

    spec: LayerSpec
    spec_per_gpu: LayerSpec
    num_layers: int
    bytes_per_token_per_layer: int
    bytes_per_token_per_layer_per_gpu: int
    state_bytes_per_layer: int  # per sequence, linear/Mamba layers
    state_bytes_per_layer_per_gpu: int
    stage_layers: tuple[int, ...]  # layers of this group on each PP stage

    @property
    def token_limit(self) -> int | None:
        return token_limit(self.spec)


@dataclass(frozen=True, slots=True)
class Load:
    """Bytes a set of layers holds for one sequence: full layers, windowed layers, fixed state."""

    full_bytes_per_token: int
    windowed: tuple[tuple[int, int], ...]  # (window tokens, bytes per token)
    state_bytes: int

    def bytes_per_token(self) -> int:
        return self.full_bytes_per_token + sum(b for _, b in self.windowed)

    def sequence_bytes(self, tokens: int, block_size: int = 0) -> int:
        """full × t + Σ window bytes × min(t, W) + state, each rounded up to blocks if paged."""
        if block_size:
            full = self.full_bytes_per_token * (-(-tokens // block_size) * block_size)
            windows = sum(b * (-(-min(tokens, w) // block_size) * block_size) for w, b in self.windowed)
        else:
            full = self.full_bytes_per_token * tokens
            windows = sum(b * min(tokens, w) for w, b in self.windowed) if self.windowed else 0
        return full + windows + self.state_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Everything about a cache that does not depend on seq_len or batch."""

    model: ModelConfig
    specs: tuple[LayerSpec, ...]
    attention: str
    kv_dtype: KvDtype
    state_dtype: KvDtype
    tp: int
    pp: int
    dcp: int
    block_size: int
    groups: tuple[Group, ...]
    whole: Load  # the unsharded model
    stages: tuple[Load, ...]  # one GPU of each PP stage

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp


def _load(groups: tuple[Group, ...], counts: list[int], per_gpu: bool) -> Load:
    full, windowed, state = 0, [], 0
    for group, count in zip(groups, counts, strict=True):
        per_token = group.bytes_per_token_per_layer_per_gpu if per_gpu else group.bytes_per_token_per_layer
        state += count * (group.state_bytes_per_layer_per_gpu if per_gpu else group.state_bytes_per_layer)
        if group.token_limit is None:
            full += count * per_token
        elif per_token:
            windowed.append((group.token_limit, count * per_token))
    return Load(full, tuple(windowed), state)


@lru_cache(maxsize=4096)
def build_layout(model: ModelConfig, *, tp: int = 1, pp: int = 1, dcp: int = 1, kv_dtype: str = "auto",
                 block_size: int = DEFAULT_BLOCK_SIZE, quant_group: int = DEFAULT_QUANT_GROUP,
                 overrides: Overrides | None = None, state_dtype: str = "auto") -> Layout:
    """Specs -> groups of identical layers -> per-GPU loads of every PP stage.

    `state_dtype`: linear-attention/Mamba state (vLLM's mamba_ssm_cache_dtype; auto = the model dtype).
    """
    if block_size < 0:
        raise InputError(f"--block-size must be 0 (no paging) or positive, got {block_size}")
    specs = layer_specs(model, overrides)
    check_parallel(specs, model.num_attention_heads, tp, pp, dcp)
    dtype = resolve_kv_dtype(kv_dtype, model.dtype, quant_group)
    state = resolve_kv_dtype(state_dtype, model.dtype)
    stage_counts = [Counter(stage) for stage in pp_stages(specs, pp)]
    groups = tuple(_group(spec, count, tp, dtype, state, [c[spec] for c in stage_counts])
                   for spec, count in Counter(specs).items())
    return Layout(
        model=model, specs=specs, attention=attention_kind(specs, model.num_attention_heads),
        kv_dtype=dtype, state_dtype=state, tp=tp, pp=pp, dcp=dcp, block_size=block_size, groups=groups,
        whole=_load(groups, [g.num_layers for g in groups], per_gpu=False),
        stages=tuple(_load(groups, [g.stage_layers[s] for g in groups], per_gpu=True) for s in range(pp)),
    )


def _group(spec: LayerSpec, count: int, tp: int, dtype: KvDtype, state_dtype: KvDtype,
           stage_layers: list[int]) -> Group:
    per_gpu = shard_spec(spec, tp)
    return Group(
        spec=spec, spec_per_gpu=per_gpu, num_layers=count,
        bytes_per_token_per_layer=kv_bytes_per_token(spec, dtype),
        bytes_per_token_per_layer_per_gpu=kv_bytes_per_token(per_gpu, dtype),
        state_bytes_per_layer=state_bytes_per_sequence(spec, state_dtype),
        state_bytes_per_layer_per_gpu=state_bytes_per_sequence(per_gpu, state_dtype),
        stage_layers=tuple(stage_layers),
    )


class KvCacheResult(NamedTuple):
    """KV cache of `batch` sequences of `seq_len` tokens under a layout. Bytes are exact ints.

    An immutable NamedTuple rather than a dataclass: creating one is twice as fast, and sweeps
    create millions.

    ``*_per_gpu`` values are those of the most loaded GPU (the heaviest PP stage); with DCP a GPU
    holds cdiv(seq_len, dcp) tokens of each sequence. ``total_bytes_all_gpus`` counts replicas.
    """

    layout: Layout
    seq_len: int
    batch: int
    notes: tuple[str, ...] = ()

    @property
    def model(self) -> ModelConfig:
        return self.layout.model

    @property
    def tokens_per_gpu(self) -> int:
        return cdiv(self.seq_len, self.layout.dcp)

    @property
    def heaviest_stage(self) -> int:
        stages, tokens = self.layout.stages, self.tokens_per_gpu
        if len(stages) == 1:
            return 0
        return max(range(len(stages)), key=lambda s: (stages[s].sequence_bytes(tokens), -s))

    @property
    def gpu_load(self) -> Load:
        return self.layout.stages[self.heaviest_stage]

    @property
    def bytes_per_token(self) -> int:
        return self.layout.whole.bytes_per_token()

    @property
    def bytes_per_token_per_gpu(self) -> int:
        """A token's bytes on the most loaded GPU (with DCP, averaged over the dcp ranks)."""
        return cdiv(self.gpu_load.bytes_per_token(), self.layout.dcp)

    @property
    def bytes_per_sequence(self) -> int:
        return self.layout.whole.sequence_bytes(self.seq_len)

    @property
    def bytes_per_sequence_per_gpu(self) -> int:
        stages, dcp = self.layout.stages, self.layout.dcp
        tokens = self.seq_len if dcp == 1 else -(-self.seq_len // dcp)
        if len(stages) == 1:
            return stages[0].sequence_bytes(tokens)
        return self.gpu_load.sequence_bytes(tokens)

    @property
    def bytes_per_sequence_paged(self) -> int:
        return self.layout.whole.sequence_bytes(self.seq_len, self.layout.block_size)

    @property
    def bytes_per_sequence_paged_per_gpu(self) -> int:
        """The GPU most loaded once pages are rounded up: with windows shorter than a block, not
        always the stage heaviest in exact bytes."""
        stages, tokens, block_size = self.layout.stages, self.tokens_per_gpu, self.layout.block_size
        return max(stage.sequence_bytes(tokens, block_size) for stage in stages)

    @property
    def total_bytes(self) -> int:
        return self.batch * self.bytes_per_sequence

    @property
    def total_bytes_per_gpu(self) -> int:
        return self.batch * self.bytes_per_sequence_per_gpu

    @property
    def total_bytes_paged(self) -> int:
        return self.batch * self.bytes_per_sequence_paged

    @property
    def total_bytes_paged_per_gpu(self) -> int:
        return self.batch * self.bytes_per_sequence_paged_per_gpu

    @property
    def total_bytes_all_gpus(self) -> int:
        """Σ over every GPU: tp/dcp rank groups per stage, each holding whole sequences."""
        ranks = self.layout.tp // self.layout.dcp
        return self.batch * ranks * sum(stage.sequence_bytes(self.seq_len) for stage in self.layout.stages)


def kv_cache(model: ModelConfig | str, *, tp: int = 1, pp: int = 1, dcp: int = 1, seq_len: int | None = None,
             batch: int = 1, kv_dtype: str = "auto", block_size: int = DEFAULT_BLOCK_SIZE,
             quant_group: int = DEFAULT_QUANT_GROUP, overrides: Overrides | None = None,
             state_dtype: str = "auto") -> KvCacheResult:
    """KV cache of `batch` sequences of `seq_len` tokens (default: the model's max length).

    Hot path (capacity sweeps call it millions of times): one dict lookup for the cached layout,
    a few comparisons, one tuple.
    """
    if isinstance(model, str):  # checked here, not in as_model: this is the hot path
        from kvplan.config import load_model

        model = load_model(model)
    try:
        layout = model.__dict__["_layouts"][(tp, pp, dcp, kv_dtype, block_size, quant_group, overrides, state_dtype)]
    except KeyError:
        layout = _cache_layout(model, (tp, pp, dcp, kv_dtype, block_size, quant_group, overrides, state_dtype))
    max_len = model.max_model_len
    if seq_len is None or seq_len <= 0 or batch <= 0 or (max_len and seq_len > max_len) or not max_len:
        return _checked_result(layout, seq_len, batch)
    return KvCacheResult(layout, seq_len, batch, model.notes)


def _cache_layout(model: ModelConfig, key: tuple[int, int, int, str, int, int, Overrides | None, str]) -> Layout:
    tp, pp, dcp, kv_dtype, block_size, quant_group, overrides, state_dtype = key
    layout = build_layout(model, tp=tp, pp=pp, dcp=dcp, kv_dtype=kv_dtype, block_size=block_size,
                          quant_group=quant_group, overrides=overrides, state_dtype=state_dtype)
    layouts = model.__dict__.setdefault("_layouts", {})
    if len(layouts) > 1024:
        layouts.clear()
    layouts[key] = layout
    return layout


def _checked_result(layout: Layout, seq_len: int | None, batch: int) -> KvCacheResult:
    """The slow path: default length, bad values, and the warnings that go with them."""
    model, notes = layout.model, layout.model.notes
    if seq_len is None:
        seq_len = model.max_model_len or FALLBACK_MAX_MODEL_LEN
        if not model.max_model_len:
            notes += (f"config names no max length; using {seq_len} tokens (vLLM's fallback)",)
    if seq_len <= 0 or batch <= 0:
        raise InputError(f"seq_len and batch must be positive, got seq_len={seq_len}, batch={batch}")
    if model.max_model_len and seq_len > model.max_model_len:
        notes += (f"warning: seq_len {seq_len:,} exceeds the model's max length {model.max_model_len:,}",)
    return KvCacheResult(layout, seq_len, batch, notes)
