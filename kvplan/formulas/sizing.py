"""KV-cache size of a model for a sequence length, batch, dtype and parallel layout.

``kv_cache()`` is the library's entry point and what ``kvplan size`` prints. The work that does
not depend on the length or the batch (specs, sharding, per-layer bytes) is a cached ``Layout``
(``kvplan.formulas.layout``); a result is the layout plus two integers, so sweeping lengths and
batches costs a few multiplications.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from kvplan.config.model import ModelConfig
from kvplan.formulas.layout import Layout, Load, build_layout
from kvplan.formulas.request import FALLBACK_MAX_MODEL_LEN, CacheRequest, cache_request
from kvplan.units import cdiv


class KvCacheResult(NamedTuple):
    """KV cache of `batch` sequences of `max_model_len` tokens under a layout. Bytes are exact ints.

    An immutable NamedTuple rather than a dataclass: creating one is twice as fast, and sweeps
    create millions.

    ``*_per_gpu`` values are those of the most loaded GPU (the heaviest PP stage); with DCP a GPU
    holds cdiv(max_model_len, dcp) tokens of each sequence. ``total_bytes_all_gpus`` counts replicas.
    """

    layout: Layout
    max_model_len: int  # tokens per sequence
    batch: int
    notes: tuple[str, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """The notes that warn (each without its "warning: " prefix)."""
        return tuple(n.removeprefix("warning: ") for n in self.notes if n.startswith("warning:"))

    @property
    def model(self) -> ModelConfig:
        return self.layout.model

    @property
    def tokens_per_gpu(self) -> int:
        dcp = self.layout.dcp
        return self.max_model_len if dcp == 1 else cdiv(self.max_model_len, dcp)

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
        return self.layout.whole.sequence_bytes(self.max_model_len)

    @property
    def bytes_per_sequence_per_gpu(self) -> int:
        stages = self.layout.stages
        if len(stages) == 1:
            return stages[0].sequence_bytes(self.tokens_per_gpu)
        return self.gpu_load.sequence_bytes(self.tokens_per_gpu)

    @property
    def bytes_per_sequence_paged(self) -> int:
        return self.layout.whole.sequence_bytes(self.max_model_len, self.layout.block_size)

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
        return self.batch * ranks * sum(stage.sequence_bytes(self.max_model_len) for stage in self.layout.stages)


def kv_cache(model: ModelConfig | str, request: CacheRequest | None = None, **fields: Any) -> KvCacheResult:
    """KV cache of `batch` sequences of `max_model_len` tokens (default: the model's max length).

    The question is a ``CacheRequest``, or its fields as keywords (``kv_cache(m, tp=2, max_model_len=32768)``).
    """
    if isinstance(model, str):
        from kvplan.config import load_model

        model = load_model(model)
    request = cache_request(request, **fields)
    seen = _BY_IDENTITY.get((id(model), id(request)))
    if seen is not None and seen[0] is model and seen[1] is request:  # the same objects asked again: no hashing
        return seen[2]
    if len(_BY_IDENTITY) >= 4096:
        _BY_IDENTITY.clear()
    result = _sized(model, request)
    _BY_IDENTITY[(id(model), id(request))] = (model, request, result)  # held: their ids stay theirs
    return result


_BY_IDENTITY: dict[tuple[int, int], tuple[ModelConfig, CacheRequest, KvCacheResult]] = {}


@lru_cache(maxsize=4096)
def _sized(model: ModelConfig, request: CacheRequest) -> KvCacheResult:
    """One answer per frozen (model, request): a loop asking again is a dictionary look-up."""
    layout = build_layout(model, request)
    length, most = request.max_model_len, model.max_model_len
    if length and most and length <= most:  # the hot path: a length within the model's
        return KvCacheResult(layout, length, request.batch, model.notes)
    return KvCacheResult(layout, request.length(model), request.batch, _length_notes(model, length))


def _length_notes(model: ModelConfig, asked: int | None) -> tuple[str, ...]:
    """The model's notes, and what the length given (or not) adds to them."""
    if asked is None and not model.max_model_len:
        return (*model.notes, f"config names no max length; using {FALLBACK_MAX_MODEL_LEN} tokens (vLLM's fallback)")
    if asked and model.max_model_len and asked > model.max_model_len:
        return (*model.notes, f"warning: max_model_len {asked:,} exceeds the model's max length "
                              f"{model.max_model_len:,}")
    return model.notes
