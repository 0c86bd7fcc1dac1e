"""The normalized model: what kvplan knows about a checkpoint once its config is read.

Built only by ``kvplan.config.hf.normalize`` (validated there); frozen and hashable so the
formulas can cache per-model work.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from kvplan.dtypes import canonical_dtype
from kvplan.errors import InputError
from kvplan.memo import IdentityCache
from kvplan.records import Record
from kvplan.specs import LayerSpec, LinearState

SERVED_DTYPES = ("bf16", "fp16", "fp32")
_ABSENT = object()  # a field neither in the config nor defaulted: the caller's default
# ModelConfig.field by model object and name: raw is never changed once the model is built (a changed config is a
# new model: dataclasses.replace), so a field read once is read again from here
_FIELDS: IdentityCache[Any] = IdentityCache(maxsize=256)


class ModelConfig(Record):
    """A model's config.json, normalized: the fields kvplan sizes from, whatever the architecture spells them."""

    model_id: str
    source: str  # the file read
    model_type: str | None
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    hidden_size: int
    layer_kinds: tuple[str, ...]  # full, sliding, chunked, linear or none per layer (MLA layers are "full")
    layer_specs: tuple[LayerSpec, ...]  # the model's own caches, one spec per decoder layer, unsharded
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    kv_lora_rank: int | None = None  # set: attention layers are MLA
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    mla_v_head_dim: int | None = None  # V width of the decompressed (HF) view of MLA
    linear: LinearState | None = None  # the state of the linear-attention / Mamba layers, unsharded
    dtype: str = "bf16"  # resolved like vLLM's dtype=auto: fp32 checkpoints run in bf16
    kv_cache_dtype: str | None = None  # the checkpoint's KV-cache quantization, what KV dtype "auto" takes
    max_model_len: int | None = None
    num_nextn_predict_layers: int = 0
    notes: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __hash__(self) -> int:
        # Layouts are cached per model: hash the identity fields only (equal models hash equal; a rare
        # collision falls back to the full __eq__), not every layer spec on every lookup.
        return hash((self.model_id, self.source, self.dtype, self.kv_cache_dtype, self.num_layers, self.max_model_len))

    def field(self, name: str, default: Any = None) -> Any:
        """A config field the KV model does not normalize (vocab_size, intermediate_size, ...), through
        the alias table: the first key present, else its class default (config.defaults), else `default`."""
        found = _FIELDS.get(self, name, lambda: self._field(name))  # a capacity reads a few fields many times
        return default if found is _ABSENT else found

    def _field(self, name: str) -> Any:
        from kvplan.config.aliases import WEIGHT_DEFAULTS, WEIGHT_FIELDS  # the weights path only, not `size`'s
        from kvplan.config.defaults import omitted_default

        for key in WEIGHT_FIELDS[name]:
            if self.raw.get(key) is not None:
                return self.raw[key]
        found = omitted_default(self.raw, WEIGHT_FIELDS[name], name=name, hand=WEIGHT_DEFAULTS)
        return _ABSENT if found is None else found.value

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def name(self) -> str:
        return self.model_id


def with_dtype(model: ModelConfig, dtype: str) -> ModelConfig:
    """vLLM's (and SGLang's) --dtype: `auto` keeps the config's (fp32 served as bf16, as model_dtype says);
    bfloat16/float16/float32 (half, float) replace it for the weights stored whole and for KV dtype auto."""
    key = dtype.strip().lower()
    if key == "auto":
        return model
    canonical = canonical_dtype(key)
    if canonical not in SERVED_DTYPES:
        raise InputError(f"unknown dtype {dtype!r}; choose one of: auto, bfloat16, float16, float32 "
                         "(or bf16, half, fp16, float, fp32)", arg="dtype")
    notes = tuple(n for n in model.notes if "torch_dtype" not in n and "(dtype=auto)" not in n)
    return dataclasses.replace(model, dtype=canonical, notes=notes)
