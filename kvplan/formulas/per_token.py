"""Bytes per token (attention caches) and per sequence (fixed states), one layer at a time.

A composite layer (``kvplan.specs.Composite``) is the sum of its parts. Each cache's bytes come with
the formula that gives them, in words and with the values put in (``PartCost``): one code path picks the
dtype (``latent_dtype``, ``StateDtypes``) and computes both, so ``--explain`` cannot drift from the number.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from kvplan.dtypes import (
    KvDtype,
    attention_bytes_per_token,
    attention_formula,
    element_text,
    mla_bytes_per_token,
    mla_formula,
    resolve_kv_dtype,
)
from kvplan.errors import InputError
from kvplan.records import Record
from kvplan.specs import (
    AttnSpec,
    Composite,
    CompressedMLA,
    CompressorState,
    CrossAttn,
    IndexerCache,
    LayerSpec,
    LinearState,
    MLAAttn,
    NoKV,
    Part,
    SlidingMLA,
    parts,
)
from kvplan.units import cdiv

NO_TOKEN_CACHE = "0 (no per-token cache)"
# vLLM's fp8_ds_mla cell of a DeepSeek-V4 latent (head_dim 512, 64 of them rotary): 448 fp8 NoPE values + 64 bf16
# RoPE values (128 B) + 8 bytes of UE8M0 scales = 584 B (vllm/models/deepseek_v4/attention.py:880-882,
# v1/attention/backends/mla/sparse_swa.py:86). vLLM defines the packing for head_dim 512 only.
DSV4_PACKED_BYTES, DSV4_PACKED_HEAD_DIM = 584, 512
FP32_BYTES = 4  # DeepSeek-V4 compressor states are fp32 whatever the KV dtype (compressor.py:171)


class PartCost(NamedTuple):
    """The bytes of one cache (per token, or per sequence for a state) and the formula that gives them."""

    bytes: int
    formula: str


class StateDtypes(Record, kw_only=False):
    """Element types of linear/Mamba states: vLLM's mamba_cache_dtype (`conv`: the conv state and any
    single-tensor state) and mamba_ssm_cache_dtype (`ssm`: the recurrent state; None = auto)."""

    conv: KvDtype
    ssm: KvDtype | None = None

    def recurrent(self, spec: LinearState) -> KvDtype:
        """vLLM MambaStateDtypeCalculator (vllm/model_executor/layers/mamba/mamba_utils.py:53-149): a
        single-tensor state (lightning) takes the conv dtype; auto is the config's or the layer's own
        default (Qwen3.5, Nemotron-H, KDA fp32), else the conv dtype."""
        if spec.mixer == "lightning":
            return self.conv
        if self.ssm is not None:
            return self.ssm
        return resolve_kv_dtype(spec.ssm_dtype, self.conv.name) if spec.ssm_dtype else self.conv


def state_dtypes(state_dtype: str, ssm_state_dtype: str, model_dtype: str) -> StateDtypes:
    """The user's state dtype names (auto or a dtype), resolved; an unknown name is an InputError naming its
    argument (state_dtype, ssm_state_dtype)."""
    conv = resolve_kv_dtype(state_dtype, model_dtype, arg="state_dtype")
    if ssm_state_dtype.strip().lower() == "auto":
        return StateDtypes(conv)
    return StateDtypes(conv, resolve_kv_dtype(ssm_state_dtype, conv.name, arg="ssm_state_dtype"))


def latent_dtype(spec: MLAAttn, dtype: KvDtype) -> KvDtype:
    """The dtype an MLA latent is stored in. Sparse MLA on Hopper: fp8 is served by FLASHMLA_SPARSE,
    which stores the fp8_ds_mla layout (vllm/model_executor/layers/attention/mla_attention.py:359-375;
    fp8_e4m3 goes to FLASHINFER_MLA_SPARSE_SM90, plain fp8: vllm/platforms/cuda.py:139-155)."""
    return resolve_kv_dtype("fp8_ds_mla", "bf16") if spec.sparse and dtype.name == "fp8" else dtype


def dsv4_latent_bytes(head_dim: int, dtype: KvDtype) -> int:
    """One DeepSeek-V4 latent (compressed or sliding): vLLM's default CUDA backends store every fp8 name as the
    packed fp8_ds_mla cell, bf16 as plain rows (vllm/models/deepseek_v4/attention.py:94-126)."""
    if dtype.name.startswith("fp8"):
        if head_dim != DSV4_PACKED_HEAD_DIM:
            raise InputError(f"vLLM packs DeepSeek-V4 latents as fp8_ds_mla for head_dim {DSV4_PACKED_HEAD_DIM} "
                             f"only; this model's is {head_dim}", arg="kv_dtype")
        return DSV4_PACKED_BYTES
    if dtype.is_scaled:
        raise InputError(f"DeepSeek-V4 latents are stored as bf16 rows or fp8_ds_mla, not {dtype.name}",
                         arg="kv_dtype")
    return head_dim * dtype.element_bits // 8


def tokens_per_state(spec: Part) -> int:
    """Tokens one stored entry covers: `ratio` for DeepSeek-V4's compressed latent and indexer key, else 1."""
    return spec.ratio if isinstance(spec, (CompressedMLA, IndexerCache)) else 1


def entry_cost(spec: Part, dtype: KvDtype) -> PartCost:
    """Bytes of one stored entry of a cache, with its formula: per token, or per `tokens_per_state` tokens."""
    per = f" per {tokens_per_state(spec)} tokens" if tokens_per_state(spec) > 1 else ""
    match spec:
        case CompressedMLA() | SlidingMLA():
            return PartCost(dsv4_latent_bytes(spec.head_dim, dtype),
                            f"one {spec.head_dim}-wide latent{per} ({dtype.name}; fp8 is the 584-byte fp8_ds_mla cell)")
        case CompressorState():
            return PartCost(spec.width * FP32_BYTES, f"2 × {spec.coff} × {spec.head_dim} fp32 values × 4 B "
                                                     f"(compressor state of the last {spec.window} tokens)")
        case IndexerCache():
            scales = f" + {spec.head_dim}/128 × 4 B scales" if spec.scales else ""
            return PartCost(spec.bytes_per_state, f"{spec.head_dim} × {spec.key_bits // 8} B key{scales}{per} "
                                                  "(indexer key, any KV dtype)")
    return part_cost(spec, dtype)


def part_bytes_per_state(spec: Part, dtype: KvDtype) -> int:
    return entry_cost(spec, dtype).bytes


def part_cost(spec: Part, dtype: KvDtype) -> PartCost:
    """`_part_cost`, remembered per (spec, dtype): both are frozen values, and a model's layers repeat a few specs
    (32 layers of one AttnSpec), asked again by every capacity and fit setup."""
    try:
        return _remembered_cost(spec, dtype)
    except TypeError:  # a spec holding an unhashable value: computed each time
        return _part_cost(spec, dtype)


def _part_cost(spec: Part, dtype: KvDtype) -> PartCost:
    """Bytes one decoder token adds to one cache, with its formula: K + V heads, the MLA latent (in the dtype
    latent_dtype picks), the indexer key; 0 for fixed states and for cross-attention (its tokens are the
    encoder's). A compressed cache (one entry per `ratio` tokens) counts cdiv(entry bytes, ratio): its exact bytes
    are per entry (``entry_cost``), and the per-token figure rounds up where the ratio does not divide them."""
    match spec:
        case CrossAttn():
            return PartCost(0, f"0 per decoder token (K/V of {spec.encoder_tokens:,} encoder tokens per sequence)")
        case LinearState():
            return PartCost(0, NO_TOKEN_CACHE)
        case AttnSpec():
            heads = (spec.num_kv_heads, spec.head_dim, spec.v_head_dim, dtype)
            return PartCost(attention_bytes_per_token(*heads), attention_formula(*heads))
        case MLAAttn():
            latent = (spec.kv_lora_rank, spec.qk_rope_head_dim, latent_dtype(spec, dtype))
            return PartCost(mla_bytes_per_token(*latent), mla_formula(*latent))
        case IndexerCache() | CompressedMLA() | SlidingMLA() | CompressorState():
            entry, ratio = entry_cost(spec, dtype), tokens_per_state(spec)
            return entry if ratio == 1 else PartCost(cdiv(entry.bytes, ratio), f"{entry.formula} / {ratio}, rounded up")
    raise TypeError(f"not a layer spec: {spec!r}")


_remembered_cost = lru_cache(maxsize=4096)(_part_cost)


def part_bytes_per_token(spec: Part, dtype: KvDtype) -> int:
    return part_cost(spec, dtype).bytes


def layer_cost(spec: LayerSpec, dtype: KvDtype) -> PartCost:
    """Bytes one token adds to one decoder layer (all its caches; 0 for state layers), with the formula: a
    composite's parts summed, each labelled with its kind."""
    if isinstance(spec, Composite):
        costs = [(p.kind, part_cost(p, dtype)) for p in spec.parts]
        return PartCost(sum(c.bytes for _, c in costs), " + ".join(f"[{kind}] {c.formula}" for kind, c in costs))
    if isinstance(spec, NoKV):
        return PartCost(0, NO_TOKEN_CACHE)
    return part_cost(spec, dtype)


def kv_bytes_per_token(spec: LayerSpec, dtype: KvDtype) -> int:
    """Bytes one token adds to one decoder layer (all its caches); 0 for state layers."""
    return layer_cost(spec, dtype).bytes


def encoder_bytes_per_token(spec: LayerSpec, dtype: KvDtype) -> int:
    """Bytes per encoder token of a layer's cross-attention caches (Whisper)."""
    return sum(attention_bytes_per_token(p.num_kv_heads, p.head_dim, p.v_head_dim, dtype)
               for p in parts(spec) if isinstance(p, CrossAttn))


def state_cost(spec: LinearState, dtypes: StateDtypes) -> PartCost:
    """A linear/Mamba state per sequence: conv elements × conv bytes + recurrent elements × recurrent bytes."""
    recurrent = dtypes.recurrent(spec)
    return PartCost((spec.conv_elements * dtypes.conv.element_bits + spec.ssm_elements * recurrent.element_bits) // 8,
                    f"{spec.conv_elements:,} conv elements × {element_text(dtypes.conv)} + {spec.num_state_heads} × "
                    f"{spec.state_rows} × {spec.state_cols} recurrent elements × {element_text(recurrent)}")


def part_state_bytes(spec: Part, dtypes: StateDtypes) -> int:
    """A state's bytes per sequence (0 for attention caches)."""
    return state_cost(spec, dtypes).bytes if isinstance(spec, LinearState) else 0


def state_bytes_per_sequence(spec: LayerSpec, dtypes: StateDtypes | KvDtype) -> int:
    """Fixed bytes per sequence of a layer's linear/Mamba states (a KvDtype: one dtype for both)."""
    pair = dtypes if isinstance(dtypes, StateDtypes) else StateDtypes(dtypes, dtypes)
    return sum(part_state_bytes(p, pair) for p in parts(spec))


def page_bytes(spec: LayerSpec, dtype: KvDtype, block_size: int) -> int:
    """One block of one layer: block_size × bytes per token."""
    return block_size * kv_bytes_per_token(spec, dtype)
