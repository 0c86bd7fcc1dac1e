"""KV-cache size of a model for a sequence length, batch, dtype and parallel layout.

``kv_cache()`` is the library's entry point and what ``kvplan size`` prints. The work that does
not depend on seq_len/batch (specs, sharding, per-layer bytes) is a cached ``Layout``
(``kvplan.formulas.layout``); a result is the layout plus two integers, so sweeping lengths and
batches costs a few multiplications.
"""

from __future__ import annotations

from typing import NamedTuple

from kvplan.config.model import ModelConfig
from kvplan.dtypes import DEFAULT_QUANT_GROUP
from kvplan.errors import InputError
from kvplan.formulas.layers import Overrides
from kvplan.formulas.layout import DEFAULT_BLOCK_SIZE, Layout, Load, build_layout
from kvplan.units import cdiv

FALLBACK_MAX_MODEL_LEN = 2048  # vLLM's default when a config names no length


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
        dcp = self.layout.dcp
        return self.seq_len if dcp == 1 else cdiv(self.seq_len, dcp)

    @property
    def heaviest_stage(self) -> int:
        return self.layout.heaviest_stage(self.tokens_per_gpu)

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
        stages = self.layout.stages
        if len(stages) == 1:
            return stages[0].sequence_bytes(self.tokens_per_gpu)
        return self.gpu_load.sequence_bytes(self.tokens_per_gpu)

    @property
    def bytes_per_sequence_paged(self) -> int:
        return self.layout.whole.sequence_bytes(self.seq_len, self.layout.block_size)

    @property
    def bytes_per_sequence_paged_per_gpu(self) -> int:
        """The GPU most loaded once pages are rounded up: with windows shorter than a block, not
        always the stage heaviest in exact bytes."""
        return self.layout.sequence_bytes_per_gpu(self.tokens_per_gpu, self.layout.block_size)

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
             state_dtype: str = "auto", ssm_state_dtype: str = "auto") -> KvCacheResult:
    """KV cache of `batch` sequences of `seq_len` tokens (default: the model's max length).

    Hot path (capacity sweeps call it millions of times): one dict lookup for the cached layout,
    a few comparisons, one tuple.
    """
    if isinstance(model, str):  # checked here, not in as_model: this is the hot path
        from kvplan.config import load_model

        model = load_model(model)
    try:
        key = (tp, pp, dcp, kv_dtype, block_size, quant_group, overrides, state_dtype, ssm_state_dtype)
        layout = model.__dict__["_layouts"][key]
    except KeyError:
        layout = _cache_layout(model, key)
    max_len = model.max_model_len
    if seq_len is None or seq_len <= 0 or batch <= 0 or (max_len and seq_len > max_len) or not max_len:
        return _checked_result(layout, seq_len, batch)
    return KvCacheResult(layout, seq_len, batch, model.notes)


def _cache_layout(model: ModelConfig, key: tuple[int, int, int, str, int, int, Overrides | None, str, str]) -> Layout:
    tp, pp, dcp, kv_dtype, block_size, quant_group, overrides, state_dtype, ssm_state_dtype = key
    layout = build_layout(model, tp=tp, pp=pp, dcp=dcp, kv_dtype=kv_dtype, block_size=block_size,
                          quant_group=quant_group, overrides=overrides, state_dtype=state_dtype,
                          ssm_state_dtype=ssm_state_dtype)
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
